#include "augment/pil_warps.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>
#include <vector>

#include "cpu_features.hpp"

#if STOKE_AVX2_FMA_DISPATCH
#include <immintrin.h>
#endif

// Geometry.c's samplers and Image.rotate's matrix are double arithmetic, each operation rounded
// on its own as Pillow's baseline x86-64 build rounds it (the exact-float rule,
// cmake/StokeExactFloat.cmake).

namespace stoke::detail {
namespace {

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

}  // namespace

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

}  // namespace stoke::detail
