#pragma once
// What the trainer's GPU ops (conv.cu, batchnorm.cu, layers.cu: nn_cuda.hpp) share: the launch
// geometry, the argument check and the access to cuBLAS. Element-wise kernels use one thread per
// output element in output order, so stores are coalesced, with a grid-stride loop for any size.
// cuBLAS is column-major: a row-major m x n matrix is, in memory, the column-major n x m matrix
// of its transpose, so each row-major product C = A B is issued as C^T = B^T A^T on the same
// buffers, with no copies.
//
// Thread-safety: functions of their arguments; a cuBLAS handle is nn_cuda.hpp's (one host thread
// at a time).

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_check.hpp"

namespace stoke::nn::detail {

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* expr,
                                            const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + expr +
                           " failed: " + cublasGetStatusName(status));
}

}  // namespace stoke::nn::detail

// Evaluates `expr` once; throws std::runtime_error("file:line: expr failed: STATUS") on error.
#define CUBLAS_CALL(expr)                                                                          \
  do {                                                                                             \
    const cublasStatus_t stoke_cublas_status_ = (expr);                                            \
    if (stoke_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                           \
      ::stoke::nn::detail::throw_cublas_error(stoke_cublas_status_, #expr, __FILE__, __LINE__);    \
    }                                                                                              \
  } while (0)

namespace stoke::nn::detail {

inline constexpr unsigned kThreads = 256;
inline constexpr int kWarp = 32;
// The grid-stride loops cover anything beyond this many blocks.
inline constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 20;

inline unsigned blocks_for(std::int64_t total) {
  return static_cast<unsigned>(std::min(kMaxBlocks, (total + kThreads - 1) / kThreads));
}

inline void check_launch() { CUDA_CALL(cudaGetLastError()); }

inline void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("stoke::nn::cuda::") + what);
}

__device__ inline std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

inline void use_stream(cublasHandle_t blas, cudaStream_t stream) {
  CUBLAS_CALL(cublasSetStream(blas, stream));
  CUBLAS_CALL(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST));  // alpha, beta below
}

inline int blas_int(std::int64_t v) {
  require(v >= 0 && v <= INT_MAX, "matrix dimension beyond cuBLAS's int range");
  return static_cast<int>(v);
}

}  // namespace stoke::nn::detail

// The ops of nn_cuda.hpp launch and check with these.
namespace stoke::nn::cuda {

using detail::blocks_for;
using detail::check_launch;
using detail::kThreads;
using detail::require;

}  // namespace stoke::nn::cuda
