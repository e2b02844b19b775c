# The exact-float rule: the sources listed here compute what a reference computes (torchvision's
# float32 ops, Pillow's C code, numpy's float32, timm's Python doubles, the GPU kernels'
# __fmul_rn/__fadd_rn) and must round every product before the add that follows it, as the
# reference does, or the bytes differ. Compilers fuse a product and a later add into one fused
# multiply-add where the target has FMA (aarch64, -march=native, the AVX2 + FMA loops of
# cpu_features.hpp), GCC even across statements and in ISO mode, so these files are compiled
# with -ffp-contract=off; the adds a reference does fuse are written as std::fma. A file listed
# here gets STOKE_EXACT_FLOAT=1 too, which headers whose inline loops need the rule check
# (augment/pixel_loops.hpp). docs/ARCHITECTURE.md, "Float arithmetic that matches a reference",
# has the reasons file by file.
#
# Included by the top-level CMakeLists.txt after the folders that compile these files. A listed
# file that no longer exists stops the configuration: list the file that took its code instead.
set(STOKE_EXACT_FLOAT_SOURCES
  loader/src/augment/augmix.cpp
  loader/src/augment/geometric_ops.cpp
  loader/src/augment/op_sequence.cpp
  loader/src/augment/photometric_color.cpp
  loader/src/augment/photometric_filters.cpp
  loader/src/augment/pil_ops.cpp
  loader/src/augment/pil_warps.cpp
  loader/src/augment/pixel_loops.cpp
  loader/src/augment/timm_augment.cpp
  loader/src/consumer/batch_mixer.cpp
  kernels/src/erase.cpp
  kernels/src/mix.cpp
  kernels/src/resize.cpp
  tests/kernels/mix_test.cpp)

set(stoke_exact_float_paths "")
foreach(source IN LISTS STOKE_EXACT_FLOAT_SOURCES)
  if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${source})
    message(FATAL_ERROR "cmake/StokeExactFloat.cmake lists ${source}, which does not exist; list "
                        "the files that compute its arithmetic now")
  endif()
  list(APPEND stoke_exact_float_paths ${PROJECT_SOURCE_DIR}/${source})
endforeach()

# Source properties are seen by the targets of the folder that sets them: set them in each
# folder that compiles one of the files.
set(stoke_exact_float_folders ${PROJECT_SOURCE_DIR}/loader ${PROJECT_SOURCE_DIR}/kernels)
if(STOKE_BUILD_TESTS)
  list(APPEND stoke_exact_float_folders ${PROJECT_SOURCE_DIR}/tests)
endif()
if(STOKE_BUILD_FUZZERS)  # the decode fuzzer compiles augment/'s sources itself
  list(APPEND stoke_exact_float_folders ${PROJECT_SOURCE_DIR}/tests/fuzz)
endif()
set_source_files_properties(${stoke_exact_float_paths}
                            DIRECTORY ${stoke_exact_float_folders}
                            PROPERTIES COMPILE_OPTIONS -ffp-contract=off
                                       COMPILE_DEFINITIONS STOKE_EXACT_FLOAT=1)
