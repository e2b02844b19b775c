#pragma once
// The trainer's math on the CPU: the reference every GPU kernel in nn_cuda.hpp is tested against.
//
// Thread-safety: free functions without shared state; concurrent calls on disjoint buffers are
// safe. They run in parallel on oneTBB's pool and call single-threaded OpenBLAS, so results do
// not depend on the number of threads: work is split into fixed blocks whose partial results are
// combined in a fixed order.
//
// Conventions: float32, images NCHW, matrices row-major. Functions never allocate their outputs;
// "writes" means the output is overwritten, never accumulated into. Every pointer argument
// REQUIRES room for the element counts its comment states.

#include <cstdint>

namespace stoke::nn {

// A 3x3 convolution with padding 1 and stride 1, no bias (BatchNorm follows every convolution):
// input n x c x h x w, weights k x c x 3 x 3, output n x k x h x w.
struct ConvShape {
  int n = 0;
  int c = 0;
  int h = 0;
  int w = 0;
  int k = 0;

  std::int64_t input_size() const { return std::int64_t{n} * c * h * w; }
  std::int64_t output_size() const { return std::int64_t{n} * k * h * w; }
  std::int64_t weight_size() const { return std::int64_t{k} * c * 9; }
  // One image's im2col matrix: (c * 9) rows x (h * w) columns.
  std::int64_t col_size() const { return std::int64_t{c} * 9 * h * w; }
};

// Per-channel sums of a batch, in double so that 10^7 values keep 7 significant digits. The
// layout is also what the all-reduce of BatchNorm statistics sends: [sum[0..c), sumsq[0..c)].
// Backward sums use the same layout: [sum(dz)[0..c), sum(dz * xhat)[0..c)].
struct BnShape {
  int n = 0;   // images
  int c = 0;   // channels
  int hw = 0;  // pixels per channel per image
  std::int64_t size() const { return std::int64_t{n} * c * hw; }
  std::int64_t per_channel() const { return std::int64_t{n} * hw; }
};

inline constexpr float kBnEpsilon = 1e-5f;

namespace cpu {

// im2col of one image (c x h x w): col[(ci * 9 + ky * 3 + kx) * h * w + y * w + x] =
// image[ci][y + ky - 1][x + kx - 1], or 0 outside the image.
void im2col3x3(const float* image, int c, int h, int w, float* col);
// The adjoint of im2col3x3 for one image: writes image[ci][y][x] = the sum of every col entry
// im2col3x3 reads from (ci, y, x), added in (ky, kx) order.
void col2im3x3(const float* col, int c, int h, int w, float* image);

// y = conv(x, weights). Writes shape.output_size() floats.
void conv3x3_forward(const float* x, const float* weights, float* y, const ConvShape& shape);
// dx = d(loss)/dx given dy. Writes shape.input_size() floats.
void conv3x3_backward_data(const float* dy, const float* weights, float* dx,
                           const ConvShape& shape);
// dweights = d(loss)/dweights given x and dy, summed over the n images. Writes
// shape.weight_size() floats.
void conv3x3_backward_weights(const float* x, const float* dy, float* dweights,
                              const ConvShape& shape);

// Writes sums[2c]: per-channel sum and sum of squares of x.
void bn_sums(const float* x, const BnShape& shape, double* sums);
// From sums of `count` values per channel (count > 0): mean[c] and invstd[c] = 1/sqrt(var + eps),
// var the biased variance (clamped at 0 against rounding).
// REQUIRES: count > 0 (a BatchNorm over no values has no statistics; callers must refuse it).
void bn_finalize(const double* sums, double count, int c, float* mean, float* invstd);
// running = (1 - momentum) * running + momentum * batch, with the unbiased batch variance
// (count / (count - 1)), as PyTorch's BatchNorm. REQUIRES: count > 1.
void bn_update_running(const double* sums, double count, int c, float momentum,
                       float* running_mean, float* running_var);
// y = max(0, (x - mean) * invstd * gamma + beta), per channel.
void bn_relu_forward(const float* x, const float* mean, const float* invstd, const float* gamma,
                     const float* beta, const BnShape& shape, float* y);
// Inference: the same with the running statistics.
void bn_relu_inference(const float* x, const float* running_mean, const float* running_var,
                       const float* gamma, const float* beta, const BnShape& shape, float* y);
// dz = dy where y > 0, else 0 (ReLU backward through its output). Writes shape.size() floats;
// dz may be dy (in place).
void relu_backward(const float* dy, const float* y, const BnShape& shape, float* dz);
// Writes sums[2c]: per-channel sum(dz) and sum(dz * xhat), xhat = (x - mean) * invstd. These are
// d(loss)/dbeta and d(loss)/dgamma.
void bn_backward_sums(const float* dz, const float* x, const float* mean, const float* invstd,
                      const BnShape& shape, double* sums);
// dx = gamma * invstd * (dz - sum(dz) / count - xhat * sum(dz * xhat) / count), the gradient of a
// BatchNorm whose statistics were taken over `count` values per channel (this replica's alone,
// or every replica's with synchronized BatchNorm; `sums` must cover the same values).
void bn_backward_input(const float* dz, const float* x, const float* mean, const float* invstd,
                       const float* gamma, const double* sums, double count,
                       const BnShape& shape, float* dx);

// The BatchNorm parameter gradients from backward sums: dbeta[i] = sums[i] and
// dgamma[i] = sums[c + i], rounded to float.
void bn_param_grads(const double* sums, int c, float* dgamma, float* dbeta);

// 2x2 max pooling with stride 2 over n x c x h x w (h and w even). Writes y (n x c x h/2 x w/2)
// and argmax (same count: 0..3 = the winning position in the window, row-major; the first of
// equal values wins).
void maxpool2x2_forward(const float* x, const BnShape& shape, int h, int w, float* y,
                        std::uint8_t* argmax);
// Writes dx (n x c x h x w): dy routed to each window's winner, 0 elsewhere.
void maxpool2x2_backward(const float* dy, const std::uint8_t* argmax, const BnShape& shape, int h,
                         int w, float* dx);

// y[n x out] = x[n x in] * weights[out x in]^T + bias[out].
void linear_forward(const float* x, const float* weights, const float* bias, int n, int in,
                    int out, float* y);
// dweights = dy^T x, dbias = column sums of dy, and dx = dy * weights (skipped when dx is null).
void linear_backward(const float* x, const float* weights, const float* dy, int n, int in, int out,
                     float* dx, float* dweights, float* dbias);

// Softmax cross-entropy of n rows of `classes` logits. For valid samples (valid[i] != 0):
// losses[i] = -log softmax(logits[i])[labels[i]], dlogits[i] = (softmax - onehot) * scale and
// correct[i] = 1 when the first largest logit is the label's. Invalid samples get 0 in all three.
// scale is 1 / (valid samples in the global batch), so replica gradients add up to the mean.
// REQUIRES: 0 <= labels[i] < classes for valid samples.
void softmax_cross_entropy(const float* logits, const std::int32_t* labels,
                           const std::uint8_t* valid, int n, int classes, float scale,
                           float* dlogits, float* losses, std::uint8_t* correct);

// SGD with momentum and L2 weight decay (PyTorch's formulation), with this exact operation order
// so the GPU kernel matches bit for bit: g = fmaf(weight_decay, w, grad);
// velocity = fmaf(momentum, velocity, g); w = fmaf(-lr, velocity, w).
void sgd_momentum(float* weights, const float* grads, float* velocity, std::int64_t count,
                  float lr, float momentum, float weight_decay);

}  // namespace cpu
}  // namespace stoke::nn
