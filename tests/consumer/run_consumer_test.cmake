# Installs the build tree into a fresh prefix, builds tests/consumer against it with
# find_package(stoke), runs it, and checks its workers ran from the installed libexec.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
                        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
                        # A sanitizer build's library needs the consumer built the same way.
                        "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
# No environment variable points at the worker: the library must find it by itself.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${WORK_DIR}/build/consumer
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer failed with ${rc}")
endif()
file(REAL_PATH ${prefix} real_prefix)
string(REGEX MATCHALL "worker-exe [^\n]*" exes "${out}")
list(LENGTH exes n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected the two workers to run one executable, saw: ${exes}")
endif()
string(REPLACE "worker-exe " "" exe "${exes}")
string(FIND "${exe}" "${real_prefix}/" at)
if(NOT at EQUAL 0 OR NOT exe MATCHES "/stoke-worker$")
  message(FATAL_ERROR "workers ran ${exe}, not the stoke-worker installed under ${real_prefix}")
endif()
