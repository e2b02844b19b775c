#pragma once
// The one place that turns a CUDA runtime status into an exception. Include only from CUDA-aware
// translation units.

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace stoke::detail {

template <class Exception = std::runtime_error>
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* expr, const char* file,
                                   int line) {
  throw Exception(std::string(file) + ":" + std::to_string(line) + ": " + expr +
                  " failed: " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace stoke::detail

// Evaluates `expr` once; throws Exception("file:line: expr failed: name: text") on error.
#define CUDA_CALL_AS(Exception, expr)                                                              \
  do {                                                                                             \
    const cudaError_t stoke_cuda_status_ = (expr);                                                 \
    if (stoke_cuda_status_ != cudaSuccess) {                                                       \
      ::stoke::detail::throw_cuda_error<Exception>(stoke_cuda_status_, #expr, __FILE__, __LINE__); \
    }                                                                                              \
  } while (0)
// The same with std::runtime_error (kernels, tools).
#define CUDA_CALL(expr) CUDA_CALL_AS(std::runtime_error, expr)
