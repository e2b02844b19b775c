#include "augment/geometric_ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numbers>

#include "cpu_features.hpp"

#if STOKE_AVX2_FMA_DISPATCH
#include <immintrin.h>
#endif

// Every float32 value below is rounded where torch rounds it, so no product is fused into a
// later add (the exact-float rule, cmake/StokeExactFloat.cmake); the fused multiply-adds torch
// does are written out: source_coordinate's, and the bilinear blend's.

namespace stoke::detail {
namespace {

// torch's vector loop computes (g + 1) * half_size - 0.5 with one fused multiply-add. g + 1 is a
// float32 of at least 2^-24 spacing and half_size a multiple of 1/2, so the exact value is a
// multiple of 2^-25: below 2^27 in magnitude (every point near the image) double holds it
// exactly, and rounding it once to float32 gives the fused result. Beyond that both lie outside
// any image. (geometric_ops_test checks this against std::fma at every tie of sizes up to 600.)
// Double keeps the loop free of library calls where the target has no FMA instruction.
inline float unnormalize(float g, float half_size) {
  const double product = static_cast<double>(g + 1.0f) * static_cast<double>(half_size);
  return static_cast<float>(product - 0.5);
}

// CPython's math.radians multiplies by this constant, pi / 180 rounded to double.
constexpr double kDegreesToRadians = std::numbers::pi / 180.0;

// The fill as the output holds it: torch.where picks the float32 fill, and round_() then the
// byte conversion turn it into a level (half to even: 127.5 and 128.5 both give 128). kNoFill
// gives 0, grid_sample's zeros.
std::uint8_t fill_level(float fill) {
  return static_cast<std::uint8_t>(std::nearbyint(std::clamp(fill, 0.0f, 255.0f)));
}

// What F.affine receives, as Python floats (the float32 arguments widened exactly).
struct AffineArgs {
  double angle = 0.0, tx = 0.0, ty = 0.0, scale = 1.0, shear_x = 0.0, shear_y = 0.0;
  double cx = 0.0, cy = 0.0;  // centre_f: the centre relative to the image centre, in pixels
};

// _get_inverse_affine_matrix(center_f, angle, translate, scale, shear), its Python double
// arithmetic in its order: the map from an output pixel to the input, both relative to the
// image centre.
std::array<double, 6> inverse_affine_matrix(const AffineArgs& a) {
  const double rot = a.angle * kDegreesToRadians;
  const double sx = a.shear_x * kDegreesToRadians;
  const double sy = a.shear_y * kDegreesToRadians;
  const double cos_sy = std::cos(sy);
  const double tan_sx = std::tan(sx);
  const double rot_minus_sy = rot - sy;
  const double cx_plus_tx = a.cx + a.tx;
  const double cy_plus_ty = a.cy + a.ty;
  const double ra = std::cos(rot_minus_sy) / cos_sy;
  const double rb = -(ra * tan_sx + std::sin(rot));
  const double rc = std::sin(rot_minus_sy) / cos_sy;
  const double rd = std::cos(rot) - rc * tan_sx;
  std::array<double, 6> m = {rd / a.scale, -rb / a.scale, 0.0, -rc / a.scale, ra / a.scale, 0.0};
  m[2] += a.cx - m[0] * cx_plus_tx - m[1] * cy_plus_ty;
  m[5] += a.cy - m[3] * cx_plus_tx - m[4] * cy_plus_ty;
  return m;
}

// _affine_grid's float32 numbers: theta rounded to float32 and divided by half the width
// (first row) and half the height (second row). A grid value is then
// (x * ax + y * ay) + a0 with each product rounded, x and y the pixel's offsets from the centre.
struct SamplingGrid {
  float ax, ay, a0;  // the x coordinate, before grid_sample's unnormalisation
  float bx, by, b0;  // the y coordinate
};

SamplingGrid sampling_grid(const std::array<double, 6>& m, int width, int height) {
  const float hw = static_cast<float>(0.5 * width), hh = static_cast<float>(0.5 * height);
  auto t = [&](std::size_t k, float half) { return static_cast<float>(m[k]) / half; };
  return {t(0, hw), t(1, hw), t(2, hw), t(3, hh), t(4, hh), t(5, hh)};
}

// Where nearest sampling reads an output row (a centred offset yb) from, pixels [begin, width):
// for each pixel x the source pixel's index sy * width + sx, or -1 where the point lands outside.
struct NearestRow {
  const SamplingGrid& g;
  int width, height;

  void operator()(float yb, int begin, std::int32_t* index) const {
    // linspace((1 - n) / 2, (n - 1) / 2, n) steps by exactly 1: these offsets are exact.
    const float x0 = 0.5f * static_cast<float>(width - 1);
    const float half_w = 0.5f * static_cast<float>(width);
    const float half_h = 0.5f * static_cast<float>(height);
    const auto last_x = static_cast<float>(width - 1), last_y = static_cast<float>(height - 1);
    const float y_ax = yb * g.ay, y_by = yb * g.by;
    for (int x = begin; x < width; ++x) {
      const float xb = static_cast<float>(x) - x0;
      const float sx = std::nearbyint(unnormalize((xb * g.ax + y_ax) + g.a0, half_w));
      const float sy = std::nearbyint(unnormalize((xb * g.bx + y_by) + g.b0, half_h));
      const bool inside = sx >= 0.0f && sx <= last_x && sy >= 0.0f && sy <= last_y;
      index[x] =
          inside ? static_cast<std::int32_t>(sy) * width + static_cast<std::int32_t>(sx) : -1;
    }
  }
};

#if STOKE_AVX2_FMA_DISPATCH
// unnormalize for eight values: widened to double, multiplied, 0.5 taken off, rounded back.
STOKE_TARGET_AVX2_FMA inline __m256 unnormalize8(__m256 g, __m256d half_size) {
  const __m256 g1 = _mm256_add_ps(g, _mm256_set1_ps(1.0f));
  const __m256d half = _mm256_set1_pd(0.5);
  const __m256d lo =
      _mm256_sub_pd(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(g1)), half_size), half);
  const __m256d hi =
      _mm256_sub_pd(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(g1, 1)), half_size), half);
  return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
}

// NearestRow eight pixels at a time: the same float32 and double operations in the same order
// (no product fused), nearbyint as the current rounding mode's round, the same comparisons.
STOKE_TARGET_AVX2_FMA void nearest_row_avx2(const NearestRow& row, float yb, std::int32_t* index) {
  const SamplingGrid& g = row.g;
  const int width = row.width;
  const __m256 x0 = _mm256_set1_ps(0.5f * static_cast<float>(width - 1));
  const __m256d half_w = _mm256_set1_pd(0.5f * static_cast<float>(width));
  const __m256d half_h = _mm256_set1_pd(0.5f * static_cast<float>(row.height));
  const __m256 last_x = _mm256_set1_ps(static_cast<float>(width - 1));
  const __m256 last_y = _mm256_set1_ps(static_cast<float>(row.height - 1));
  const __m256 zero = _mm256_setzero_ps();
  const __m256 ax = _mm256_set1_ps(g.ax), bx = _mm256_set1_ps(g.bx);
  const __m256 y_ax = _mm256_set1_ps(yb * g.ay), y_by = _mm256_set1_ps(yb * g.by);
  const __m256 a0 = _mm256_set1_ps(g.a0), b0 = _mm256_set1_ps(g.b0);
  const __m256i w = _mm256_set1_epi32(width);
  const __m256i outside = _mm256_set1_epi32(-1);
  constexpr int kRound = _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC;
  __m256i xs = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  int x = 0;
  for (; x + 8 <= width; x += 8, xs = _mm256_add_epi32(xs, _mm256_set1_epi32(8))) {
    const __m256 xb = _mm256_sub_ps(_mm256_cvtepi32_ps(xs), x0);
    const __m256 gx = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(xb, ax), y_ax), a0);
    const __m256 gy = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(xb, bx), y_by), b0);
    const __m256 sx = _mm256_round_ps(unnormalize8(gx, half_w), kRound);
    const __m256 sy = _mm256_round_ps(unnormalize8(gy, half_h), kRound);
    const __m256 inside = _mm256_and_ps(
        _mm256_and_ps(_mm256_cmp_ps(sx, zero, _CMP_GE_OQ), _mm256_cmp_ps(sx, last_x, _CMP_LE_OQ)),
        _mm256_and_ps(_mm256_cmp_ps(sy, zero, _CMP_GE_OQ), _mm256_cmp_ps(sy, last_y, _CMP_LE_OQ)));
    // Outside lanes convert whatever they hold; the blend drops them.
    const __m256i at =
        _mm256_add_epi32(_mm256_mullo_epi32(_mm256_cvttps_epi32(sy), w), _mm256_cvttps_epi32(sx));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(index + x),
                        _mm256_blendv_epi8(outside, at, _mm256_castps_si256(inside)));
  }
  row(yb, x, index);
}
#endif

// _apply_grid_transform with nearest sampling: grid_sample of the image and of a ones channel,
// then the fill wherever that channel is below 0.5, i.e. wherever the point lands outside. The
// image is `height` rows of `width` pixels of kChannels values of type T, rows `stride` bytes
// apart; `copy` receives it.
template <class T, int kChannels>
void warp(std::uint8_t* base, std::size_t stride, int width, int height, const SamplingGrid& g,
          T fill, std::vector<std::uint8_t>& copy) {
  const std::size_t line = static_cast<std::size_t>(width) * kChannels * sizeof(T);
  // The tight copy, then one row of indices (aligned past it).
  const std::size_t index_at = (line * static_cast<std::size_t>(height) + 3) / 4 * 4;
  copy.resize(index_at + static_cast<std::size_t>(width) * sizeof(std::int32_t));
  for (int y = 0; y < height; ++y)
    std::memcpy(copy.data() + static_cast<std::size_t>(y) * line,
                base + static_cast<std::size_t>(y) * stride, line);
  const T* src = reinterpret_cast<const T*>(copy.data());
  auto* index = reinterpret_cast<std::int32_t*>(copy.data() + index_at);
  const NearestRow row{g, width, height};
  const float y0 = 0.5f * static_cast<float>(height - 1);
#if STOKE_AVX2_FMA_DISPATCH
  const bool avx2 = has_avx2_fma();
#endif
  for (int y = 0; y < height; ++y) {
    const float yb = static_cast<float>(y) - y0;
#if STOKE_AVX2_FMA_DISPATCH
    if (avx2)
      nearest_row_avx2(row, yb, index);
    else
#endif
      row(yb, 0, index);
    T* out = reinterpret_cast<T*>(base + static_cast<std::size_t>(y) * stride);
    for (int x = 0; x < width; ++x, out += kChannels) {
      if (index[x] >= 0) {
        const T* in = src + static_cast<std::size_t>(index[x]) * kChannels;
        for (int k = 0; k < kChannels; ++k) out[k] = in[k];
      } else {
        for (int k = 0; k < kChannels; ++k) out[k] = fill;
      }
    }
  }
}

// grid_sample's bilinear blend (geometric_ops.hpp): `v` holds the four corners' values in the
// order nw, ne, sw, se, 0 for a corner outside the image.
[[gnu::always_inline]] inline float blend(const float v[4], const float wt[4]) {
  return std::fma(v[3], wt[3], std::fma(v[2], wt[2], std::fma(v[1], wt[1], v[0] * wt[0])));
}

// _apply_grid_transform with bilinear sampling on `src` (the image's tight copy): grid_sample
// of the image (and, with a fill, of a ones channel that becomes the mask), the fill mixed in as
// ((v - fill) * mask) + fill, then round_() and the byte conversion.
template <int kChannels, bool kFill>
[[gnu::always_inline]] inline void bilinear_rows(const Pixels& im, const std::uint8_t* src,
                                                 const SamplingGrid& g, float fill) {
  const std::size_t line = im.row_bytes();
  const float x0 = 0.5f * static_cast<float>(im.width - 1);
  const float y0 = 0.5f * static_cast<float>(im.height - 1);
  const float half_w = 0.5f * static_cast<float>(im.width);
  const float half_h = 0.5f * static_cast<float>(im.height);
  // Corners beyond these read nothing; the bounds keep the conversions to int defined.
  const auto far_x = static_cast<float>(im.width) + 1.0f,
             far_y = static_cast<float>(im.height) + 1.0f;
  for (int y = 0; y < im.height; ++y) {
    const float yb = static_cast<float>(y) - y0;
    const float y_ax = yb * g.ay, y_by = yb * g.by;
    std::uint8_t* out = im.row(y);
    for (int x = 0; x < im.width; ++x, out += kChannels) {
      const float xb = static_cast<float>(x) - x0;
      const float sx = unnormalize((xb * g.ax + y_ax) + g.a0, half_w);
      const float sy = unnormalize((xb * g.bx + y_by) + g.b0, half_h);
      const float fx = std::floor(sx), fy = std::floor(sy);
      const float w = sx - fx, e = 1.0f - w, n = sy - fy, s = 1.0f - n;
      const float wt[4] = {s * e, s * w, n * e, n * w};
      // Outside (or NaN): every corner reads 0, so every blend is 0.
      const bool near = fx >= -1.0f && fx < far_x && fy >= -1.0f && fy < far_y;
      const int ix = near ? static_cast<int>(fx) : -2, iy = near ? static_cast<int>(fy) : -2;
      const bool in_x[2] = {ix >= 0 && ix < im.width, ix + 1 >= 0 && ix + 1 < im.width};
      const bool in_y[2] = {iy >= 0 && iy < im.height, iy + 1 >= 0 && iy + 1 < im.height};
      const bool in[4] = {in_y[0] && in_x[0], in_y[0] && in_x[1], in_y[1] && in_x[0],
                          in_y[1] && in_x[1]};
      const std::uint8_t* corner[4] = {};
      for (int k = 0; k < 4; ++k)
        if (in[k])
          corner[k] = src + static_cast<std::size_t>(iy + k / 2) * line +
                      static_cast<std::size_t>(ix + k % 2) * kChannels;
      float mask = 1.0f;
      if constexpr (kFill) {
        const float ones[4] = {in[0] ? 1.0f : 0.0f, in[1] ? 1.0f : 0.0f, in[2] ? 1.0f : 0.0f,
                               in[3] ? 1.0f : 0.0f};
        mask = blend(ones, wt);
      }
      for (int c = 0; c < kChannels; ++c) {
        float v[4];
        for (int k = 0; k < 4; ++k) v[k] = in[k] ? static_cast<float>(corner[k][c]) : 0.0f;
        float value = blend(v, wt);
        if constexpr (kFill) value = (value - fill) * mask + fill;
        out[c] = static_cast<std::uint8_t>(std::nearbyint(std::clamp(value, 0.0f, 255.0f)));
      }
    }
  }
}

// The same rows compiled for AVX2 and FMA, where fma, floor and nearbyint are one instruction
// each instead of library calls (each is exact, so both compilations give the same bytes).
#if STOKE_AVX2_FMA_DISPATCH
template <int kChannels, bool kFill>
STOKE_TARGET_AVX2_FMA void bilinear_rows_fma(const Pixels& im, const std::uint8_t* src,
                                             const SamplingGrid& g, float fill) {
  bilinear_rows<kChannels, kFill>(im, src, g, fill);
}
#endif

template <int kChannels, bool kFill>
void warp_bilinear(const Pixels& im, const SamplingGrid& g, float fill,
                   std::vector<std::uint8_t>& copy) {
  const std::uint8_t* src = tight_copy(im, copy);
#if STOKE_AVX2_FMA_DISPATCH
  if (has_avx2_fma()) return bilinear_rows_fma<kChannels, kFill>(im, src, g, fill);
#endif
  bilinear_rows<kChannels, kFill>(im, src, g, fill);
}

void warp(const Pixels& im, const std::array<double, 6>& m, float fill, Interpolation interpolation,
          std::vector<std::uint8_t>& copy) {
  const SamplingGrid g = sampling_grid(m, im.width, im.height);
  const bool three = im.channels == 3;
  if (interpolation == Interpolation::kNearest) {
    if (three)
      warp<std::uint8_t, 3>(im.data, im.stride, im.width, im.height, g, fill_level(fill), copy);
    else
      warp<std::uint8_t, 1>(im.data, im.stride, im.width, im.height, g, fill_level(fill), copy);
    return;
  }
  const float level = std::clamp(fill, 0.0f, 255.0f);
  const bool fill_outside = fill != kNoFill;
  if (three && fill_outside)
    warp_bilinear<3, true>(im, g, level, copy);
  else if (three)
    warp_bilinear<3, false>(im, g, level, copy);
  else if (fill_outside)
    warp_bilinear<1, true>(im, g, level, copy);
  else
    warp_bilinear<1, false>(im, g, level, copy);
}

// What F.affine hands _get_inverse_affine_matrix for op (kAffine's numbers and centre).
AffineArgs affine_args(const AppliedOp& op) {
  return AffineArgs{op.args[0], op.args[1], op.args[2], op.args[3], op.args[4], op.args[5]};
}

// torch.rot90(image, k, dims=(-2, -1)): k counter-clockwise quarter turns (1, 2 or 3).
// REQUIRES: a square image unless k is 2.
void quarter_turns(const Pixels& im, int k, std::vector<std::uint8_t>& copy) {
  const std::uint8_t* src = tight_copy(im, copy);
  const auto c = static_cast<std::size_t>(im.channels);
  const std::size_t line = im.row_bytes();
  const int w = im.width, h = im.height;
  for (int y = 0; y < h; ++y) {
    std::uint8_t* out = im.row(y);
    for (int x = 0; x < w; ++x, out += c) {
      const int sy = k == 1 ? x : (k == 2 ? h - 1 - y : h - 1 - x);
      const int sx = k == 1 ? w - 1 - y : (k == 2 ? w - 1 - x : y);
      std::memcpy(out, src + static_cast<std::size_t>(sy) * line + static_cast<std::size_t>(sx) * c,
                  c);
    }
  }
}

// Python's float `angle % 360`: the remainder takes the divisor's sign, so -1e-20 becomes 360.
double python_mod_360(double angle) {
  double r = std::fmod(angle, 360.0);
  if (r != 0.0) {
    if (r < 0.0) r += 360.0;
  } else {
    r = 0.0;
  }
  return r;
}

}  // namespace

float source_coordinate(float g, float half_size) {
  return unnormalize(g, half_size);
}

float source_index(float g, float half_size) {
  return std::nearbyint(unnormalize(g, half_size));
}

void affine(const Pixels& image, const AppliedOp& op, AffineCenter center,
            std::vector<std::uint8_t>& copy, Interpolation interpolation) {
  AffineArgs a = affine_args(op);
  if (center == AffineCenter::kOrigin) {  // affine_image: [c - s * 0.5 for c, s in ...]
    a.cx = 0.0 - image.width * 0.5;
    a.cy = 0.0 - image.height * 0.5;
  }
  warp(image, inverse_affine_matrix(a), op.args[6], interpolation, copy);
}

void affine_bilinear(const Pixels& image, const AppliedOp& op, std::vector<std::uint8_t>& copy) {
  affine(image, op, AffineCenter::kImage, copy, Interpolation::kBilinear);
}

void affine_labels(const LabelImage& labels, const AppliedOp& op, std::uint16_t fill,
                   std::vector<std::uint8_t>& copy) {
  const SamplingGrid g =
      sampling_grid(inverse_affine_matrix(affine_args(op)), labels.width, labels.height);
  if (labels.bytes == 2)
    warp<std::uint16_t, 1>(labels.data, labels.stride, labels.width, labels.height, g, fill, copy);
  else
    warp<std::uint8_t, 1>(labels.data, labels.stride, labels.width, labels.height, g,
                          static_cast<std::uint8_t>(fill), copy);
}

std::array<double, 6> affine_forward_matrix(const AppliedOp& op, int width, int height) {
  const AffineArgs a = affine_args(op);
  const double rot = a.angle * kDegreesToRadians;
  const double sx = a.shear_x * kDegreesToRadians;
  const double sy = a.shear_y * kDegreesToRadians;
  const double cx = width * 0.5, cy = height * 0.5;  // center=None: the image centre in pixels
  const double cos_sy = std::cos(sy);
  const double tan_sx = std::tan(sx);
  const double rot_minus_sy = rot - sy;
  const double ra = std::cos(rot_minus_sy) / cos_sy;
  const double rb = -(ra * tan_sx + std::sin(rot));
  const double rc = std::sin(rot_minus_sy) / cos_sy;
  const double rd = std::cos(rot) - rc * tan_sx;
  std::array<double, 6> m = {ra * a.scale, rb * a.scale, 0.0, rc * a.scale, rd * a.scale, 0.0};
  m[2] += (cx + a.tx) - m[0] * cx - m[1] * cy;
  m[5] += (cy + a.ty) - m[3] * cx - m[4] * cy;
  return m;
}

void policy_shear(const Pixels& image, const AppliedOp& op, std::vector<std::uint8_t>& copy,
                  Interpolation interpolation) {
  // math.degrees(math.atan(m)): CPython's degrees multiplies by 180 / pi.
  const double degrees = std::atan(static_cast<double>(op.args[0])) * (180.0 / std::numbers::pi);
  AffineArgs a;
  (op.args[1] == 0.f ? a.shear_x : a.shear_y) = degrees;
  a.cx = 0.0 - image.width * 0.5;
  a.cy = 0.0 - image.height * 0.5;
  warp(image, inverse_affine_matrix(a), op.args[2], interpolation, copy);
}

void rotate(const Pixels& image, const AppliedOp& op, std::vector<std::uint8_t>& copy,
            Interpolation interpolation) {
  const double angle = python_mod_360(op.args[0]);
  // rotate_image's fast paths, taken before the fill is looked at.
  if (angle == 0.0) return;
  if (angle == 180.0) return quarter_turns(image, 2, copy);
  if (image.width == image.height && (angle == 90.0 || angle == 270.0))
    return quarter_turns(image, angle == 90.0 ? 1 : 3, copy);
  // affine and rotate turn opposite ways, so rotate_image negates the angle.
  AffineArgs a;
  a.angle = -angle;
  warp(image, inverse_affine_matrix(a), op.args[1], interpolation, copy);
}

}  // namespace stoke::detail
