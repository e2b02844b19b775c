// BatchNorm (+ the ReLU that follows it) on the GPU (nn_cuda.hpp). Per-channel reductions use
// one block per channel and accumulate in double, as the CPU does.

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

#include "nn/cuda_support.cuh"
#include "stoke/kernels/nn.hpp"
#include "stoke/kernels/nn_cuda.hpp"

namespace stoke::nn::detail {
namespace {

// ---------------------------------------------------------------- per-channel reductions

// The sum of v over the block (blockDim.x == kThreads), valid in thread 0.
__device__ double2 block_sum(double2 v) {
  __shared__ double2 warp_sums[kThreads / kWarp];
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v.x += __shfl_down_sync(0xffffffffu, v.x, offset);
    v.y += __shfl_down_sync(0xffffffffu, v.y, offset);
  }
  const unsigned lane = threadIdx.x % kWarp;
  const unsigned warp = threadIdx.x / kWarp;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / kWarp ? warp_sums[lane] : make_double2(0.0, 0.0);
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      v.x += __shfl_down_sync(0xffffffffu, v.x, offset);
      v.y += __shfl_down_sync(0xffffffffu, v.y, offset);
    }
  }
  return v;
}

// Walks channel blockIdx.x of an n x c x hw tensor: calls f(index) for each of its n * hw
// elements, spread over the block. Keeps (image, pixel) incrementally to avoid a 64-bit division
// per element.
template <class F>
__device__ void for_channel(int n, int c, int hw, F f) {
  if (hw == 0) return;
  const int ch = static_cast<int>(blockIdx.x);
  int img = static_cast<int>(threadIdx.x) / hw;
  int p = static_cast<int>(threadIdx.x) % hw;
  while (img < n) {
    f((std::int64_t{img} * c + ch) * hw + p);
    p += static_cast<int>(blockDim.x);
    img += p / hw;
    p %= hw;
  }
}

__global__ void bn_sums_kernel(const float* __restrict__ x, BnShape s, double* __restrict__ sums) {
  double2 acc = make_double2(0.0, 0.0);
  for_channel(s.n, s.c, s.hw, [&](std::int64_t i) {
    const double v = x[i];
    acc.x += v;
    acc.y += v * v;
  });
  acc = block_sum(acc);
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = acc.x;
    sums[s.c + blockIdx.x] = acc.y;
  }
}

__global__ void bn_backward_sums_kernel(const float* __restrict__ dz, const float* __restrict__ x,
                                        const float* __restrict__ mean,
                                        const float* __restrict__ invstd, BnShape s,
                                        double* __restrict__ sums) {
  const float m = mean[blockIdx.x];
  const float is = invstd[blockIdx.x];
  double2 acc = make_double2(0.0, 0.0);
  for_channel(s.n, s.c, s.hw, [&](std::int64_t i) {
    const double g = dz[i];
    acc.x += g;
    acc.y += g * static_cast<double>((x[i] - m) * is);
  });
  acc = block_sum(acc);
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = acc.x;
    sums[s.c + blockIdx.x] = acc.y;
  }
}

void require_bn(const BnShape& s, const char* what) {
  require(s.n >= 0 && s.c >= 0 && s.hw >= 0, what);
}

// ---------------------------------------------------------------- per-channel statistics

__global__ void bn_finalize_kernel(const double* __restrict__ sums, double count, int c,
                                   float* __restrict__ mean, float* __restrict__ invstd) {
  for (std::int64_t ch = first_index(); ch < c; ch += grid_stride()) {
    const double m = sums[ch] / count;
    const double var = fmax(sums[c + ch] / count - m * m, 0.0);
    mean[ch] = static_cast<float>(m);
    invstd[ch] = static_cast<float>(1.0 / sqrt(var + static_cast<double>(kBnEpsilon)));
  }
}

__global__ void bn_update_running_kernel(const double* __restrict__ sums, double count, int c,
                                         float momentum, float* __restrict__ running_mean,
                                         float* __restrict__ running_var) {
  for (std::int64_t ch = first_index(); ch < c; ch += grid_stride()) {
    const double m = sums[ch] / count;
    const double var = fmax(sums[c + ch] / count - m * m, 0.0) * (count / (count - 1.0));
    // Blended in double, rounded once, as the CPU does.
    running_mean[ch] = static_cast<float>((1.0 - momentum) * running_mean[ch] + momentum * m);
    running_var[ch] = static_cast<float>((1.0 - momentum) * running_var[ch] + momentum * var);
  }
}

// ---------------------------------------------------------------- element-wise BatchNorm/ReLU

__global__ void bn_relu_forward_kernel(const float* __restrict__ x, const float* __restrict__ mean,
                                       const float* __restrict__ invstd,
                                       const float* __restrict__ gamma,
                                       const float* __restrict__ beta, BnShape s,
                                       float* __restrict__ y) {
  const std::int64_t total = std::int64_t{s.n} * s.c * s.hw;  // BnShape::size() is host-only
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
    const int ch = static_cast<int>((i / s.hw) % s.c);
    const float scale = invstd[ch] * gamma[ch];  // the CPU's grouping
    y[i] = fmaxf(0.0f, (x[i] - mean[ch]) * scale + beta[ch]);
  }
}

__global__ void bn_relu_inference_kernel(const float* __restrict__ x,
                                         const float* __restrict__ running_mean,
                                         const float* __restrict__ running_var,
                                         const float* __restrict__ gamma,
                                         const float* __restrict__ beta, BnShape s,
                                         float* __restrict__ y) {
  const std::int64_t total = std::int64_t{s.n} * s.c * s.hw;  // BnShape::size() is host-only
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
    const int ch = static_cast<int>((i / s.hw) % s.c);
    const float scale = gamma[ch] / sqrtf(running_var[ch] + kBnEpsilon);  // the CPU's grouping
    y[i] = fmaxf(0.0f, (x[i] - running_mean[ch]) * scale + beta[ch]);
  }
}

// dz may be dy (in place, as the trainer calls it): no __restrict__ on those two.
__global__ void relu_backward_kernel(const float* dy, const float* __restrict__ y,
                                     std::int64_t total, float* dz) {
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
    dz[i] = y[i] > 0.0f ? dy[i] : 0.0f;
  }
}

__global__ void bn_backward_input_kernel(const float* __restrict__ dz, const float* __restrict__ x,
                                         const float* __restrict__ mean,
                                         const float* __restrict__ invstd,
                                         const float* __restrict__ gamma,
                                         const double* __restrict__ sums, double count, BnShape s,
                                         float* __restrict__ dx) {
  const std::int64_t total = std::int64_t{s.n} * s.c * s.hw;  // BnShape::size() is host-only
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
    const int ch = static_cast<int>((i / s.hw) % s.c);
    const float mean_dz = static_cast<float>(sums[ch] / count);
    const float mean_dz_xhat = static_cast<float>(sums[s.c + ch] / count);
    const float xhat = (x[i] - mean[ch]) * invstd[ch];
    dx[i] = (gamma[ch] * invstd[ch]) * (dz[i] - mean_dz - xhat * mean_dz_xhat);
  }
}

__global__ void bn_param_grads_kernel(const double* __restrict__ sums, int c,
                                      float* __restrict__ dgamma, float* __restrict__ dbeta) {
  for (std::int64_t ch = first_index(); ch < c; ch += grid_stride()) {
    dbeta[ch] = static_cast<float>(sums[ch]);
    dgamma[ch] = static_cast<float>(sums[c + ch]);
  }
}

}  // namespace
}  // namespace stoke::nn::detail

namespace stoke::nn::cuda {

void bn_sums(const float* d_x, const BnShape& shape, double* d_sums, cudaStream_t stream) {
  detail::require_bn(shape, "bn_sums: negative size");
  if (shape.c == 0) return;
  detail::bn_sums_kernel<<<static_cast<unsigned>(shape.c), kThreads, 0, stream>>>(d_x, shape,
                                                                                  d_sums);
  check_launch();
}

void bn_finalize(const double* d_sums, double count, int c, float* d_mean, float* d_invstd,
                 cudaStream_t stream) {
  require(count > 0.0, "bn_finalize: count must be > 0");
  require(c >= 0, "bn_finalize: negative channel count");
  if (c == 0) return;
  detail::bn_finalize_kernel<<<blocks_for(c), kThreads, 0, stream>>>(d_sums, count, c, d_mean,
                                                                      d_invstd);
  check_launch();
}

void bn_update_running(const double* d_sums, double count, int c, float momentum,
                       float* d_running_mean, float* d_running_var, cudaStream_t stream) {
  require(count > 1.0, "bn_update_running: count must be > 1");
  require(c >= 0, "bn_update_running: negative channel count");
  if (c == 0) return;
  detail::bn_update_running_kernel<<<blocks_for(c), kThreads, 0, stream>>>(
      d_sums, count, c, momentum, d_running_mean, d_running_var);
  check_launch();
}

void bn_relu_forward(const float* d_x, const float* d_mean, const float* d_invstd,
                     const float* d_gamma, const float* d_beta, const BnShape& shape, float* d_y,
                     cudaStream_t stream) {
  detail::require_bn(shape, "bn_relu_forward: negative size");
  if (shape.size() == 0) return;
  detail::bn_relu_forward_kernel<<<blocks_for(shape.size()), kThreads, 0, stream>>>(
      d_x, d_mean, d_invstd, d_gamma, d_beta, shape, d_y);
  check_launch();
}

void bn_relu_inference(const float* d_x, const float* d_running_mean, const float* d_running_var,
                       const float* d_gamma, const float* d_beta, const BnShape& shape,
                       float* d_y, cudaStream_t stream) {
  detail::require_bn(shape, "bn_relu_inference: negative size");
  if (shape.size() == 0) return;
  detail::bn_relu_inference_kernel<<<blocks_for(shape.size()), kThreads, 0, stream>>>(
      d_x, d_running_mean, d_running_var, d_gamma, d_beta, shape, d_y);
  check_launch();
}

void relu_backward(const float* d_dy, const float* d_y, const BnShape& shape, float* d_dz,
                   cudaStream_t stream) {
  detail::require_bn(shape, "relu_backward: negative size");
  if (shape.size() == 0) return;
  detail::relu_backward_kernel<<<blocks_for(shape.size()), kThreads, 0, stream>>>(
      d_dy, d_y, shape.size(), d_dz);
  check_launch();
}

void bn_backward_sums(const float* d_dz, const float* d_x, const float* d_mean,
                      const float* d_invstd, const BnShape& shape, double* d_sums,
                      cudaStream_t stream) {
  detail::require_bn(shape, "bn_backward_sums: negative size");
  if (shape.c == 0) return;
  detail::bn_backward_sums_kernel<<<static_cast<unsigned>(shape.c), kThreads, 0, stream>>>(
      d_dz, d_x, d_mean, d_invstd, shape, d_sums);
  check_launch();
}

void bn_backward_input(const float* d_dz, const float* d_x, const float* d_mean,
                       const float* d_invstd, const float* d_gamma, const double* d_sums,
                       double count, const BnShape& shape, float* d_dx, cudaStream_t stream) {
  detail::require_bn(shape, "bn_backward_input: negative size");
  if (shape.size() == 0) return;
  require(count > 0.0, "bn_backward_input: count must be > 0");
  detail::bn_backward_input_kernel<<<blocks_for(shape.size()), kThreads, 0, stream>>>(
      d_dz, d_x, d_mean, d_invstd, d_gamma, d_sums, count, shape, d_dx);
  check_launch();
}

void bn_param_grads(const double* d_sums, int c, float* d_dgamma, float* d_dbeta,
                    cudaStream_t stream) {
  require(c >= 0, "bn_param_grads: negative channel count");
  if (c == 0) return;
  detail::bn_param_grads_kernel<<<blocks_for(c), kThreads, 0, stream>>>(d_sums, c, d_dgamma,
                                                                         d_dbeta);
  check_launch();
}

}  // namespace stoke::nn::cuda
