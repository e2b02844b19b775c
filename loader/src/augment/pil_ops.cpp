#include "augment/pil_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>

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

// Geometry.c's FLOOR and its bounds: the pixel a filter starts from.
int pil_floor(double v) {
  return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v);
}

struct Source {
  const std::uint8_t* data;
  int width, height, channels;
  std::size_t line;
  int clip_x(int x) const { return x < 0 ? 0 : (x < width ? x : width - 1); }
  int clip_y(int y) const { return y < 0 ? 0 : (y < height ? y : height - 1); }
  bool has_row(int y) const { return y >= 0 && y < height; }
  const std::uint8_t* row(int y) const { return data + static_cast<std::size_t>(y) * line; }
  std::uint8_t at(int y, int x, int k) const {
    return row(y)[static_cast<std::size_t>(x) * static_cast<std::size_t>(channels) +
                  static_cast<std::size_t>(k)];
  }
};

// bilinear_filter32RGB (and bilinear_filter8) for C channels: false when the point is outside
// the image.
template <int C>
bool bilinear(const Source& s, double xin, double yin, std::uint8_t* out) {
  if (xin < 0.0 || xin >= s.width || yin < 0.0 || yin >= s.height) return false;
  xin -= 0.5;
  yin -= 0.5;
  const int x = pil_floor(xin), y = pil_floor(yin);
  const double dx = xin - x, dy = yin - y;
  const std::size_t x0 = static_cast<std::size_t>(s.clip_x(x)) * C;
  const std::size_t x1 = static_cast<std::size_t>(s.clip_x(x + 1)) * C;
  const std::uint8_t* r0 = s.row(s.clip_y(y));
  const std::uint8_t* r1 = s.has_row(y + 1) ? s.row(y + 1) : nullptr;
  for (int k = 0; k < C; ++k) {
    const int a = r0[x0 + k], b = r0[x1 + k];
    double v1 = a + (b - a) * dx;
    double v2 = v1;
    if (r1 != nullptr) {
      const int c = r1[x0 + k], d = r1[x1 + k];
      v2 = c + (d - c) * dx;
    }
    v1 = v1 + (v2 - v1) * dy;
    out[k] = static_cast<std::uint8_t>(v1);
  }
  return true;
}

// Geometry.c's BICUBIC (a = -1): the first pass on the bytes, whose coefficients are integers.
double cubic(int v1, int v2, int v3, int v4, double d) {
  const int p2 = -v1 + v3;
  const int p3 = 2 * (v1 - v2) + v3 - v4;
  const int p4 = -v1 + v2 - v3 + v4;
  return v2 + d * (p2 + d * (p3 + d * p4));
}

// The second pass, on doubles, in the same order.
double cubic(double v1, double v2, double v3, double v4, double d) {
  const double p2 = -v1 + v3;
  const double p3 = 2 * (v1 - v2) + v3 - v4;
  const double p4 = -v1 + v2 - v3 + v4;
  return v2 + d * (p2 + d * (p3 + d * p4));
}

// bicubic_filter32RGB (and bicubic_filter8) for C channels: rows outside the image repeat the
// row before them (the first takes the nearest row), columns are clamped.
template <int C>
bool bicubic(const Source& s, double xin, double yin, std::uint8_t* out) {
  if (xin < 0.0 || xin >= s.width || yin < 0.0 || yin >= s.height) return false;
  xin -= 0.5;
  yin -= 0.5;
  int x = pil_floor(xin), y = pil_floor(yin);
  const double dx = xin - x, dy = yin - y;
  --x;
  --y;
  std::size_t xs[4];
  for (int i = 0; i < 4; ++i) xs[i] = static_cast<std::size_t>(s.clip_x(x + i)) * C;
  // The rows of v1..v4; nullptr where Geometry.c takes the value of the row before.
  const std::uint8_t* rows[4] = {s.row(s.clip_y(y)), nullptr, nullptr, nullptr};
  for (int i = 1; i < 4; ++i)
    if (s.has_row(y + i)) rows[i] = s.row(y + i);
  for (int k = 0; k < C; ++k) {
    const auto along = [&](const std::uint8_t* r) {
      return cubic(int{r[xs[0] + k]}, int{r[xs[1] + k]}, int{r[xs[2] + k]}, int{r[xs[3] + k]}, dx);
    };
    double v[4];
    v[0] = along(rows[0]);
    for (int i = 1; i < 4; ++i) v[i] = rows[i] == nullptr ? v[i - 1] : along(rows[i]);
    const double w = cubic(v[0], v[1], v[2], v[3], dy);
    out[k] = w <= 0.0 ? 0 : w >= 255.0 ? 255 : static_cast<std::uint8_t>(w);
  }
  return true;
}

#if STOKE_AVX2_FMA_DISPATCH
// The filters above for 3 channels at once, one lane each (the fourth lane idle): the same
// double operations in the same order, so the same bytes.

// The three bytes at p as doubles, and the byte after them in the fourth lane (copy_source
// leaves one after the last pixel).
STOKE_TARGET_AVX2_FMA inline __m256d bytes3(const std::uint8_t* p) {
  int v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_cvtepi32_pd(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(v)));
}

// The lanes' integer parts (each within 0..255) as three bytes at out.
STOKE_TARGET_AVX2_FMA inline void store3(__m256d v, std::uint8_t* out) {
  const __m128i i = _mm256_cvttpd_epi32(v);
  const int b = _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packus_epi32(i, i), i));
  out[0] = static_cast<std::uint8_t>(b);
  out[1] = static_cast<std::uint8_t>(b >> 8);
  out[2] = static_cast<std::uint8_t>(b >> 16);
}

// Both cubic()s: on whole bytes the integer coefficients are exact in double, so one function
// computes the first pass and the second.
STOKE_TARGET_AVX2_FMA inline __m256d cubic4(__m256d v1, __m256d v2, __m256d v3, __m256d v4,
                                            __m256d d) {
  const __m256d minus_v1 = _mm256_xor_pd(v1, _mm256_set1_pd(-0.0));
  const __m256d p2 = _mm256_add_pd(minus_v1, v3);
  const __m256d p3 = _mm256_sub_pd(
      _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(2.0), _mm256_sub_pd(v1, v2)), v3), v4);
  const __m256d p4 = _mm256_add_pd(_mm256_sub_pd(_mm256_add_pd(minus_v1, v2), v3), v4);
  return _mm256_add_pd(
      v2, _mm256_mul_pd(
              d, _mm256_add_pd(p2, _mm256_mul_pd(d, _mm256_add_pd(p3, _mm256_mul_pd(d, p4))))));
}

// bilinear's first pass on row r, between columns x0 and x1 (no lambdas here: clang compiles a
// lambda for the baseline target, whatever its enclosing function's).
STOKE_TARGET_AVX2_FMA inline __m256d linear4(const std::uint8_t* r, std::size_t x0, std::size_t x1,
                                             __m256d dx) {
  const __m256d a = bytes3(r + x0);
  return _mm256_add_pd(a, _mm256_mul_pd(_mm256_sub_pd(bytes3(r + x1), a), dx));
}

STOKE_TARGET_AVX2_FMA inline bool bilinear3(const Source& s, double xin, double yin,
                                            std::uint8_t* out) {
  if (xin < 0.0 || xin >= s.width || yin < 0.0 || yin >= s.height) return false;
  xin -= 0.5;
  yin -= 0.5;
  const int x = pil_floor(xin), y = pil_floor(yin);
  const __m256d dx = _mm256_set1_pd(xin - x), dy = _mm256_set1_pd(yin - y);
  const std::size_t x0 = static_cast<std::size_t>(s.clip_x(x)) * 3;
  const std::size_t x1 = static_cast<std::size_t>(s.clip_x(x + 1)) * 3;
  const __m256d v1 = linear4(s.row(s.clip_y(y)), x0, x1, dx);
  const __m256d v2 = s.has_row(y + 1) ? linear4(s.row(y + 1), x0, x1, dx) : v1;
  store3(_mm256_add_pd(v1, _mm256_mul_pd(_mm256_sub_pd(v2, v1), dy)), out);
  return true;
}

// bicubic's first pass on row r at columns xs.
STOKE_TARGET_AVX2_FMA inline __m256d cubic_row4(const std::uint8_t* r, const std::size_t* xs,
                                                __m256d dx) {
  return cubic4(bytes3(r + xs[0]), bytes3(r + xs[1]), bytes3(r + xs[2]), bytes3(r + xs[3]), dx);
}

STOKE_TARGET_AVX2_FMA inline bool bicubic3(const Source& s, double xin, double yin,
                                           std::uint8_t* out) {
  if (xin < 0.0 || xin >= s.width || yin < 0.0 || yin >= s.height) return false;
  xin -= 0.5;
  yin -= 0.5;
  int x = pil_floor(xin), y = pil_floor(yin);
  const __m256d dx = _mm256_set1_pd(xin - x), dy = _mm256_set1_pd(yin - y);
  --x;
  --y;
  std::size_t xs[4];
  for (int i = 0; i < 4; ++i) xs[i] = static_cast<std::size_t>(s.clip_x(x + i)) * 3;
  __m256d v[4];
  v[0] = cubic_row4(s.row(s.clip_y(y)), xs, dx);
  for (int i = 1; i < 4; ++i) v[i] = s.has_row(y + i) ? cubic_row4(s.row(y + i), xs, dx) : v[i - 1];
  const __m256d w = cubic4(v[0], v[1], v[2], v[3], dy);
  store3(_mm256_min_pd(_mm256_max_pd(w, _mm256_setzero_pd()), _mm256_set1_pd(255.0)), out);
  return true;
}
#endif

template <int C, typename Filter>
void transform_with(const Pixels& im, const Source& src, const std::array<double, 6>& a,
                    const PilFill& fill, Filter filter) {
  for (int y = 0; y < im.height; ++y) {
    std::uint8_t* o = im.row(y);
    const double yin = y + 0.5;
    for (int x = 0; x < im.width; ++x, o += C) {
      const double xin = x + 0.5;
      const double xx = a[0] * xin + a[1] * yin + a[2];
      const double yy = a[3] * xin + a[4] * yin + a[5];
      if (!filter(src, xx, yy, o))
        for (int k = 0; k < C; ++k) o[k] = fill[static_cast<std::size_t>(k)];
    }
  }
}

#if STOKE_AVX2_FMA_DISPATCH
STOKE_TARGET_AVX2_FMA void transform3_avx2(const Pixels& im, const Source& src,
                                           const std::array<double, 6>& a, PilFilter filter,
                                           const PilFill& fill) {
  if (filter == PilFilter::kBilinear)
    transform_with<3>(im, src, a, fill, bilinear3);
  else
    transform_with<3>(im, src, a, fill, bicubic3);
}
#endif

template <int C>
void transform(const Pixels& im, const Source& src, const std::array<double, 6>& a,
               PilFilter filter, const PilFill& fill) {
#if STOKE_AVX2_FMA_DISPATCH
  if (C == 3 && has_avx2_fma()) return transform3_avx2(im, src, a, filter, fill);
#endif
  if (filter == PilFilter::kBilinear)
    transform_with<C>(im, src, a, fill, bilinear<C>);
  else
    transform_with<C>(im, src, a, fill, bicubic<C>);
}

// Python's round(v, 15): the decimal correctly rounded to 15 places (glibc's printf rounds the
// exact binary value, half to even, as CPython's dtoa does), read back.
double round15(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15f", v);
  return std::strtod(buf, nullptr);
}

// Python's float `angle % 360.0`: the remainder with the divisor's sign.
double python_mod_360(double angle) {
  double mod = std::fmod(angle, 360.0);
  if (mod != 0.0) {
    if (mod < 0.0) mod += 360.0;
  } else {
    mod = 0.0;
  }
  return mod;
}

// Image.transpose(ROTATE_90 / ROTATE_180 / ROTATE_270) of `src` into im (the same size).
void transpose(const Pixels& im, const Source& src, int quarter_turns) {
  const int w = im.width, h = im.height;
  for (int y = 0; y < h; ++y) {
    std::uint8_t* o = im.row(y);
    for (int x = 0; x < w; ++x, o += im.channels) {
      int sx = x, sy = y;
      if (quarter_turns == 1) {  // out[w - 1 - x][y] = in[y][x]
        sx = w - 1 - y;
        sy = x;
      } else if (quarter_turns == 2) {
        sx = w - 1 - x;
        sy = h - 1 - y;
      } else {  // out[x][h - 1 - y] = in[y][x]
        sx = y;
        sy = h - 1 - x;
      }
      for (int k = 0; k < im.channels; ++k) o[k] = src.at(sy, sx, k);
    }
  }
}

// The image's tight copy as a Source, with one byte more after it, which the AVX2 filters
// read (and drop) beside the last pixel's three.
Source copy_source(const Pixels& im, std::vector<std::uint8_t>& copy) {
  tight_copy(im, copy);
  copy.push_back(0);
  return Source{copy.data(), im.width, im.height, im.channels, im.row_bytes()};
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

void pil_affine(const Pixels& im, const std::array<double, 6>& m, PilFilter filter,
                const PilFill& fill, std::vector<std::uint8_t>& copy) {
  const Source src = copy_source(im, copy);
  if (im.channels == 3)
    transform<3>(im, src, m, filter, fill);
  else
    transform<1>(im, src, m, filter, fill);
}

std::array<double, 6> pil_rotate_matrix(double degrees, int width, int height) {
  constexpr double kDegreesToRadians = std::numbers::pi / 180.0;  // CPython's math.radians
  const double angle = -(python_mod_360(degrees) * kDegreesToRadians);
  std::array<double, 6> m = {round15(std::cos(angle)),  round15(std::sin(angle)), 0.0,
                             round15(-std::sin(angle)), round15(std::cos(angle)), 0.0};
  const double cx = width / 2.0, cy = height / 2.0;
  const double tx = -cx, ty = -cy;
  const double m2 = m[0] * tx + m[1] * ty + m[2];
  const double m5 = m[3] * tx + m[4] * ty + m[5];
  m[2] = m2 + cx;
  m[5] = m5 + cy;
  return m;
}

void pil_rotate(const Pixels& im, double degrees, PilFilter filter, const PilFill& fill,
                std::vector<std::uint8_t>& copy) {
  const double angle = python_mod_360(degrees);
  if (angle == 0.0) return;
  if (angle == 180.0 || ((angle == 90.0 || angle == 270.0) && im.width == im.height)) {
    transpose(im, copy_source(im, copy), angle == 90.0 ? 1 : angle == 180.0 ? 2 : 3);
    return;
  }
  pil_affine(im, pil_rotate_matrix(degrees, im.width, im.height), filter, fill, copy);
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
