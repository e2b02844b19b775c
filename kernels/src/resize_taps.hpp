#pragma once
// The taps of one output coordinate of the antialiased resize (resize.hpp's numerics), for the
// CPU reference and the GPU kernel alike: the same operations in the same order, so that both
// get the same bits. Every product-add is written as an fma; nothing else may be fused (the
// CPU file is compiled under the exact-float rule, the .cu with -fmad=false).

#include <cmath>
#include <cstdint>

#include "stoke/kernels/resize.hpp"

#if defined(__CUDACC__)
#define STOKE_RESIZE_HD __host__ __device__
#else
#define STOKE_RESIZE_HD
#endif

namespace stoke::kernels::detail {

// Output coordinate i of a window [start, start + extent) resampled to `out` pixels, over an
// image of `size` pixels of which [lo, hi) were decoded: the taps [first, end) and their
// weights' sum (0: the coordinate reads 0), the taps [read_first, read_end) among them that read
// pixels (the others read 0), and what resize_weight() needs: the bilinear centre, or (area) the
// span [left, right) the output pixel covers.
//
// A window inside the image is resampled as the workers resample a decoded region: taps end at
// the image's edges (their weights renormalized: the edge pixel repeats). A `padded` window, one
// that reaches past the image, is resampled as the workers resample the window made into an
// image of its own with 0 outside the source: taps end at the window's edges, and those outside
// the image read 0.
struct Taps {
  int first = 0, end = 0;
  int read_first = 0, read_end = 0;
  float centre = 0, total = 0;
  float left = 0, right = 0;
  bool area = false;
};

STOKE_RESIZE_HD inline float resize_weight(const Taps& t, int j) {
  if (t.area) {  // the part of source pixel [j, j + 1) the output pixel covers
    const float a = t.left > static_cast<float>(j) ? t.left : static_cast<float>(j);
    const float b = t.right < static_cast<float>(j + 1) ? t.right : static_cast<float>(j + 1);
    return b > a ? b - a : 0.f;
  }
  const float d = static_cast<float>(j) - t.centre + 0.5f;
  const float a = d < 0.f ? -d : d;
  return a < 1.f ? 1.f - a : 0.f;
}

STOKE_RESIZE_HD inline Taps resize_taps(float start, float extent, int out, int size, int lo,
                                        int hi, int i, bool area, bool padded) {
  Taps t;
  const float scale = extent / static_cast<float>(out);
  t.centre = fmaf(scale, static_cast<float>(i) + 0.5f, start);
  t.area = area;
  if (!padded && !(t.centre >= 0.f && t.centre < static_cast<float>(size))) return t;
  int first, end;
  if (area) {
    t.left = fmaf(scale, static_cast<float>(i), start);
    t.right = fmaf(scale, static_cast<float>(i + 1), start);
    first = static_cast<int>(floorf(t.left));
    end = static_cast<int>(ceilf(t.right));
  } else {
    first = static_cast<int>(floorf(t.centre - 0.5f));
    end = first + 2;
  }
  // Where the taps end: the image's edges, or a padded window's.
  const int edge_lo = padded ? static_cast<int>(floorf(start)) : (lo > 0 ? lo : 0);
  const int edge_hi = padded ? static_cast<int>(ceilf(start + extent)) : (hi < size ? hi : size);
  first = first < edge_lo ? edge_lo : first;
  end = end > edge_hi ? edge_hi : end;
  t.first = first;
  t.end = end > first ? end : first;
  const int read_lo = lo > 0 ? lo : 0, read_hi = hi < size ? hi : size;
  t.read_first = t.first < read_lo ? read_lo : t.first;
  t.read_end = t.end > read_hi ? read_hi : t.end;
  if (t.read_end < t.read_first) t.read_end = t.read_first;
  float total = 0.f;
  for (int j = t.first; j < t.end; ++j) total += resize_weight(t, j);
  t.total = total;
  return t;
}

// Whether an image's window reaches past it (resize_taps' `padded`).
STOKE_RESIZE_HD inline bool resize_padded(const ResizeImage& m) {
  return !(m.x >= 0.f && m.y >= 0.f && m.x + m.w <= static_cast<float>(m.image_width) &&
           m.y + m.h <= static_cast<float>(m.image_height));
}

// Whether an image's resize averages areas (it shrinks at least 2x both ways, as the workers'
// resize decides: augment/augment.cpp) rather than blending bilinearly.
STOKE_RESIZE_HD inline bool resize_by_area(const ResizeImage& m, int height, int width) {
  return m.w >= 2.f * static_cast<float>(width) && m.h >= 2.f * static_cast<float>(height);
}

// Pixel (ox, oy), channel c, of image `m` resampled: the sum over its taps, rounded.
STOKE_RESIZE_HD inline std::uint8_t resize_pixel(const ResizeImage& m, const Taps& tx,
                                                 const Taps& ty, int channels, int c) {
  if (tx.total <= 0.f || ty.total <= 0.f) return 0;
  float acc = 0.f;
  for (int y = ty.read_first; y < ty.read_end; ++y) {
    const std::uint8_t* row = m.src + static_cast<std::int64_t>(y - m.region_y) * m.src_stride +
                              static_cast<std::int64_t>(tx.read_first - m.region_x) * channels + c;
    float sum = 0.f;
    for (int x = tx.read_first; x < tx.read_end; ++x, row += channels)
      sum = fmaf(resize_weight(tx, x) / tx.total, static_cast<float>(*row), sum);
    acc = fmaf(resize_weight(ty, y) / ty.total, sum, acc);
  }
  const float r = rintf(acc);
  return static_cast<std::uint8_t>(r < 0.f ? 0.f : (r > 255.f ? 255.f : r));
}

}  // namespace stoke::kernels::detail
