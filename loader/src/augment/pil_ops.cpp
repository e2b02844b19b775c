#include "augment/pil_ops.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "augment/pil_warps.hpp"
#include "augment/pixel_loops.hpp"
#include "augment/rgb8_avx2.hpp"
#include "cpu_features.hpp"

#if STOKE_AVX2_FMA_DISPATCH
#include <immintrin.h>
#endif

// Pillow's wheels are built for baseline x86-64, where the compiler has no fused multiply-add
// to contract into, so every product below is rounded before its add (the exact-float rule,
// cmake/StokeExactFloat.cmake).

namespace stoke::detail {
namespace {

using pixels::each_byte;
using pixels::for_each_pixel;
using pixels::histograms;
using pixels::Histograms;
using pixels::identity_lut;
using pixels::Lut;
using pixels::map_bytes;
using pixels::map_channels;

// Image.blend(im1, im2, alpha) for one byte of each (Blend.c): alpha is a float32, and the sum
// in1 + alpha * (in2 - in1) is float32, truncated. Blend.c clamps it to [0, 255] first only when
// alpha is outside [0, 1]; inside, the sum cannot leave [0, 255], so clamping always gives the
// same bytes and keeps the loops free of branches.
struct PilBlend {
  explicit PilBlend(float a) : alpha(a) {}
  std::uint8_t operator()(std::uint8_t in1, std::uint8_t in2) const {
    const float v = static_cast<float>(in1) +
                    alpha * static_cast<float>(static_cast<int>(in2) - static_cast<int>(in1));
    return static_cast<std::uint8_t>(std::min(std::max(v, 0.0f), 255.0f));
  }
  float alpha;
};

// Convert.c's L24: RGB to L with rounding, in integers.
std::uint8_t pil_luma(const std::uint8_t* p) {
  return static_cast<std::uint8_t>((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
}

#if STOKE_AVX2_FMA_DISPATCH
// pil_luma() of eight pixels, as 32-bit integers.
STOKE_TARGET_AVX2_FMA inline __m256i pil_luma8(const rgb8::Channels& c) {
  const __m256i sum =
      _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(c.r, _mm256_set1_epi32(19595)),
                                        _mm256_mullo_epi32(c.g, _mm256_set1_epi32(38470))),
                       _mm256_add_epi32(_mm256_mullo_epi32(c.b, _mm256_set1_epi32(7471)),
                                        _mm256_set1_epi32(0x8000)));
  return _mm256_srli_epi32(sum, 16);
}

// The sum of pil_luma over a row's first `pixels` pixels (a multiple of 8).
STOKE_TARGET_AVX2_FMA std::uint64_t pil_luma_sum_avx2(const std::uint8_t* p, int pixels) {
  __m256i lanes = _mm256_setzero_si256();
  for (int x = 0; x < pixels; x += 8, p += 24)
    lanes = _mm256_add_epi32(lanes, pil_luma8(rgb8::load(p)));
  return rgb8::lane_sum(lanes);
}
#endif

// ImageStat.Stat(image.convert("L")).mean[0], then int(mean + 0.5): the integer sum over the
// count in double, as Python divides two ints (exact below 2^53).
int contrast_mean(const Pixels& im) {
  const std::uint64_t sum = pixels::sum_of_lumas(
      im,
      [](const std::uint8_t* p, int n) -> std::uint64_t {
#if STOKE_AVX2_FMA_DISPATCH
        return pil_luma_sum_avx2(p, n);
#else
        return (void)p, (void)n, 0;
#endif
      },
      [](const std::uint8_t* p) -> std::uint64_t { return pil_luma(p); });
  const double count = static_cast<double>(im.height) * static_cast<double>(im.width);
  return static_cast<int>(static_cast<double>(sum) / count + 0.5);
}

// ImageFilter.SMOOTH as Filter.c's ImagingFilter3x3 computes it: weights 1/13 and 5/13 as
// float32, each row's three products summed left to right, the rows summed below, centre,
// above onto 0.5, truncated. Border pixels keep their values.
// One interior row: `center` the row in the source, `line` its bytes, `c` the channels.
[[gnu::always_inline]] inline void smooth_row(std::uint8_t* o, const std::uint8_t* center,
                                              std::ptrdiff_t line, std::ptrdiff_t c) {
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
  const auto row = [c, k1](const std::uint8_t* p, float middle) {
    return static_cast<float>(p[-c]) * k1 + static_cast<float>(p[0]) * middle +
           static_cast<float>(p[c]) * k1;
  };
  for (std::ptrdiff_t i = c; i < line - c; ++i) {
    const std::uint8_t* p = center + i;
    float ss = 0.5f;
    ss += row(p + line, k1);
    ss += row(p, k5);
    ss += row(p - line, k1);
    o[i] = static_cast<std::uint8_t>(std::clamp(ss, 0.0f, 255.0f));
  }
}

// p[i] = PilBlend(alpha)(other[i], p[i]) over n bytes (ImageEnhance's blend of the degenerate
// image `other` towards the image).
[[gnu::always_inline]] inline void blend_row(std::uint8_t* p, const std::uint8_t* other,
                                             std::size_t n, float alpha) {
  const PilBlend blend(alpha);
  for (std::size_t i = 0; i < n; ++i) p[i] = blend(other[i], p[i]);
}

#if STOKE_AVX2_FMA_DISPATCH
// The two rows compiled for AVX2, which the compiler vectorizes.
STOKE_TARGET_AVX2_FMA void smooth_row_avx2(std::uint8_t* o, const std::uint8_t* center,
                                           std::ptrdiff_t line, std::ptrdiff_t c) {
  smooth_row(o, center, line, c);
}

STOKE_TARGET_AVX2_FMA void blend_row_avx2(std::uint8_t* p, const std::uint8_t* other, std::size_t n,
                                          float alpha) {
  blend_row(p, other, n, alpha);
}
#endif

void smooth(const Pixels& im, const std::uint8_t* src, std::vector<std::uint8_t>& out) {
  const std::size_t line = im.row_bytes();
  out.assign(src, src + line * static_cast<std::size_t>(im.height));
  const auto c = static_cast<std::ptrdiff_t>(im.channels);
  const bool avx2 = has_avx2_fma();
  for (int y = 1; y + 1 < im.height; ++y) {
    const std::uint8_t* center = src + static_cast<std::size_t>(y) * line;
    std::uint8_t* o = out.data() + static_cast<std::size_t>(y) * line;
#if STOKE_AVX2_FMA_DISPATCH
    if (avx2) {
      smooth_row_avx2(o, center, static_cast<std::ptrdiff_t>(line), c);
      continue;
    }
#endif
    (void)avx2;
    smooth_row(o, center, static_cast<std::ptrdiff_t>(line), c);
  }
}

PilFilter filter_of(float v) {
  return static_cast<int>(v) == static_cast<int>(PilFilter::kBilinear) ? PilFilter::kBilinear
                                                                       : PilFilter::kBicubic;
}

PilFill fill_of(const AppliedOp& op) {
  const auto level = [](float v) { return static_cast<std::uint8_t>(std::clamp(v, 0.f, 255.f)); };
  return {level(op.args[2]), level(op.args[3]), level(op.args[4])};
}

}  // namespace

void pil_autocontrast(const Pixels& im) {
  // ImageOps.autocontrast's histogram ends: the first and last values present.
  const pixels::ChannelRanges range = pixels::channel_ranges(im);
  std::array<Lut, 3> luts;
  for (std::size_t k = 0; k < static_cast<std::size_t>(im.channels); ++k) {
    const int lo = range.lo[k], hi = range.hi[k];
    if (hi <= lo) {
      luts[k] = identity_lut();
      continue;
    }
    const double scale = 255.0 / (hi - lo);
    const double offset = -lo * scale;
    for (int v = 0; v < 256; ++v) {
      const int ix = static_cast<int>(v * scale + offset);
      luts[k][static_cast<std::size_t>(v)] = static_cast<std::uint8_t>(std::clamp(ix, 0, 255));
    }
  }
  map_channels(im, luts);
}

void pil_equalize(const Pixels& im) {
  const Histograms h = histograms(im);
  std::array<Lut, 3> luts;
  for (std::size_t k = 0; k < static_cast<std::size_t>(im.channels); ++k) {
    std::uint64_t total = 0, last = 0;
    int used = 0;
    for (const std::uint64_t n : h[k]) {
      if (n == 0) continue;
      total += n;
      last = n;
      ++used;
    }
    const std::uint64_t step = used <= 1 ? 0 : (total - last) / 255;
    if (step == 0) {
      luts[k] = identity_lut();
      continue;
    }
    std::uint64_t n = step / 2;
    for (std::size_t i = 0; i < 256; ++i) {
      luts[k][i] = static_cast<std::uint8_t>(std::min<std::uint64_t>(n / step, 255));
      n += h[k][i];
    }
  }
  map_channels(im, luts);
}

void pil_invert(const Pixels& im) {
  each_byte(im, [](std::uint8_t v) { return static_cast<std::uint8_t>(255 - v); });
}

void pil_posterize(const Pixels& im, int bits) {
  if (bits >= 8) return;
  const auto mask =
      bits <= 0 ? std::uint8_t{0} : static_cast<std::uint8_t>(0xff << (8 - bits) & 0xff);
  each_byte(im, [mask](std::uint8_t v) { return static_cast<std::uint8_t>(v & mask); });
}

void pil_solarize(const Pixels& im, int threshold) {
  each_byte(im, [threshold](std::uint8_t v) {
    return v < threshold ? v : static_cast<std::uint8_t>(255 - v);
  });
}

void pil_solarize_add(const Pixels& im, int add, int threshold) {
  Lut lut;
  for (int i = 0; i < 256; ++i)
    lut[static_cast<std::size_t>(i)] =
        static_cast<std::uint8_t>(i < threshold ? std::clamp(i + add, 0, 255) : i);
  map_bytes(im, lut);
}

void pil_blend(const Pixels& im, const std::uint8_t* other, float alpha) {
  const PilBlend blend(alpha);
  const std::size_t line = im.row_bytes();
  for (int y = 0; y < im.height; ++y) {
    std::uint8_t* p = im.row(y);
    const std::uint8_t* q = other + static_cast<std::size_t>(y) * line;
    for (std::size_t i = 0; i < line; ++i) p[i] = blend(p[i], q[i]);
  }
}

#if STOKE_AVX2_FMA_DISPATCH
// PilBlend of eight pairs given as 32-bit integers: the same float32 product and sum.
STOKE_TARGET_AVX2_FMA inline __m256i pil_blend8(__m256i in1, __m256i in2, __m256 alpha) {
  const __m256 v =
      _mm256_add_ps(_mm256_cvtepi32_ps(in1),
                    _mm256_mul_ps(alpha, _mm256_cvtepi32_ps(_mm256_sub_epi32(in2, in1))));
  return rgb8::clamp_to_bytes(v);
}

// pil_color on a row's first `pixels` pixels (a multiple of 8).
STOKE_TARGET_AVX2_FMA void pil_color_avx2(std::uint8_t* p, int pixels, float factor) {
  const __m256 alpha = _mm256_set1_ps(factor);
  for (int x = 0; x < pixels; x += 8, p += 24) {
    const rgb8::Channels c = rgb8::load(p);
    const __m256i grey = pil_luma8(c);
    rgb8::store(p, pil_blend8(grey, c.r, alpha), pil_blend8(grey, c.g, alpha),
                pil_blend8(grey, c.b, alpha));
  }
}
#endif

void pil_color(const Pixels& im, float factor) {
  if (im.channels == 1) return;  // Color's L image is the image itself: blended with itself
  const PilBlend blend(factor);
  pixels::each_rgb_pixel(
      im,
      [&](std::uint8_t* p, int n) {
#if STOKE_AVX2_FMA_DISPATCH
        pil_color_avx2(p, n, factor);
#else
        (void)p, (void)n;
#endif
      },
      [&](std::uint8_t* p) {
        const std::uint8_t grey = pil_luma(p);
        for (int k = 0; k < 3; ++k) p[k] = blend(grey, p[k]);
      });
}

void pil_contrast(const Pixels& im, float factor) {
  const auto mean = static_cast<std::uint8_t>(contrast_mean(im));
  const PilBlend blend(factor);
  Lut lut;
  for (int v = 0; v < 256; ++v)
    lut[static_cast<std::size_t>(v)] = blend(mean, static_cast<std::uint8_t>(v));
  map_bytes(im, lut);
}

void pil_brightness(const Pixels& im, float factor) {
  const PilBlend blend(factor);
  Lut lut;
  for (int v = 0; v < 256; ++v)
    lut[static_cast<std::size_t>(v)] = blend(0, static_cast<std::uint8_t>(v));
  map_bytes(im, lut);
}

void pil_sharpness(const Pixels& im, float factor, std::vector<std::uint8_t>& copy,
                   std::vector<std::uint8_t>& smoothed) {
  if (im.height < 3 || im.width < 3) return;  // SMOOTH copies the image: blended with itself
  smooth(im, tight_copy(im, copy), smoothed);
  const std::size_t line = im.row_bytes();
  const bool avx2 = has_avx2_fma();
  for (int y = 1; y + 1 < im.height; ++y) {
    std::uint8_t* p = im.row(y);
    const std::uint8_t* s = smoothed.data() + static_cast<std::size_t>(y) * line;
#if STOKE_AVX2_FMA_DISPATCH
    if (avx2) {
      blend_row_avx2(p, s, line, factor);
      continue;
    }
#endif
    (void)avx2;
    blend_row(p, s, line, factor);
  }
}

void apply_pil_op(const AppliedOp& op, const Pixels& im, PhotometricScratch& scratch) {
  std::vector<std::uint8_t>& copy = scratch.u0;
  const float a = op.args[0];
  const auto whole = [](float v) { return static_cast<int>(std::clamp(v, -1024.f, 1024.f)); };
  const auto affine = [&](std::array<double, 6> m) {
    pil_affine(im, m, filter_of(op.args[1]), fill_of(op), copy);
  };
  const double d = a;
  switch (op.op) {
    case ImageOp::kPilAutocontrast:
      return pil_autocontrast(im);
    case ImageOp::kPilEqualize:
      return pil_equalize(im);
    case ImageOp::kPilInvert:
      return pil_invert(im);
    case ImageOp::kPilPosterize:
      return pil_posterize(im, whole(a));
    case ImageOp::kPilSolarize:
      return pil_solarize(im, whole(a));
    case ImageOp::kPilSolarizeAdd:
      return pil_solarize_add(im, whole(a), whole(op.args[1]));
    case ImageOp::kPilColor:
      return pil_color(im, a);
    case ImageOp::kPilContrast:
      return pil_contrast(im, a);
    case ImageOp::kPilBrightness:
      return pil_brightness(im, a);
    case ImageOp::kPilSharpness:
      return pil_sharpness(im, a, copy, scratch.u1);
    case ImageOp::kPilRotate:
      return pil_rotate(im, d, filter_of(op.args[1]), fill_of(op), copy);
    case ImageOp::kPilShearX:
      return affine({1, d, 0, 0, 1, 0});
    case ImageOp::kPilShearY:
      return affine({1, 0, 0, d, 1, 0});
    case ImageOp::kPilTranslateXRel:  // timm's pixels = pct * img.size[0], in double
      return affine({1, 0, d * im.width, 0, 1, 0});
    case ImageOp::kPilTranslateYRel:
      return affine({1, 0, 0, 0, 1, d * im.height});
    default:
      return;
  }
}

}  // namespace stoke::detail
