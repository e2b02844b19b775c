#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "augment/photometric_ops.hpp"
#include "cpu_features.hpp"

// Every value below is rounded where torch rounds it: a product torch rounds before its add is
// not fused here (the exact-float rule, cmake/StokeExactFloat.cmake), and the adds its backends
// fuse are written as std::fma.

namespace stoke::detail {
namespace {

// adjust_sharpness_image on the interior: the 3x3 kernel (1 around, 5 in the middle, over 13)
// rounded, blended with the pixel. The blur is taken in integers: torch's float32 convolution
// lands within 2e-4 of (neighbours + 5 * centre) / 13, a multiple of 1/13 that is never closer
// than 1/26 to a half, so its round_() always gives this quotient rounded.
// One interior row of sharpness: `s` the row in the copy, `line` its bytes, `c` the channels.
[[gnu::always_inline]] inline void sharpness_row(std::uint8_t* out, const std::uint8_t* s,
                                                 std::ptrdiff_t line, std::ptrdiff_t c,
                                                 float rest) {
  for (std::ptrdiff_t i = c; i < line - c; ++i) {
    const std::uint8_t* p = s + i;
    const int around =
        p[-line - c] + p[-line] + p[-line + c] + p[-c] + p[c] + p[line - c] + p[line] + p[line + c];
    const int blurred = (2 * (around + 5 * p[0]) + 13) / 26;
    const float v = static_cast<float>(p[0]);
    out[i] = clamp_to_byte(std::fma(static_cast<float>(blurred) - v, rest, v));
  }
}

#if STOKE_AVX2_FMA_DISPATCH
// The same row compiled for AVX2, which the compiler vectorizes (fma one instruction there).
STOKE_TARGET_AVX2_FMA void sharpness_row_avx2(std::uint8_t* out, const std::uint8_t* s,
                                              std::ptrdiff_t line, std::ptrdiff_t c, float rest) {
  sharpness_row(out, s, line, c, rest);
}
#endif

}  // namespace

void sharpness(const Pixels& im, const ColorOpArgs& op, std::vector<std::uint8_t>& copy) {
  if (im.height <= 2 || im.width <= 2) return;
  const std::uint8_t* src = tight_copy(im, copy);
  const auto c = static_cast<std::ptrdiff_t>(im.channels);
  const auto line = static_cast<std::ptrdiff_t>(im.row_bytes());
  const float rest = one_minus(op);
  const bool avx2 = has_avx2_fma();
  for (int y = 1; y + 1 < im.height; ++y) {
#if STOKE_AVX2_FMA_DISPATCH
    if (avx2) {
      sharpness_row_avx2(im.row(y), src + y * line, line, c, rest);
      continue;
    }
#endif
    (void)avx2;
    sharpness_row(im.row(y), src + y * line, line, c, rest);
  }
}

namespace {

// Sleef's expf with 1-ulp error (xexpf), the exp of torch's vectorized softmax, step by step.
float sleef_expf(float d) {
  if (d < -104.0f) return 0.0f;  // Sleef's own cut-offs, before q could overflow
  if (d > 100.0f) return HUGE_VALF;
  const int q = static_cast<int>(std::nearbyint(d * static_cast<float>(1.442695040888963407)));
  const auto qf = static_cast<float>(q);
  float s = std::fma(qf, -0.693145751953125f, d);
  s = std::fma(qf, static_cast<float>(-1.428606765330187045e-06), s);
  float u = static_cast<float>(0.000198527617612853646278381);
  u = std::fma(u, s, static_cast<float>(0.00139304355252534151077271));
  u = std::fma(u, s, static_cast<float>(0.00833336077630519866943359));
  u = std::fma(u, s, static_cast<float>(0.0416664853692054748535156));
  u = std::fma(u, s, static_cast<float>(0.166666671633720397949219));
  u = std::fma(u, s, 0.5f);
  const float s2 = s * s;
  u = 1.0f + std::fma(s2, u, s);
  return std::ldexp(std::ldexp(u, q >> 1), q - (q >> 1));
}

// vec::reduce_all's sum in torch's AVX-512 build (16 lanes): fewer values are added in order;
// more are gathered into 16 lanes, the remainder into the first lanes, and the lanes folded in
// halves. Its AVX2 build (8 lanes) folds from 8 values on, so a kernel of 9 to 15 taps can
// differ there in the last bit.
float lane_sum(const float* e, int n) {
  constexpr int kLanes = 16;
  if (n < kLanes) {
    float s = e[0];
    for (int i = 1; i < n; ++i) s += e[i];
    return s;
  }
  std::array<float, kLanes> acc;
  std::copy(e, e + kLanes, acc.begin());
  int d = kLanes;
  for (; d + kLanes <= n; d += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[static_cast<std::size_t>(j)] += e[d + j];
  for (int j = 0; d + j < n; ++j) acc[static_cast<std::size_t>(j)] += e[d + j];
  for (int half = kLanes / 2; half >= 1; half /= 2) {
    const std::array<float, kLanes> prev = acc;
    for (std::size_t j = 0; j < kLanes; ++j) acc[j] = prev[j] + prev[j ^ half];
  }
  return acc[0];
}

// _get_gaussian_kernel1d: softmax(-(linspace(-lim, lim, k) / sigma)^2), with torch's linspace
// (each half stepped from its own end, fused) and softmax (max, exp, lane sum, reciprocal).
void gaussian_kernel(int k, float sigma, float* w) {
  const double lim = (k - 1) / (2.0 * std::sqrt(2.0));
  const auto start = static_cast<float>(-lim), end = static_cast<float>(lim);
  const float step = k > 1 ? (end - start) / static_cast<float>(k - 1) : 0.0f;
  for (int i = 0; i < k; ++i) {
    const float x = i < k / 2 ? std::fma(step, static_cast<float>(i), start)
                              : std::fma(-step, static_cast<float>(k - i - 1), end);
    const float z = x / sigma;
    w[i] = -(z * z);
  }
  const float top = *std::max_element(w, w + k);
  for (int i = 0; i < k; ++i) w[i] = sleef_expf(w[i] - top);
  const float inv = 1.0f / lane_sum(w, k);
  for (int i = 0; i < k; ++i) w[i] *= inv;
}

// torch.nn.functional.pad's "reflect": the edge itself is not repeated. REQUIRES: |i| < n.
int reflect(int i, int n) {
  return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
}

// The image with `px` reflected columns and `py` reflected rows on each side, tight rows.
const std::uint8_t* reflect_padded(const Pixels& im, int px, int py,
                                   std::vector<std::uint8_t>& out) {
  const auto c = static_cast<std::size_t>(im.channels);
  const auto pw = static_cast<std::size_t>(im.width + 2 * px);
  out.resize(pw * static_cast<std::size_t>(im.height + 2 * py) * c);
  std::uint8_t* dst = out.data();
  for (int y = -py; y < im.height + py; ++y) {
    const std::uint8_t* src = im.row(reflect(y, im.height));
    for (int x = -px; x < im.width + px; ++x, dst += c)
      std::memcpy(dst, src + static_cast<std::size_t>(reflect(x, im.width)) * c, c);
  }
  return out.data();
}

// torch's conv2d picks its backend by aten's use_mkldnn: oneDNN, which accumulates the taps in
// row order with fused multiply-adds, for grouped (3-channel) convolutions, kernels larger than 3
// both ways, or more than 20,480 input values; otherwise im2col + GEMM, which accumulates the
// same order with a rounded product before each add.
bool torch_fuses_blur(int channels, int kw, int kh, std::size_t padded_values) {
  return channels > 1 || (kw > 3 && kh > 3) || padded_values > 20480;
}

// One output row of the blur: `src` the padded image in float32 at the row's first window
// (rows `line` values apart, a tap's neighbour `step` values on), `w` the 2-D kernel, `n` the
// row's values. Each output value sums its taps in torch's order, row by row, starting from 0
// (fused, or each product rounded first); the loop over the row's values is the inner one, so
// the compiler vectorizes it, and the sums wait in `acc`.
template <bool kFused>
[[gnu::always_inline]] inline void blur_row(const float* src, std::size_t line, std::size_t step,
                                            const float* w, int kw, int kh, std::size_t n,
                                            float* acc, std::uint8_t* out) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = 0.0f;
  for (int ky = 0; ky < kh; ++ky) {
    for (int kx = 0; kx < kw; ++kx) {
      const float wk = w[ky * kw + kx];
      const float* s =
          src + static_cast<std::size_t>(ky) * line + static_cast<std::size_t>(kx) * step;
      for (std::size_t i = 0; i < n; ++i) {
        if constexpr (kFused) {
          acc[i] = std::fma(wk, s[i], acc[i]);
        } else {
          const float product = wk * s[i];
          acc[i] += product;
        }
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = clamp_to_byte(std::nearbyint(acc[i]));
}

#if STOKE_AVX2_FMA_DISPATCH
// The same row compiled for AVX2 and FMA (fma and nearbyint one instruction each there).
template <bool kFused>
STOKE_TARGET_AVX2_FMA void blur_row_avx2(const float* src, std::size_t line, std::size_t step,
                                         const float* w, int kw, int kh, std::size_t n, float* acc,
                                         std::uint8_t* out) {
  blur_row<kFused>(src, line, step, w, kw, kh, n, acc, out);
}
#endif

// Writes the blur of the padded image `padded` (rows `line` bytes) into `im`; `floats` holds
// the padded image in float32 and a row of sums.
template <bool kFused>
void blur_into(const Pixels& im, const std::vector<std::uint8_t>& padded, std::size_t line,
               const float* w, int kw, int kh, std::vector<float>& floats) {
  const std::size_t n = im.row_bytes();
  floats.resize(padded.size() + n);
  std::copy(padded.begin(), padded.end(), floats.begin());
  const float* src = floats.data();
  float* acc = floats.data() + padded.size();
  const auto c = static_cast<std::size_t>(im.channels);
  const bool avx2 = has_avx2_fma();
  for (int y = 0; y < im.height; ++y) {
    const float* window = src + static_cast<std::size_t>(y) * line;
#if STOKE_AVX2_FMA_DISPATCH
    if (avx2) {
      blur_row_avx2<kFused>(window, line, c, w, kw, kh, n, acc, im.row(y));
      continue;
    }
#endif
    (void)avx2;
    blur_row<kFused>(window, line, c, w, kw, kh, n, acc, im.row(y));
  }
}

}  // namespace

// gaussian_blur_image: the outer product of the two 1-D kernels, over the reflect-padded image
// in float32, round_() (half to even), then the byte.
void gaussian_blur(const Pixels& im, int kw, int kh, float sigma, PhotometricScratch& scratch) {
  const int px = kw / 2, py = kh / 2;
  if (px >= im.width || py >= im.height) return;  // torch's reflect padding raises here
  std::vector<float>& k1 = scratch.f1;
  k1.resize(static_cast<std::size_t>(kw + kh));
  gaussian_kernel(kw, sigma, k1.data());
  gaussian_kernel(kh, sigma, k1.data() + kw);
  std::vector<float>& k2 = scratch.f0;
  k2.resize(static_cast<std::size_t>(kw) * static_cast<std::size_t>(kh));
  for (int i = 0; i < kh; ++i)
    for (int j = 0; j < kw; ++j) k2[static_cast<std::size_t>(i * kw + j)] = k1[kw + i] * k1[j];

  reflect_padded(im, px, py, scratch.u0);
  const std::size_t line = static_cast<std::size_t>(im.width + 2 * px) * im.channels;
  if (torch_fuses_blur(im.channels, kw, kh, scratch.u0.size()))
    blur_into<true>(im, scratch.u0, line, k2.data(), kw, kh, scratch.f2);
  else
    blur_into<false>(im, scratch.u0, line, k2.data(), kw, kh, scratch.f2);
}

}  // namespace stoke::detail
