// The trainer's ops on the GPU (nn_cuda.hpp). Element-wise kernels use one thread per output
// element in output order, so stores are coalesced, with a grid-stride loop for any size.
// Per-channel reductions use one block per channel and accumulate in double, as the CPU does.
// GEMMs go to cuBLAS, which is column-major: a row-major m x n matrix is, in memory, the
// column-major n x m matrix of its transpose, so each row-major product C = A B is issued as
// C^T = B^T A^T on the same buffers, with no copies.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_check.hpp"
#include "stoke/kernels/nn.hpp"
#include "stoke/kernels/nn_cuda.hpp"

namespace stoke::nn::detail {

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file,
                                     int line) {
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
namespace {

constexpr unsigned kThreads = 256;
constexpr int kWarp = 32;
// The grid-stride loops cover anything beyond this many blocks.
constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 20;

unsigned blocks_for(std::int64_t total) {
  return static_cast<unsigned>(std::min(kMaxBlocks, (total + kThreads - 1) / kThreads));
}

void check_launch() { CUDA_CALL(cudaGetLastError()); }

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("stoke::nn::cuda::") + what);
}

__device__ std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::int64_t grid_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// ---------------------------------------------------------------- im2col / col2im

// Where im2col puts image g's matrix: element (g, row, p) goes to
// g * image_stride + row * row_stride + p. Per image (image_stride = c * 9 * hw, row_stride = hw)
// is nn.hpp's layout; "wide" (image_stride = hw, row_stride = images * hw) puts the group's
// images side by side, so that one GEMM contracts over every pixel of the group.
struct ColLayout {
  std::int64_t image_stride;
  std::int64_t row_stride;
};

__global__ void im2col_kernel(const float* __restrict__ images, int count, int c, int h, int w,
                              ColLayout layout, float* __restrict__ col) {
  const std::int64_t hw = std::int64_t{h} * w;
  const std::int64_t rows = std::int64_t{c} * 9;
  const std::int64_t total = count * rows * hw;
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
    const std::int64_t p = i % hw;
    const std::int64_t row = (i / hw) % rows;
    const std::int64_t g = i / (hw * rows);
    const int ci = static_cast<int>(row / 9);
    const int kk = static_cast<int>(row % 9);
    const int y = static_cast<int>(p / w) + kk / 3 - 1;
    const int x = static_cast<int>(p % w) + kk % 3 - 1;
    const bool inside = y >= 0 && y < h && x >= 0 && x < w;
    col[g * layout.image_stride + row * layout.row_stride + p] =
        inside ? images[(g * c + ci) * hw + std::int64_t{y} * w + x] : 0.0f;
  }
}

// A gather, so no atomics: each image element adds the (up to 9) col entries that read it, in
// (ky, kx) order from 0, the same additions in the same order as the CPU's adjoint.
__global__ void col2im_kernel(const float* __restrict__ col, int count, int c, int h, int w,
                              float* __restrict__ images) {
  const std::int64_t hw = std::int64_t{h} * w;
  const std::int64_t total = count * std::int64_t{c} * hw;
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
    const int y = static_cast<int>((i % hw) / w);
    const int x = static_cast<int>(i % w);
    const std::int64_t plane = i / hw;  // g * c + ci
    const std::int64_t g = plane / c;
    const std::int64_t ci = plane % c;
    const float* src = col + (g * c + ci) * 9 * hw;  // image g's rows ci * 9 ..
    float sum = 0.0f;
    for (int ky = 0; ky < 3; ++ky) {
      const int sy = y - ky + 1;
      if (sy < 0 || sy >= h) continue;
      for (int kx = 0; kx < 3; ++kx) {
        const int sx = x - kx + 1;
        if (sx < 0 || sx >= w) continue;
        sum += src[(ky * 3 + kx) * hw + std::int64_t{sy} * w + sx];
      }
    }
    images[i] = sum;
  }
}

// [count][k][hw] -> [k][count][hw]: dy with the group's images side by side per output channel.
__global__ void regroup_kernel(const float* __restrict__ src, int count, int k, std::int64_t hw,
                               float* __restrict__ dst) {
  const std::int64_t total = std::int64_t{count} * k * hw;
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
    const std::int64_t p = i % hw;
    const std::int64_t g = (i / hw) % count;
    const std::int64_t kk = i / (hw * count);
    dst[i] = src[(g * k + kk) * hw + p];
  }
}

void launch_im2col(const float* d_images, int count, int c, int h, int w, ColLayout layout,
                   float* d_col, cudaStream_t stream) {
  const std::int64_t total = std::int64_t{count} * c * 9 * h * w;
  if (total == 0) return;
  im2col_kernel<<<blocks_for(total), kThreads, 0, stream>>>(d_images, count, c, h, w, layout,
                                                             d_col);
  check_launch();
}

void launch_col2im(const float* d_col, int count, int c, int h, int w, float* d_images,
                   cudaStream_t stream) {
  const std::int64_t total = std::int64_t{count} * c * h * w;
  if (total == 0) return;
  col2im_kernel<<<blocks_for(total), kThreads, 0, stream>>>(d_col, count, c, h, w, d_images);
  check_launch();
}

// ---------------------------------------------------------------- GEMM plumbing

void use_stream(cublasHandle_t blas, cudaStream_t stream) {
  CUBLAS_CALL(cublasSetStream(blas, stream));
  CUBLAS_CALL(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST));  // alpha, beta below
}

int blas_int(std::int64_t v) {
  require(v >= 0 && v <= INT_MAX, "matrix dimension beyond cuBLAS's int range");
  return static_cast<int>(v);
}

// What the convolutions derive from a shape: the GEMM sizes and the images per workspace group
// (the same rule as conv3x3_workspace_floats, which the caller sized the workspace with).
struct ConvPlan {
  std::int64_t hw;        // pixels per image
  std::int64_t rows;      // c * 9, the im2col rows
  std::int64_t col_size;  // rows * hw
  std::int64_t out_size;  // k * hw, one image's output
  int group;              // images per im2col group
};

ConvPlan plan_conv(const ConvShape& s, const char* what) {
  require(s.n >= 0 && s.c > 0 && s.h > 0 && s.w > 0 && s.k > 0, what);
  ConvPlan p{};
  p.hw = std::int64_t{s.h} * s.w;
  p.rows = std::int64_t{s.c} * 9;
  p.col_size = p.rows * p.hw;
  p.out_size = std::int64_t{s.k} * p.hw;
  const std::int64_t ws = cuda::conv3x3_workspace_floats(s);
  p.group = s.n == 0 ? 0 : static_cast<int>(ws / (p.col_size + p.out_size));
  blas_int(p.hw * std::max<std::int64_t>(p.group, 1));  // the widest leading dimension
  blas_int(p.rows);
  return p;
}

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

using detail::blocks_for;
using detail::check_launch;
using detail::kThreads;
using detail::require;

void im2col3x3(const float* d_image, int c, int h, int w, float* d_col, cudaStream_t stream) {
  require(c >= 0 && h >= 0 && w >= 0, "im2col3x3: negative size");
  const std::int64_t hw = std::int64_t{h} * w;
  detail::launch_im2col(d_image, 1, c, h, w, detail::ColLayout{std::int64_t{c} * 9 * hw, hw},
                        d_col, stream);
}

void col2im3x3(const float* d_col, int c, int h, int w, float* d_image, cudaStream_t stream) {
  require(c >= 0 && h >= 0 && w >= 0, "col2im3x3: negative size");
  detail::launch_col2im(d_col, 1, c, h, w, d_image, stream);
}

// Per group: im2col the images, then one batched GEMM, Y_i = W col_i, issued column-major as
// Y_i^T (hw x k) = col_i^T (hw x c*9) * W^T (c*9 x k); W is shared (stride 0).
void conv3x3_forward(const float* d_x, const float* d_weights, float* d_y, const ConvShape& shape,
                     float* d_workspace, cublasHandle_t blas, cudaStream_t stream) {
  const detail::ConvPlan p = detail::plan_conv(shape, "conv3x3_forward: invalid shape");
  if (shape.n == 0) return;
  detail::use_stream(blas, stream);
  const float one = 1.0f;
  const float zero = 0.0f;
  for (int first = 0; first < shape.n; first += p.group) {
    const int images = std::min(p.group, shape.n - first);
    detail::launch_im2col(d_x + first * std::int64_t{shape.c} * p.hw, images, shape.c, shape.h,
                          shape.w, detail::ColLayout{p.col_size, p.hw}, d_workspace, stream);
    CUBLAS_CALL(cublasSgemmStridedBatched(
        blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(p.hw), shape.k,
        static_cast<int>(p.rows), &one, d_workspace, static_cast<int>(p.hw), p.col_size,
        d_weights, static_cast<int>(p.rows), 0, &zero, d_y + first * p.out_size,
        static_cast<int>(p.hw), p.out_size, images));
  }
}

// Per group: dcol_i = W^T dy_i as one batched GEMM, issued as
// dcol_i^T (hw x c*9) = dy_i^T (hw x k) * W (k x c*9), then col2im of the whole group.
void conv3x3_backward_data(const float* d_dy, const float* d_weights, float* d_dx,
                           const ConvShape& shape, float* d_workspace, cublasHandle_t blas,
                           cudaStream_t stream) {
  const detail::ConvPlan p = detail::plan_conv(shape, "conv3x3_backward_data: invalid shape");
  if (shape.n == 0) return;
  detail::use_stream(blas, stream);
  const float one = 1.0f;
  const float zero = 0.0f;
  for (int first = 0; first < shape.n; first += p.group) {
    const int images = std::min(p.group, shape.n - first);
    CUBLAS_CALL(cublasSgemmStridedBatched(
        blas, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(p.hw), static_cast<int>(p.rows),
        shape.k, &one, d_dy + first * p.out_size, static_cast<int>(p.hw), p.out_size, d_weights,
        static_cast<int>(p.rows), 0, &zero, d_workspace, static_cast<int>(p.hw), p.col_size,
        images));
    detail::launch_col2im(d_workspace, images, shape.c, shape.h, shape.w,
                          d_dx + first * std::int64_t{shape.c} * p.hw, stream);
  }
}

// Per group, one GEMM that contracts over every pixel of every image in the group:
// dW += dy_g col_g^T with col_g (c*9 x images*hw) im2col'ed "wide" and dy_g regrouped to
// (k x images*hw), issued as dW^T (c*9 x k) += col_g * dy_g^T. The first group overwrites.
void conv3x3_backward_weights(const float* d_x, const float* d_dy, float* d_dweights,
                              const ConvShape& shape, float* d_workspace, cublasHandle_t blas,
                              cudaStream_t stream) {
  const detail::ConvPlan p = detail::plan_conv(shape, "conv3x3_backward_weights: invalid shape");
  if (shape.n == 0) {
    CUDA_CALL(cudaMemsetAsync(d_dweights, 0, shape.weight_size() * sizeof(float), stream));
    return;
  }
  detail::use_stream(blas, stream);
  const float one = 1.0f;
  for (int first = 0; first < shape.n; first += p.group) {
    const int images = std::min(p.group, shape.n - first);
    const std::int64_t width = images * p.hw;  // GEMM contraction length
    float* d_col = d_workspace;
    float* d_dy_wide = d_workspace + images * p.col_size;
    detail::launch_im2col(d_x + first * std::int64_t{shape.c} * p.hw, images, shape.c, shape.h,
                          shape.w, detail::ColLayout{p.hw, width}, d_col, stream);
    detail::regroup_kernel<<<blocks_for(images * p.out_size), kThreads, 0, stream>>>(
        d_dy + first * p.out_size, images, shape.k, p.hw, d_dy_wide);
    check_launch();
    const float beta = first == 0 ? 0.0f : 1.0f;
    CUBLAS_CALL(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(p.rows), shape.k,
                            static_cast<int>(width), &one, d_col, static_cast<int>(width),
                            d_dy_wide, static_cast<int>(width), &beta, d_dweights,
                            static_cast<int>(p.rows)));
  }
}

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
