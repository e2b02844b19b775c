#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "augment/photometric_ops.hpp"
#include "augment/pixel_loops.hpp"
#include "augment/rgb8_avx2.hpp"
#include "cpu_features.hpp"

// Every value below is rounded where torch rounds it. torch stores each op's float32 result, so
// a product that it stores before adding is not fused here (the exact-float rule,
// cmake/StokeExactFloat.cmake); the adds it does fuse are written as std::fma.

namespace stoke::detail {
namespace {

using pixels::each_byte;
using pixels::identity_lut;
using pixels::Lut;
using pixels::map_bytes;
using pixels::map_channels;

// torchvision's constants are Python floats that torch rounds to float32 when it applies them;
// static_cast<float>(double) rounds the same way (a float literal could land an ulp away).
constexpr float kRedWeight = static_cast<float>(0.2989);
constexpr float kGreenWeight = static_cast<float>(0.587);
constexpr float kBlueWeight = static_cast<float>(0.114);
constexpr float kByteToUnit = static_cast<float>(1.0 / 255.0);
constexpr float kUnitToByte = static_cast<float>(255.0 + 1.0 - 1e-3);  // to_dtype_image's eps
constexpr float kSixth = static_cast<float>(1.0 / 6.0);

// _rgb_to_grayscale_image in float32: r * 0.2989, then g and b added by torch's add with alpha,
// whose vector loop is one fused multiply-add.
float luma(const std::uint8_t* p) {
  const float r = static_cast<float>(p[0]) * kRedWeight;
  const float rg = std::fma(static_cast<float>(p[1]), kGreenWeight, r);
  return std::fma(static_cast<float>(p[2]), kBlueWeight, rg);
}

// _blend(image1, image2, ratio): image1 * ratio, plus image2 * (1 - ratio) through add's alpha
// (fused).
struct Blend {
  explicit Blend(const ColorOpArgs& op) : ratio(op.args[0]), rest(one_minus(op)) {}
  std::uint8_t operator()(std::uint8_t v, float other) const {
    const float scaled = static_cast<float>(v) * ratio;
    return clamp_to_byte(std::fma(other, rest, scaled));
  }
  float ratio, rest;
};

// torch.mean of the grayscale (floored for 3 channels): a float32 sum divided by the count. The
// sum is exact while the total stays below 2^24 (up to 65,793 pixels, 256x256 included: every
// partial sum is then an integer float32 holds), which the integer sum here reproduces. Past
// that, torch's sum depends on its vector width and thread count and can sit an ulp or two from
// this correctly rounded one: one ulp of the mean moved a table entry in 0.09% of random draws
// of factor and mean, one byte value of 256 when it did, and 80 runs of contrast on images of
// 0.26 to 0.92 million pixels gave torch's bytes to the last.
#if STOKE_AVX2_FMA_DISPATCH
// luma() of eight pixels: the same product and fused multiply-adds.
STOKE_TARGET_AVX2_FMA inline __m256 luma8(const rgb8::Channels& c) {
  const __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(c.r), _mm256_set1_ps(kRedWeight));
  const __m256 rg = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c.g), _mm256_set1_ps(kGreenWeight), r);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(c.b), _mm256_set1_ps(kBlueWeight), rg);
}

// The sum of the truncated lumas of a row's first `pixels` pixels (a multiple of 8).
STOKE_TARGET_AVX2_FMA std::uint64_t luma_sum_avx2(const std::uint8_t* p, int pixels) {
  __m256i lanes = _mm256_setzero_si256();
  for (int x = 0; x < pixels; x += 8, p += 24)
    lanes = _mm256_add_epi32(lanes, _mm256_cvttps_epi32(luma8(rgb8::load(p))));
  return rgb8::lane_sum(lanes);
}
#endif

float gray_mean(const Pixels& im) {
  const std::uint64_t sum = pixels::sum_of_lumas(
      im,
      [](const std::uint8_t* p, int n) -> std::uint64_t {
#if STOKE_AVX2_FMA_DISPATCH
        return luma_sum_avx2(p, n);
#else
        return (void)p, (void)n, 0;
#endif
      },
      [](const std::uint8_t* p) { return static_cast<std::uint64_t>(luma(p)); });
  const auto pixels = static_cast<std::uint64_t>(im.height) * static_cast<std::uint64_t>(im.width);
  return static_cast<float>(sum) / static_cast<float>(pixels);
}

#if STOKE_AVX2_FMA_DISPATCH
// saturation on a row's first `pixels` pixels (a multiple of 8).
STOKE_TARGET_AVX2_FMA void saturation_avx2(std::uint8_t* p, int pixels, const Blend& blend) {
  const __m256 ratio = _mm256_set1_ps(blend.ratio), rest = _mm256_set1_ps(blend.rest);
  for (int x = 0; x < pixels; x += 8, p += 24) {
    const rgb8::Channels c = rgb8::load(p);
    const __m256 gray = _mm256_floor_ps(luma8(c));
    __m256i out[3];
    const __m256i in[3] = {c.r, c.g, c.b};
    for (int k = 0; k < 3; ++k)
      out[k] = rgb8::clamp_to_bytes(
          _mm256_fmadd_ps(gray, rest, _mm256_mul_ps(_mm256_cvtepi32_ps(in[k]), ratio)));
    rgb8::store(p, out[0], out[1], out[2]);
  }
}
#endif

struct Hsv {
  float h, s, v;
};

// _rgb_to_hsv, operation by operation; the masks multiply as 0.0 or 1.0, as torch's do.
Hsv rgb_to_hsv(float r, float g, float b) {
  const float maxc = std::max({r, g, b});
  const float minc = std::min({r, g, b});
  const bool eqc = maxc == minc;
  const float range = maxc - minc;
  const float s = range / (eqc ? 1.0f : maxc);
  const float divisor = eqc ? 1.0f : range;
  const float rc = (maxc - r) / divisor;
  const float gc = (maxc - g) / divisor;
  const float bc = (maxc - b) / divisor;
  const bool max_is_not_r = maxc != r;
  const bool max_is_g = maxc == g;
  const float hg = ((rc + 2.0f) - bc) * static_cast<float>(max_is_g && max_is_not_r);
  const float hr = (bc - gc) * static_cast<float>(!max_is_not_r);
  const float hb = ((gc + 4.0f) - rc) * static_cast<float>(max_is_not_r && !max_is_g);
  const float sum = (hr + hg) + hb;
  const float h = std::fmod(sum * kSixth + 1.0f, 1.0f);
  return {h, s, maxc};
}

// torch.remainder for floats: fmod, moved into [0, b) when the signs differ.
float remainder_one(float x) {
  const float mod = std::fmod(x, 1.0f);
  return mod < 0.0f ? mod + 1.0f : mod;
}

// _hsv_to_rgb, writing bytes through to_dtype_image (`* (256 - 1e-3)`, truncated).
void hsv_to_rgb(const Hsv& hsv, std::uint8_t* out) {
  const float h6 = hsv.h * 6.0f;
  const float i_floor = std::floor(h6);
  const float f = h6 - i_floor;
  const int i = ((static_cast<int>(i_floor) % 6) + 6) % 6;  // h6 may round up to 6
  const float sxf = hsv.s * f;
  const float one_minus_s = 1.0f - hsv.s;
  const float q = std::clamp((1.0f - sxf) * hsv.v, 0.0f, 1.0f);
  const float t = std::clamp((sxf + one_minus_s) * hsv.v, 0.0f, 1.0f);
  const float p = std::clamp(one_minus_s * hsv.v, 0.0f, 1.0f);
  const std::array<float, 4> vpqt = {hsv.v, p, q, t};
  static constexpr int kSelect[3][6] = {{0, 2, 1, 1, 3, 0}, {3, 0, 0, 2, 1, 1}, {1, 1, 3, 0, 0, 2}};
  for (int k = 0; k < 3; ++k)
    out[k] = static_cast<std::uint8_t>(vpqt[static_cast<std::size_t>(kSelect[k][i])] * kUnitToByte);
}

#if STOKE_AVX2_FMA_DISPATCH
// x where the mask lanes are set, else 0 (torch's mask multiplied as 1.0 or 0.0).
STOKE_TARGET_AVX2_FMA inline __m256 times_mask(__m256 x, __m256 mask) {
  return _mm256_mul_ps(x, _mm256_and_ps(mask, _mm256_set1_ps(1.0f)));
}

STOKE_TARGET_AVX2_FMA inline __m256 clamp_unit(__m256 x) {
  return _mm256_min_ps(_mm256_max_ps(x, _mm256_setzero_ps()), _mm256_set1_ps(1.0f));
}

// a where the mask is set, else b.
STOKE_TARGET_AVX2_FMA inline __m256 pick(__m256 mask, __m256 a, __m256 b) {
  return _mm256_blendv_ps(b, a, mask);
}

// hue on a row's first `pixels` pixels (a multiple of 8): rgb_to_hsv, remainder_one and
// hsv_to_rgb operation by operation, 8 pixels a step. For the values they see, fmod(x, 1) is
// x - trunc(x): the hue before the shift lies in [5/6, 11/6) and after it in [-1/2, 3/2), where
// that difference is exact, as fmod is (a zero's sign may differ, which no later step reads).
STOKE_TARGET_AVX2_FMA void hue_avx2(std::uint8_t* p, int pixels, float factor) {
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  const __m256 to_unit = _mm256_set1_ps(kByteToUnit), to_byte = _mm256_set1_ps(kUnitToByte);
  const __m256 shift = _mm256_set1_ps(factor);
  constexpr int kTrunc = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
  for (int x = 0; x < pixels; x += 8, p += 24) {
    const rgb8::Channels c = rgb8::load(p);
    const __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(c.r), to_unit);
    const __m256 g = _mm256_mul_ps(_mm256_cvtepi32_ps(c.g), to_unit);
    const __m256 b = _mm256_mul_ps(_mm256_cvtepi32_ps(c.b), to_unit);
    // _rgb_to_hsv
    const __m256 maxc = _mm256_max_ps(_mm256_max_ps(r, g), b);
    const __m256 minc = _mm256_min_ps(_mm256_min_ps(r, g), b);
    const __m256 eqc = _mm256_cmp_ps(maxc, minc, _CMP_EQ_OQ);
    const __m256 range = _mm256_sub_ps(maxc, minc);
    const __m256 s = _mm256_div_ps(range, pick(eqc, one, maxc));
    const __m256 divisor = pick(eqc, one, range);
    const __m256 rc = _mm256_div_ps(_mm256_sub_ps(maxc, r), divisor);
    const __m256 gc = _mm256_div_ps(_mm256_sub_ps(maxc, g), divisor);
    const __m256 bc = _mm256_div_ps(_mm256_sub_ps(maxc, b), divisor);
    const __m256 max_is_r = _mm256_cmp_ps(maxc, r, _CMP_EQ_OQ);
    const __m256 max_is_g = _mm256_cmp_ps(maxc, g, _CMP_EQ_OQ);
    const __m256 hg = times_mask(_mm256_sub_ps(_mm256_add_ps(rc, _mm256_set1_ps(2.0f)), bc),
                                 _mm256_andnot_ps(max_is_r, max_is_g));
    const __m256 hr = times_mask(_mm256_sub_ps(bc, gc), max_is_r);
    const __m256 hb = times_mask(_mm256_sub_ps(_mm256_add_ps(gc, _mm256_set1_ps(4.0f)), rc),
                                 _mm256_andnot_ps(_mm256_or_ps(max_is_r, max_is_g),
                                                  _mm256_castsi256_ps(_mm256_set1_epi32(-1))));
    const __m256 sum = _mm256_add_ps(_mm256_add_ps(hr, hg), hb);
    const __m256 h0 = _mm256_add_ps(_mm256_mul_ps(sum, _mm256_set1_ps(kSixth)), one);
    const __m256 h1 = _mm256_sub_ps(h0, _mm256_round_ps(h0, kTrunc));
    // remainder_one(h + factor)
    const __m256 y = _mm256_add_ps(h1, shift);
    const __m256 mod = _mm256_sub_ps(y, _mm256_round_ps(y, kTrunc));
    const __m256 h = pick(_mm256_cmp_ps(mod, zero, _CMP_LT_OQ), _mm256_add_ps(mod, one), mod);
    // _hsv_to_rgb
    const __m256 h6 = _mm256_mul_ps(h, _mm256_set1_ps(6.0f));
    const __m256 i_floor = _mm256_round_ps(h6, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_sub_ps(h6, i_floor);
    const __m256 sxf = _mm256_mul_ps(s, f);
    const __m256 one_minus_s = _mm256_sub_ps(one, s);
    const __m256 v = maxc;
    const __m256 q = clamp_unit(_mm256_mul_ps(_mm256_sub_ps(one, sxf), v));
    const __m256 t = clamp_unit(_mm256_mul_ps(_mm256_add_ps(sxf, one_minus_s), v));
    const __m256 pp = clamp_unit(_mm256_mul_ps(one_minus_s, v));
    // i = i_floor mod 6: h lies in [0, 1], so i_floor in 0..6, and 6 is sector 0.
    const __m256 is1 = _mm256_cmp_ps(i_floor, one, _CMP_EQ_OQ);
    const __m256 is2 = _mm256_cmp_ps(i_floor, _mm256_set1_ps(2.0f), _CMP_EQ_OQ);
    const __m256 is3 = _mm256_cmp_ps(i_floor, _mm256_set1_ps(3.0f), _CMP_EQ_OQ);
    const __m256 is4 = _mm256_cmp_ps(i_floor, _mm256_set1_ps(4.0f), _CMP_EQ_OQ);
    const __m256 is5 = _mm256_cmp_ps(i_floor, _mm256_set1_ps(5.0f), _CMP_EQ_OQ);
    // kSelect's rows: r takes v q p p t v, g takes t v v q p p, b takes p p t v v q.
    const __m256 out_r = pick(is4, t, pick(_mm256_or_ps(is2, is3), pp, pick(is1, q, v)));
    const __m256 out_g =
        pick(_mm256_or_ps(is4, is5), pp, pick(is3, q, pick(_mm256_or_ps(is1, is2), v, t)));
    const __m256 out_b = pick(is5, q, pick(_mm256_or_ps(is3, is4), v, pick(is2, t, pp)));
    rgb8::store(p, _mm256_cvttps_epi32(_mm256_mul_ps(out_r, to_byte)),
                _mm256_cvttps_epi32(_mm256_mul_ps(out_g, to_byte)),
                _mm256_cvttps_epi32(_mm256_mul_ps(out_b, to_byte)));
  }
}
#endif

#if STOKE_AVX2_FMA_DISPATCH
STOKE_TARGET_AVX2_FMA void grayscale_avx2(std::uint8_t* p, int pixels) {
  for (int x = 0; x < pixels; x += 8, p += 24) {
    const __m256i l = _mm256_cvttps_epi32(luma8(rgb8::load(p)));
    rgb8::store(p, l, l, l);
  }
}
#endif

using Histogram = std::array<std::uint64_t, 256>;

// equalize_image's PIL-style table: `step` is the count of pixels below the channel's largest
// value, over 255; a channel with step 0 keeps its values (valid_equalization).
Lut equalize_lut(const Histogram& hist, std::uint64_t pixels) {
  int top = 255;
  while (hist[static_cast<std::size_t>(top)] == 0) --top;  // cum_hist.argmax()
  const std::uint64_t step = (pixels - hist[static_cast<std::size_t>(top)]) / 255;
  if (step == 0) return identity_lut();
  Lut lut;
  lut[0] = 0;
  std::uint64_t cum = 0;
  for (std::size_t k = 1; k < 256; ++k) {
    cum += hist[k - 1];
    lut[k] = static_cast<std::uint8_t>(std::min<std::uint64_t>((cum + step / 2) / step, 255));
  }
  return lut;
}

// autocontrast_image: (v - min) / ((max - min) * (1/255)) in float32; a flat channel gets
// min 0 and scale 1, which keeps it.
Lut autocontrast_lut(std::uint8_t lo, std::uint8_t hi) {
  if (lo == hi) return identity_lut();
  const float inv_scale = (static_cast<float>(hi) - static_cast<float>(lo)) * kByteToUnit;
  Lut lut;
  for (int v = 0; v < 256; ++v)
    lut[v] = clamp_to_byte((static_cast<float>(v) - static_cast<float>(lo)) / inv_scale);
  return lut;
}

}  // namespace

void brightness(const Pixels& im, float factor) {
  Lut lut;
  for (int v = 0; v < 256; ++v) lut[v] = clamp_to_byte(static_cast<float>(v) * factor);
  map_bytes(im, lut);
}

// The mean reaches torch's add as a scalar. Its vector loop fuses the multiply-add, as here; the
// compiled loop for the last elements of each thread's range (fewer than 16) rounds the product
// first for up to 12 of them. That changed a table entry in 0.03% of random draws of factor and
// mean, and then only the bytes of that value that fall among those last elements.
void contrast(const Pixels& im, const ColorOpArgs& op) {
  const float mean = gray_mean(im);
  const Blend blend(op);
  Lut lut;
  for (int v = 0; v < 256; ++v) lut[v] = blend(static_cast<std::uint8_t>(v), mean);
  map_bytes(im, lut);
}

void saturation(const Pixels& im, const ColorOpArgs& op) {
  if (im.channels == 1) return;  // as torchvision (and PIL) do
  const Blend blend(op);
  pixels::each_rgb_pixel(
      im,
      [&](std::uint8_t* p, int n) {
#if STOKE_AVX2_FMA_DISPATCH
        saturation_avx2(p, n, blend);
#else
        (void)p, (void)n;
#endif
      },
      [&](std::uint8_t* p) {
        const float gray = std::floor(luma(p));
        for (int k = 0; k < 3; ++k) p[k] = blend(p[k], gray);
      });
}

void hue(const Pixels& im, float factor) {
  if (im.channels == 1) return;  // as torchvision (and PIL) do
  pixels::each_rgb_pixel(
      im,
      [factor](std::uint8_t* p, int n) {
#if STOKE_AVX2_FMA_DISPATCH
        hue_avx2(p, n, factor);
#else
        (void)p, (void)n, (void)factor;
#endif
      },
      [factor](std::uint8_t* p) {
        Hsv hsv = rgb_to_hsv(static_cast<float>(p[0]) * kByteToUnit,
                             static_cast<float>(p[1]) * kByteToUnit,
                             static_cast<float>(p[2]) * kByteToUnit);
        hsv.h = remainder_one(hsv.h + factor);
        hsv_to_rgb(hsv, p);
      });
}

void grayscale(const Pixels& im) {
  if (im.channels == 1) return;
  pixels::each_rgb_pixel(
      im,
      [](std::uint8_t* p, int n) {
#if STOKE_AVX2_FMA_DISPATCH
        grayscale_avx2(p, n);
#else
        (void)p, (void)n;
#endif
      },
      [](std::uint8_t* p) {
        const auto l = static_cast<std::uint8_t>(luma(p));  // at most 254.97: white becomes 254
        p[0] = p[1] = p[2] = l;
      });
}

// For a whole byte v, v >= threshold exactly when v >= ceil(threshold).
void solarize(const Pixels& im, float threshold) {
  const float first = std::ceil(threshold);  // the smallest level inverted
  if (first > 255.f) return;
  const std::uint8_t t = static_cast<std::uint8_t>(std::max(first, 0.f));
  each_byte(im, [t](std::uint8_t v) { return v >= t ? static_cast<std::uint8_t>(255 - v) : v; });
}

void posterize(const Pixels& im, int bits) {
  if (bits >= 8) return;
  const auto mask = static_cast<std::uint8_t>(((1 << bits) - 1) << (8 - bits));
  each_byte(im, [mask](std::uint8_t v) { return static_cast<std::uint8_t>(v & mask); });
}

void invert(const Pixels& im) {
  each_byte(im, [](std::uint8_t v) { return static_cast<std::uint8_t>(255 - v); });
}

void equalize(const Pixels& im) {
  const pixels::Histograms hist = pixels::histograms(im);
  const auto pixels = static_cast<std::uint64_t>(im.height) * static_cast<std::uint64_t>(im.width);
  std::array<Lut, 3> luts;
  for (std::size_t k = 0; k < static_cast<std::size_t>(im.channels); ++k)
    luts[k] = equalize_lut(hist[k], pixels);
  map_channels(im, luts);
}

void autocontrast(const Pixels& im) {
  const pixels::ChannelRanges range = pixels::channel_ranges(im);
  std::array<Lut, 3> luts;
  for (std::size_t k = 0; k < static_cast<std::size_t>(im.channels); ++k)
    luts[k] = autocontrast_lut(range.lo[k], range.hi[k]);
  map_channels(im, luts);
}

}  // namespace stoke::detail
