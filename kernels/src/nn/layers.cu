// Max pooling, the fully connected layer (cuBLAS), softmax cross-entropy and SGD on the GPU
// (nn_cuda.hpp).

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "cuda_check.hpp"
#include "nn/cuda_support.cuh"
#include "stoke/kernels/nn.hpp"
#include "stoke/kernels/nn_cuda.hpp"

namespace stoke::nn::detail {
namespace {

// ---------------------------------------------------------------- max pooling

__global__ void maxpool_forward_kernel(const float* __restrict__ x, std::int64_t planes, int h,
                                       int w, float* __restrict__ y,
                                       std::uint8_t* __restrict__ argmax) {
  const int oh = h / 2;
  const int ow = w / 2;
  const std::int64_t total = planes * oh * ow;
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
    const std::int64_t plane = i / (std::int64_t{oh} * ow);
    const int oy = static_cast<int>((i / ow) % oh);
    const int ox = static_cast<int>(i % ow);
    const float* win = x + plane * h * w + std::int64_t{2 * oy} * w + 2 * ox;
    const float v[4] = {win[0], win[1], win[w], win[w + 1]};
    float best = v[0];
    std::uint8_t at = 0;
    for (std::uint8_t j = 1; j < 4; ++j) {
      if (v[j] > best) {  // strict: the first of equal values wins
        best = v[j];
        at = j;
      }
    }
    y[i] = best;
    argmax[i] = at;
  }
}

// A gather over dx, so every element is written once and no atomics are needed.
__global__ void maxpool_backward_kernel(const float* __restrict__ dy,
                                        const std::uint8_t* __restrict__ argmax,
                                        std::int64_t planes, int h, int w,
                                        float* __restrict__ dx) {
  const int oh = h / 2;
  const int ow = w / 2;
  const std::int64_t total = planes * h * w;
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
    const std::int64_t plane = i / (std::int64_t{h} * w);
    const int y = static_cast<int>((i / w) % h);
    const int x = static_cast<int>(i % w);
    const std::int64_t o = (plane * oh + y / 2) * ow + x / 2;
    const int position = (y % 2) * 2 + x % 2;
    dx[i] = argmax[o] == position ? dy[o] : 0.0f;
  }
}

void require_pool(const BnShape& s, int h, int w, const char* what) {
  require(s.n >= 0 && s.c >= 0 && h >= 0 && w >= 0 && h % 2 == 0 && w % 2 == 0, what);
}

// ---------------------------------------------------------------- linear layer

__global__ void broadcast_rows_kernel(const float* __restrict__ bias, std::int64_t total, int out,
                                      float* __restrict__ y) {
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) y[i] = bias[i % out];
}

// One thread per column: consecutive threads read consecutive columns of each row (coalesced).
__global__ void column_sums_kernel(const float* __restrict__ m, int rows, int cols,
                                   float* __restrict__ sums) {
  for (std::int64_t j = first_index(); j < cols; j += grid_stride()) {
    double sum = 0.0;
    for (int r = 0; r < rows; ++r) sum += m[std::int64_t{r} * cols + j];
    sums[j] = static_cast<float>(sum);
  }
}

// ---------------------------------------------------------------- softmax cross-entropy

constexpr int kNoIndex = INT_MAX;

// Whether candidate (v, j) beats (best, at) as "the first largest": larger, or equal and earlier.
__device__ bool beats(float v, int j, float best, int at) {
  return j != kNoIndex && (at == kNoIndex || v > best || (v == best && j < at));
}

// The softmax cross-entropy of one row by one warp; every lane ends with the row's reductions
// (butterfly shuffles).
__device__ void softmax_ce_row(const float* __restrict__ l, int label, bool valid, int classes,
                               float scale, float* __restrict__ d, float* __restrict__ loss,
                               std::uint8_t* __restrict__ correct) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (!valid) {
    for (int j = lane; j < classes; j += kWarp) d[j] = 0.0f;
    if (lane == 0) {
      *loss = 0.0f;
      *correct = 0;
    }
    return;
  }
  float best = 0.0f;
  int at = kNoIndex;
  for (int j = lane; j < classes; j += kWarp) {
    if (beats(l[j], j, best, at)) {
      best = l[j];
      at = j;
    }
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, best, offset);
    const int other_at = __shfl_xor_sync(0xffffffffu, at, offset);
    if (beats(other, other_at, best, at)) {
      best = other;
      at = other_at;
    }
  }
  float sum = 0.0f;
  for (int j = lane; j < classes; j += kWarp) sum += expf(l[j] - best);
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  }
  for (int j = lane; j < classes; j += kWarp) {
    d[j] = (expf(l[j] - best) / sum - (j == label ? 1.0f : 0.0f)) * scale;
  }
  if (lane == 0) {
    const bool in_range = label >= 0 && label < classes;
    *loss = in_range ? logf(sum) - (l[label] - best) : NAN;
    *correct = in_range && at == label ? 1 : 0;
  }
}

// One warp per row, grid-stride over rows; a row's warp stays together (blockDim % 32 == 0).
__global__ void softmax_ce_kernel(const float* __restrict__ logits,
                                  const std::int32_t* __restrict__ labels,
                                  const std::uint8_t* __restrict__ valid, int n, int classes,
                                  float scale, float* __restrict__ dlogits,
                                  float* __restrict__ losses, std::uint8_t* __restrict__ correct) {
  for (std::int64_t row = first_index() / kWarp; row < n; row += grid_stride() / kWarp) {
    const bool ok = valid[row] != 0;
    softmax_ce_row(logits + row * classes, ok ? labels[row] : 0, ok, classes, scale,
                   dlogits + row * classes, losses + row, correct + row);
  }
}

// ---------------------------------------------------------------- SGD

__global__ void sgd_momentum_kernel(float* __restrict__ weights, const float* __restrict__ grads,
                                    float* __restrict__ velocity, std::int64_t count, float lr,
                                    float momentum, float weight_decay) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    // Explicit correctly rounded fmas, in nn.hpp's order: the CPU's std::fmaf bit for bit.
    const float g = __fmaf_rn(weight_decay, weights[i], grads[i]);
    const float v = __fmaf_rn(momentum, velocity[i], g);
    velocity[i] = v;
    weights[i] = __fmaf_rn(-lr, v, weights[i]);
  }
}

}  // namespace
}  // namespace stoke::nn::detail

namespace stoke::nn::cuda {

void maxpool2x2_forward(const float* d_x, const BnShape& shape, int h, int w, float* d_y,
                        std::uint8_t* d_argmax, cudaStream_t stream) {
  detail::require_pool(shape, h, w, "maxpool2x2_forward: negative size or odd h/w");
  const std::int64_t planes = std::int64_t{shape.n} * shape.c;
  const std::int64_t total = planes * (h / 2) * (w / 2);
  if (total == 0) return;
  detail::maxpool_forward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(d_x, planes, h, w,
                                                                             d_y, d_argmax);
  check_launch();
}

void maxpool2x2_backward(const float* d_dy, const std::uint8_t* d_argmax, const BnShape& shape,
                         int h, int w, float* d_dx, cudaStream_t stream) {
  detail::require_pool(shape, h, w, "maxpool2x2_backward: negative size or odd h/w");
  const std::int64_t planes = std::int64_t{shape.n} * shape.c;
  const std::int64_t total = planes * h * w;
  if (total == 0) return;
  detail::maxpool_backward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
      d_dy, d_argmax, planes, h, w, d_dx);
  check_launch();
}

// y = bias broadcast, then y += x W^T, issued as y^T (out x n) += W (out x in) * x^T (in x n).
void linear_forward(const float* d_x, const float* d_weights, const float* d_bias, int n, int in,
                    int out, float* d_y, cublasHandle_t blas, cudaStream_t stream) {
  require(n >= 0 && in >= 0 && out >= 0, "linear_forward: negative size");
  const std::int64_t total = std::int64_t{n} * out;
  if (total == 0) return;
  detail::broadcast_rows_kernel<<<blocks_for(total), kThreads, 0, stream>>>(d_bias, total, out,
                                                                            d_y);
  check_launch();
  if (in == 0) return;
  detail::use_stream(blas, stream);
  const float one = 1.0f;
  CUBLAS_CALL(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, d_weights, in, d_x,
                          in, &one, d_y, out));
}

// dW = dy^T x as dW^T (in x out) = x^T (in x n) * dy (n x out); dx = dy W as
// dx^T (in x n) = W^T (in x out) * dy^T (out x n); dbias by a column-sum kernel.
void linear_backward(const float* d_x, const float* d_weights, const float* d_dy, int n, int in,
                     int out, float* d_dx, float* d_dweights, float* d_dbias, cublasHandle_t blas,
                     cudaStream_t stream) {
  require(n >= 0 && in >= 0 && out >= 0, "linear_backward: negative size");
  if (out == 0) {
    if (d_dx != nullptr && n > 0 && in > 0) {
      CUDA_CALL(cudaMemsetAsync(d_dx, 0, std::int64_t{n} * in * sizeof(float), stream));
    }
    return;
  }
  detail::column_sums_kernel<<<blocks_for(out), kThreads, 0, stream>>>(d_dy, n, out, d_dbias);
  check_launch();
  if (in == 0) return;
  if (n == 0) {  // no samples: zero gradients, without asking cuBLAS for a k = 0 product
    CUDA_CALL(cudaMemsetAsync(d_dweights, 0, std::int64_t{out} * in * sizeof(float), stream));
    return;
  }
  detail::use_stream(blas, stream);
  const float one = 1.0f;
  const float zero = 0.0f;
  CUBLAS_CALL(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &one, d_x, in, d_dy, out,
                          &zero, d_dweights, in));
  if (d_dx != nullptr) {
    CUBLAS_CALL(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &one, d_weights, in, d_dy,
                            out, &zero, d_dx, in));
  }
}

void softmax_cross_entropy(const float* d_logits, const std::int32_t* d_labels,
                           const std::uint8_t* d_valid, int n, int classes, float scale,
                           float* d_dlogits, float* d_losses, std::uint8_t* d_correct,
                           cudaStream_t stream) {
  require(n >= 0 && classes > 0, "softmax_cross_entropy: n < 0 or classes < 1");
  if (n == 0) return;
  const std::int64_t threads = std::int64_t{n} * detail::kWarp;  // one warp per row
  detail::softmax_ce_kernel<<<blocks_for(threads), kThreads, 0, stream>>>(
      d_logits, d_labels, d_valid, n, classes, scale, d_dlogits, d_losses, d_correct);
  check_launch();
}

void sgd_momentum(float* d_weights, const float* d_grads, float* d_velocity, std::int64_t count,
                  float lr, float momentum, float weight_decay, cudaStream_t stream) {
  require(count >= 0, "sgd_momentum: negative count");
  if (count == 0) return;
  detail::sgd_momentum_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
      d_weights, d_grads, d_velocity, count, lr, momentum, weight_decay);
  check_launch();
}

}  // namespace stoke::nn::cuda
