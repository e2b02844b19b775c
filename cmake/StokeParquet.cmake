# Parquet: the workers read pages themselves (snappy, zstd, lz4, brotli and zlib decompress
# them); a file's footer, page index and labels are read by Apache Arrow's Parquet reader, built
# into libstoke_parquet.so, which the training process loads the first time it indexes Parquet
# data (data/parquet_facts.hpp). Arrow comes from the pyarrow wheel (Debian 12 does not package
# its C++ library), found through STOKE_PYARROW_PYTHON: setup.sh installs pyarrow into
# build/parquet, the environment the Parquet tests write their files with too.
pkg_check_modules(PARQUET_CODECS REQUIRED IMPORTED_TARGET libzstd liblz4 libbrotlidec snappy)

set(_stoke_default_python "${PROJECT_SOURCE_DIR}/build/parquet/bin/python")
if(NOT EXISTS "${_stoke_default_python}")
  set(_stoke_default_python "python3")
endif()
set(STOKE_PYARROW_PYTHON "${_stoke_default_python}" CACHE STRING
    "The Python whose pyarrow (its C++ headers and libraries) libstoke_parquet builds against")
execute_process(
  COMMAND "${STOKE_PYARROW_PYTHON}" -c
          "import importlib.util; print(importlib.util.find_spec('pyarrow').submodule_search_locations[0])"
  OUTPUT_VARIABLE STOKE_PYARROW_DIR OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _stoke_pyarrow_found ERROR_QUIET)
set(STOKE_WITH_PARQUET OFF)
if(_stoke_pyarrow_found EQUAL 0 AND EXISTS "${STOKE_PYARROW_DIR}/include/parquet/api/reader.h")
  file(GLOB STOKE_ARROW_LIB "${STOKE_PYARROW_DIR}/libarrow.so.[0-9]*")
  file(GLOB STOKE_PARQUET_LIB "${STOKE_PYARROW_DIR}/libparquet.so.[0-9]*")
  list(FILTER STOKE_ARROW_LIB EXCLUDE REGEX "\\.so\\.[0-9]+\\.")
  list(FILTER STOKE_PARQUET_LIB EXCLUDE REGEX "\\.so\\.[0-9]+\\.")
  if(STOKE_ARROW_LIB AND STOKE_PARQUET_LIB)
    set(STOKE_WITH_PARQUET ON)
  endif()
endif()
if(STOKE_WITH_PARQUET)
  message(STATUS "Parquet footers through pyarrow's Arrow: ${STOKE_PYARROW_DIR}")
else()
  message(STATUS "Parquet: no pyarrow with its C++ headers found through ${STOKE_PYARROW_PYTHON} "
                 "(run setup.sh): libstoke_parquet is not built, Parquet data cannot be indexed")
endif()
