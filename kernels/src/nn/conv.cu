// 3x3 convolutions on the GPU (nn_cuda.hpp): im2col a group of images into the workspace, then
// one batched GEMM in cuBLAS; the adjoint is a gather (col2im), so it needs no atomics.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "cuda_check.hpp"
#include "nn/cuda_support.cuh"
#include "stoke/kernels/nn.hpp"
#include "stoke/kernels/nn_cuda.hpp"

namespace stoke::nn::detail {
namespace {

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

// ---------------------------------------------------------------- GEMM plan

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

}  // namespace
}  // namespace stoke::nn::detail

namespace stoke::nn::cuda {

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

}  // namespace stoke::nn::cuda
