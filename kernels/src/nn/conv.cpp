// 3x3 convolutions as im2col + GEMM, parallel over images. The weight gradient sums fixed blocks
// of images and adds the blocks in order, so it does not depend on the thread count.

#include <algorithm>
#include <cstring>
#include <vector>

#include "nn/blas.hpp"
#include "parallel_for.hpp"
#include "stoke/kernels/nn.hpp"

namespace stoke::nn::cpu {
namespace {

constexpr int kWeightGradBlock = 8;  // images per partial weight gradient

// im2col3x3 with col row r starting at col + r * row_stride (row_stride >= h * w), so a block of
// images can be laid side by side.
void im2col_rows(const float* image, int c, int h, int w, float* col, std::int64_t row_stride) {
  const std::int64_t plane = std::int64_t{h} * w;
  for (int ci = 0; ci < c; ++ci) {
    const float* src = image + ci * plane;
    for (int ky = 0; ky < 3; ++ky) {
      for (int kx = 0; kx < 3; ++kx) {
        float* dst = col + ((std::int64_t{ci} * 9) + ky * 3 + kx) * row_stride;
        for (int y = 0; y < h; ++y) {
          const int sy = y + ky - 1;
          float* row = dst + std::int64_t{y} * w;
          if (sy < 0 || sy >= h) {
            std::fill(row, row + w, 0.f);
            continue;
          }
          const float* srow = src + std::int64_t{sy} * w;
          // Columns x whose source x + kx - 1 lies inside the image.
          const int lo = std::max(0, 1 - kx);
          const int hi = std::min(w, w + 1 - kx);
          std::fill(row, row + lo, 0.f);
          std::memcpy(row + lo, srow + lo + kx - 1, sizeof(float) * (hi - lo));
          std::fill(row + hi, row + w, 0.f);
        }
      }
    }
  }
}

}  // namespace

void im2col3x3(const float* image, int c, int h, int w, float* col) {
  im2col_rows(image, c, h, w, col, std::int64_t{h} * w);
}

void col2im3x3(const float* col, int c, int h, int w, float* image) {
  const std::int64_t plane = std::int64_t{h} * w;
  for (int ci = 0; ci < c; ++ci) {
    float* dst = image + ci * plane;
    std::fill(dst, dst + plane, 0.f);
    for (int ky = 0; ky < 3; ++ky) {
      for (int kx = 0; kx < 3; ++kx) {
        const float* src = col + ((std::int64_t{ci} * 9) + ky * 3 + kx) * plane;
        // col row (ky, kx) at (y, x) reads image (y + ky - 1, x + kx - 1): scatter it back.
        for (int y = std::max(0, 1 - ky); y < std::min(h, h + 1 - ky); ++y) {
          const float* srow = src + std::int64_t{y} * w;
          float* drow = dst + std::int64_t{y + ky - 1} * w + (kx - 1);
          for (int x = std::max(0, 1 - kx); x < std::min(w, w + 1 - kx); ++x) drow[x] += srow[x];
        }
      }
    }
  }
}

void conv3x3_forward(const float* x, const float* weights, float* y, const ConvShape& s) {
  detail::single_threaded_blas();
  const int hw = s.h * s.w;
  const int c9 = s.c * 9;
  stoke::parallel_for(0, s.n, [&](int i) {
    float* col = detail::scratch(static_cast<std::size_t>(s.col_size()));
    im2col3x3(x + std::int64_t{i} * s.c * hw, s.c, s.h, s.w, col);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.k, hw, c9, 1.f, weights, c9, col, hw,
                0.f, y + std::int64_t{i} * s.k * hw, hw);
  });
}

void conv3x3_backward_data(const float* dy, const float* weights, float* dx, const ConvShape& s) {
  detail::single_threaded_blas();
  const int hw = s.h * s.w;
  const int c9 = s.c * 9;
  stoke::parallel_for(0, s.n, [&](int i) {
    float* dcol = detail::scratch(static_cast<std::size_t>(s.col_size()));
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, c9, hw, s.k, 1.f, weights, c9,
                dy + std::int64_t{i} * s.k * hw, hw, 0.f, dcol, hw);
    col2im3x3(dcol, s.c, s.h, s.w, dx + std::int64_t{i} * s.c * hw);
  });
}

void conv3x3_backward_weights(const float* x, const float* dy, float* dweights,
                              const ConvShape& s) {
  detail::single_threaded_blas();
  const std::int64_t hw = std::int64_t{s.h} * s.w;
  const int c9 = s.c * 9;
  const int blocks = (s.n + kWeightGradBlock - 1) / kWeightGradBlock;
  std::vector<float> partial(static_cast<std::size_t>(blocks) * s.weight_size());
  stoke::parallel_for(0, blocks, [&](int b) {
    const int first = b * kWeightGradBlock;
    const int nb = std::min(kWeightGradBlock, s.n - first);
    const std::int64_t cols = nb * hw;
    // The block's images side by side: col [c9 x nb*hw], dy [k x nb*hw]; one GEMM sums them.
    float* col = detail::scratch(static_cast<std::size_t>(c9 * cols), 0);
    float* dyb = detail::scratch(static_cast<std::size_t>(s.k * cols), 1);
    for (int j = 0; j < nb; ++j) {
      const std::int64_t image = first + j;
      im2col_rows(x + image * s.c * hw, s.c, s.h, s.w, col + j * hw, cols);
      for (int r = 0; r < s.k; ++r)
        std::memcpy(dyb + r * cols + j * hw, dy + (image * s.k + r) * hw, sizeof(float) * hw);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.k, c9, static_cast<int>(cols), 1.f, dyb,
                static_cast<int>(cols), col, static_cast<int>(cols), 0.f,
                partial.data() + b * s.weight_size(), c9);
  });
  const std::int64_t count = s.weight_size();
  stoke::parallel_for(std::int64_t{0}, count, [&](std::int64_t e) {
    float sum = 0.f;
    for (int b = 0; b < blocks; ++b) sum += partial[b * count + e];
    dweights[e] = sum;
  });
}

}  // namespace stoke::nn::cpu
