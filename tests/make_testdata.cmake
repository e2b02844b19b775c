# Creates the test datasets with stoke-mkdata unless they already exist.
if(NOT EXISTS ${OUT}/fashion-png/.done)
  file(REMOVE_RECURSE ${OUT}/fashion-png)
  execute_process(COMMAND ${MKDATA} fashion-mnist --out ${OUT}/fashion-png --limit 1000
                  COMMAND_ERROR_IS_FATAL ANY)
  file(TOUCH ${OUT}/fashion-png/.done)
endif()
if(NOT EXISTS ${OUT}/jpeg/.done)
  file(REMOVE_RECURSE ${OUT}/jpeg)
  execute_process(COMMAND ${MKDATA} jpeg-corpus --out ${OUT}/jpeg --count 96
                  COMMAND_ERROR_IS_FATAL ANY)
  file(TOUCH ${OUT}/jpeg/.done)
endif()
# Camera-sized photographs, as docs/BENCHMARKS.md's big-photo corpus (fewer of them).
if(NOT EXISTS ${OUT}/jpeg-big/.done)
  file(REMOVE_RECURSE ${OUT}/jpeg-big)
  execute_process(COMMAND ${MKDATA} jpeg-corpus --out ${OUT}/jpeg-big --count 26
                          --long-side 1600..2600 --quality 85..95 --progressive 0.1
                          --chroma-422 0.15 --chroma-444 0.15
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(TOUCH ${OUT}/jpeg-big/.done)
endif()
# A COCO detection set of real photographs (bench/make_detection_set.py: scikit-image's bundled
# photographs, from Debian's python3-skimage, written with Pillow).
if(NOT EXISTS ${OUT}/detection/.done)
  file(REMOVE_RECURSE ${OUT}/detection)
  execute_process(COMMAND ${PYTHON} ${SOURCE}/bench/make_detection_set.py --out ${OUT}/detection
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(TOUCH ${OUT}/detection/.done)
endif()
