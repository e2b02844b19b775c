# stoke-bench --json: the last line is one JSON object with the documented fields, and the
# checksum does not depend on the worker count.
foreach(workers 0 2)
  execute_process(COMMAND ${BENCH} --workers ${workers} --epochs 1 --batch 500 --json
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "stoke-bench --workers ${workers} failed (${rc}):\n${out}")
  endif()
  string(STRIP "${out}" out)
  string(REGEX REPLACE ".*\n" "" last "${out}")
  foreach(field samples batches padded skipped skipped_by_reason samples_per_s startup_s
                wait_fraction checksum)
    string(JSON value ERROR_VARIABLE err GET "${last}" ${field})
    if(err)
      message(FATAL_ERROR "field '${field}' missing from the last line: ${last}")
    endif()
  endforeach()
  string(JSON samples GET "${last}" samples)
  string(JSON batches GET "${last}" batches)
  string(JSON padded GET "${last}" padded)
  # Fashion-MNIST train: 60000 samples, batch 500 -> 120 batches, no padding.
  if(NOT samples EQUAL 60000 OR NOT batches EQUAL 120 OR NOT padded EQUAL 0)
    message(FATAL_ERROR "unexpected counts: ${last}")
  endif()
  string(JSON checksum_${workers} GET "${last}" checksum)
endforeach()
if(NOT checksum_0 STREQUAL checksum_2)
  message(FATAL_ERROR "checksum differs: workers=0 ${checksum_0}, workers=2 ${checksum_2}")
endif()
