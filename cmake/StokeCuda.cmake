# Decides whether the CUDA parts are built. AUTO builds them when nvcc is found.
set(STOKE_WITH_CUDA OFF)
if(STOKE_CUDA STREQUAL "ON" OR STOKE_CUDA STREQUAL "AUTO")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(STOKE_WITH_CUDA ON)
  elseif(STOKE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "STOKE_CUDA=ON but no CUDA compiler was found; install the CUDA toolkit "
                        "(nvcc on PATH or CUDACXX) or configure with -DSTOKE_CUDA=AUTO|OFF")
  endif()
elseif(NOT STOKE_CUDA STREQUAL "OFF")
  message(FATAL_ERROR "STOKE_CUDA must be AUTO, ON or OFF (got '${STOKE_CUDA}')")
endif()
if(STOKE_WITH_CUDA)
  # Here, at the top level, so CUDA::cudart_static is visible to every directory.
  find_package(CUDAToolkit REQUIRED)
endif()
message(STATUS "stoke: CUDA parts ${STOKE_WITH_CUDA} (STOKE_CUDA=${STOKE_CUDA})")
