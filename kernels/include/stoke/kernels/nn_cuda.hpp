#pragma once
// The trainer's math on the GPU: one function per stoke::nn::cpu op in nn.hpp, with the same
// names, argument order and meaning (see nn.hpp for the numerics), CUDA kernels + cuBLAS.
// Declared only when stoke_nn was built with CUDA (STOKE_WITH_CUDA=1, a public compile
// definition of stoke_nn); in a CPU-only build this header declares nothing but what nn.hpp does.
//
// Thread safety: may be called from any host thread; ordering is that of `stream`. A cuBLAS
// handle must not be used by two host threads at once (cuBLAS's rule), and each GEMM-based call
// sets the handle's stream to `stream` and its pointer mode to host.
//
// Conventions: every pointer is device memory that stays valid until `stream` reaches the work;
// every call only enqueues on `stream` and returns without synchronizing. Nothing here allocates
// device memory (cuBLAS may use its own handle workspace): outputs and the convolution workspace
// come from the caller. Invalid shapes throw std::invalid_argument before anything is enqueued;
// CUDA and cuBLAS errors throw std::runtime_error. Results equal the CPU reference bit for bit
// for im2col/col2im, ReLU backward, max pooling, bn_param_grads and SGD; the GEMMs and
// reductions sum in another order, so they agree to float rounding (GEMMs assume the handle's
// default math mode, no TF32).

#include <cstdint>

#include "stoke/kernels/nn.hpp"

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>

namespace stoke::nn::cuda {

// The convolutions im2col a group of images at a time into the workspace; groups are as large as
// fit in this many floats (64 MiB), and at least one image, so the workspace stays bounded
// however large the batch is while small layers still run as one batched GEMM.
inline constexpr std::int64_t kConvWorkspaceMaxFloats = std::int64_t{1} << 24;

// The floats of the d_workspace every conv3x3_* call with this shape REQUIRES: images per group
// times (one image's im2col matrix + one image's output), the second part being where
// conv3x3_backward_weights regroups dy. 0 when the shape has no images or no pixels.
inline std::int64_t conv3x3_workspace_floats(const ConvShape& shape) {
  const std::int64_t per_image = shape.col_size() + std::int64_t{shape.k} * shape.h * shape.w;
  if (shape.n <= 0 || per_image <= 0) return 0;
  const std::int64_t images =
      std::clamp<std::int64_t>(kConvWorkspaceMaxFloats / per_image, 1, shape.n);
  return images * per_image;
}

// im2col3x3 / col2im3x3 of one image, exactly as the CPU (copies and adds only: bit-identical).
void im2col3x3(const float* d_image, int c, int h, int w, float* d_col, cudaStream_t stream);
void col2im3x3(const float* d_col, int c, int h, int w, float* d_image, cudaStream_t stream);

// The convolutions. REQUIRES: d_workspace holds conv3x3_workspace_floats(shape) floats that no
// other work on another stream uses meanwhile; shape.c, h, w, k > 0 and n >= 0.
void conv3x3_forward(const float* d_x, const float* d_weights, float* d_y, const ConvShape& shape,
                     float* d_workspace, cublasHandle_t blas, cudaStream_t stream);
void conv3x3_backward_data(const float* d_dy, const float* d_weights, float* d_dx,
                           const ConvShape& shape, float* d_workspace, cublasHandle_t blas,
                           cudaStream_t stream);
void conv3x3_backward_weights(const float* d_x, const float* d_dy, float* d_dweights,
                              const ConvShape& shape, float* d_workspace, cublasHandle_t blas,
                              cudaStream_t stream);

// BatchNorm. Sums are device doubles in nn.hpp's [2c] layout; `count` is a host value.
// bn_finalize throws std::invalid_argument unless count > 0, bn_update_running unless count > 1.
void bn_sums(const float* d_x, const BnShape& shape, double* d_sums, cudaStream_t stream);
void bn_finalize(const double* d_sums, double count, int c, float* d_mean, float* d_invstd,
                 cudaStream_t stream);
void bn_update_running(const double* d_sums, double count, int c, float momentum,
                       float* d_running_mean, float* d_running_var, cudaStream_t stream);
void bn_relu_forward(const float* d_x, const float* d_mean, const float* d_invstd,
                     const float* d_gamma, const float* d_beta, const BnShape& shape, float* d_y,
                     cudaStream_t stream);
void bn_relu_inference(const float* d_x, const float* d_running_mean, const float* d_running_var,
                       const float* d_gamma, const float* d_beta, const BnShape& shape,
                       float* d_y, cudaStream_t stream);
void relu_backward(const float* d_dy, const float* d_y, const BnShape& shape, float* d_dz,
                   cudaStream_t stream);
void bn_backward_sums(const float* d_dz, const float* d_x, const float* d_mean,
                      const float* d_invstd, const BnShape& shape, double* d_sums,
                      cudaStream_t stream);
void bn_backward_input(const float* d_dz, const float* d_x, const float* d_mean,
                       const float* d_invstd, const float* d_gamma, const double* d_sums,
                       double count, const BnShape& shape, float* d_dx, cudaStream_t stream);
// Bit-identical to the CPU (one double-to-float rounding per value).
void bn_param_grads(const double* d_sums, int c, float* d_dgamma, float* d_dbeta,
                    cudaStream_t stream);

// Max pooling. The geometry is shape.n x shape.c x h x w (shape.hw is not read).
// REQUIRES: h and w even (std::invalid_argument otherwise).
void maxpool2x2_forward(const float* d_x, const BnShape& shape, int h, int w, float* d_y,
                        std::uint8_t* d_argmax, cudaStream_t stream);
void maxpool2x2_backward(const float* d_dy, const std::uint8_t* d_argmax, const BnShape& shape,
                         int h, int w, float* d_dx, cudaStream_t stream);

// Fully connected layer. d_dx may be null (no input gradient).
void linear_forward(const float* d_x, const float* d_weights, const float* d_bias, int n, int in,
                    int out, float* d_y, cublasHandle_t blas, cudaStream_t stream);
void linear_backward(const float* d_x, const float* d_weights, const float* d_dy, int n, int in,
                     int out, float* d_dx, float* d_dweights, float* d_dbias, cublasHandle_t blas,
                     cudaStream_t stream);

// A valid sample whose label is out of range (a REQUIRES violation) gets a NaN loss, not an
// out-of-bounds read.
void softmax_cross_entropy(const float* d_logits, const std::int32_t* d_labels,
                           const std::uint8_t* d_valid, int n, int classes, float scale,
                           float* d_dlogits, float* d_losses, std::uint8_t* d_correct,
                           cudaStream_t stream);

// Bit-identical to the CPU: the same three correctly rounded fmaf per element.
void sgd_momentum(float* d_weights, const float* d_grads, float* d_velocity, std::int64_t count,
                  float lr, float momentum, float weight_decay, cudaStream_t stream);

}  // namespace stoke::nn::cuda
#endif
