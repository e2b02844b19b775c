# One tool's usage contract (tools/include/stoke/tools/cli.hpp): --help prints the generated help
# on stdout and exits 0; a misspelled flag, a value out of range and an unknown word each exit 2
# with a message naming what is wrong on stderr.
#
#   cmake -DTOOL=path -DHELP=args -DUNKNOWN=args -DUNKNOWN_MSG=regex -DRANGE=args
#         -DRANGE_MSG=regex [-DWORD=args -DWORD_MSG=regex] -P cli_usage_test.cmake
#
# Arguments are separated by '|' (a ';' would split the -D value in add_test).

function(run_tool args_text out_rc out_stdout out_stderr)
  string(REPLACE "|" ";" args "${args_text}")
  execute_process(COMMAND ${TOOL} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE stdout
                  ERROR_VARIABLE stderr TIMEOUT 60)
  set(${out_rc} "${rc}" PARENT_SCOPE)
  set(${out_stdout} "${stdout}" PARENT_SCOPE)
  set(${out_stderr} "${stderr}" PARENT_SCOPE)
endfunction()

run_tool("${HELP}" rc stdout stderr)
if(NOT rc EQUAL 0 OR NOT stdout MATCHES "Usage: " OR NOT stderr STREQUAL "")
  message(FATAL_ERROR "${TOOL} ${HELP}: exit ${rc}, want 0 and help on stdout:\n${stdout}${stderr}")
endif()

foreach(case UNKNOWN RANGE WORD)
  if(NOT DEFINED ${case})
    continue()
  endif()
  run_tool("${${case}}" rc stdout stderr)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "${TOOL} ${${case}}: exit ${rc}, want 2:\n${stdout}${stderr}")
  endif()
  if(NOT stderr MATCHES "${${case}_MSG}")
    message(FATAL_ERROR "${TOOL} ${${case}}: stderr does not match '${${case}_MSG}':\n${stderr}")
  endif()
  if(NOT stdout STREQUAL "")
    message(FATAL_ERROR "${TOOL} ${${case}}: a usage error still printed on stdout:\n${stdout}")
  endif()
endforeach()
