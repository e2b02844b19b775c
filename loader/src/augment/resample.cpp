#include "augment/resample.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stoke::detail {
namespace {

// 7-bit weights: a vertically blended value (<= 255 * 128) fits a signed 16-bit lane, which
// SSE2's multiply-add (pmaddwd) needs; positions are resolved to 1/128 pixel.
constexpr int kWeightBits = 7;
constexpr int kOne = 1 << kWeightBits;
constexpr int kShift = 2 * kWeightBits;
constexpr std::int32_t kHalf = 1 << (kShift - 1);

// Quantizes `w` (summing to 1) to integers summing to kOne; the rounding remainder goes to the
// largest weight.
void quantize(const double* w, int n, std::int16_t* out) {
  int sum = 0, largest = 0;
  for (int k = 0; k < n; ++k) {
    out[k] = static_cast<std::int16_t>(std::lround(w[k] * kOne));
    sum += out[k];
    if (w[k] > w[largest]) largest = k;
  }
  out[largest] = static_cast<std::int16_t>(out[largest] + (kOne - sum));
}

void linear_taps(double f0, double extent, int out, int limit, std::vector<ResampleTap>& t) {
  t.assign(static_cast<std::size_t>(out), ResampleTap{});
  const double step = extent / out;
  for (int o = 0; o < out; ++o) {
    const double s = std::clamp(f0 + (o + 0.5) * step - 0.5, 0.0, static_cast<double>(limit - 1));
    const int i0 = std::min(static_cast<int>(s), limit - 1);
    ResampleTap& tap = t[static_cast<std::size_t>(o)];
    tap.first = i0;
    const auto w1 = static_cast<std::int16_t>(std::lround((s - i0) * kOne));
    if (i0 + 1 < limit && w1 > 0) {
      tap.count = 2;
      tap.weight[0] = static_cast<std::int16_t>(kOne - w1);
      tap.weight[1] = w1;
    } else {
      tap.count = 1;
      tap.weight[0] = kOne;
    }
  }
}

// Each output pixel averages [f0 + o * step, f0 + (o + 1) * step), clamped to the source.
void area_taps(double f0, double extent, int out, int limit, std::vector<ResampleTap>& t) {
  t.assign(static_cast<std::size_t>(out), ResampleTap{});
  const double step = extent / out;
  for (int o = 0; o < out; ++o) {
    const double a = std::clamp(f0 + o * step, 0.0, static_cast<double>(limit));
    const double b = std::clamp(f0 + (o + 1) * step, a, static_cast<double>(limit));
    ResampleTap& tap = t[static_cast<std::size_t>(o)];
    int i0 = std::min(static_cast<int>(a), limit - 1);
    if (b - a < 1e-9) {  // degenerate at an edge: the nearest pixel
      tap.first = i0;
      tap.count = 1;
      tap.weight[0] = kOne;
      continue;
    }
    const int i1 = std::clamp(static_cast<int>(std::ceil(b)), i0 + 1, limit);  // exclusive
    double w[kMaxResampleTaps] = {};
    const int n = std::min(i1 - i0, kMaxResampleTaps);
    for (int k = 0; k < n; ++k) {
      const double lo = std::max(a, static_cast<double>(i0 + k));
      const double hi = std::min(b, static_cast<double>(i0 + k + 1));
      w[k] = std::max(0.0, hi - lo) / (b - a);
    }
    tap.first = i0;
    tap.count = n;
    quantize(w, n, tap.weight);
  }
}

std::int32_t pack(std::int16_t w0, std::int16_t w1) {
  return static_cast<std::int32_t>(
      (static_cast<std::uint32_t>(static_cast<std::uint16_t>(w1)) << 16) |
      static_cast<std::uint16_t>(w0));
}

// Output columns [from, to) of `c` channels from the vertically blended row.
void horizontal_scalar(const std::int16_t* row, const ColumnTap* cols, int from, int to, int c,
                       std::uint8_t* out) {
  for (int x = from; x < to; ++x) {
    const ColumnTap& t = cols[x];
    std::int32_t w[kMaxResampleTaps];
    for (int j = 0; j < kMaxResampleTaps; ++j)
      w[j] = static_cast<std::int16_t>(j % 2 == 0 ? t.weights[j / 2] & 0xFFFF
                                                  : t.weights[j / 2] >> 16);
    for (int k = 0; k < c; ++k) {
      std::int32_t v = 0;
      for (int j = 0; j < kMaxResampleTaps; ++j) v += row[t.off[j] + k] * w[j];
      out[x * c + k] = static_cast<std::uint8_t>(std::clamp((v + kHalf) >> kShift, 0, 255));
    }
  }
}

#if defined(__SSE2__)
// The 4 lanes at each of the first 2 * kPairs taps' offsets, blended, as 32-bit sums.
template <int kPairs>
inline __m128i blend4(const std::int16_t* row, const ColumnTap& t) {
  const auto lanes = [&](int j) {
    return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + t.off[j]));
  };
  __m128i sum = _mm_setzero_si128();
  for (int p = 0; p < kPairs; ++p) {
    sum = _mm_add_epi32(sum, _mm_madd_epi16(_mm_unpacklo_epi16(lanes(2 * p), lanes(2 * p + 1)),
                                            _mm_set1_epi32(t.weights[p])));
  }
  return sum;
}

// Three channels, four output pixels per step: each pixel is four 16-bit lanes (its three
// channels and one from the next pixel, ignored), blended with multiply-adds. Writes 14 bytes
// per step, 2 past the group: the caller finishes the last pixels with the scalar loop.
// REQUIRES: `row` has one readable element past the blended span.
template <int kPairs>
int horizontal3(const std::int16_t* row, const ColumnTap* cols, int dw, std::uint8_t* out) {
  const __m128i half = _mm_set1_epi32(kHalf);
  const auto px = [&](int x) {
    return _mm_srai_epi32(_mm_add_epi32(blend4<kPairs>(row, cols[x]), half), kShift);
  };
  int x = 0;
  for (; x + 6 <= dw; x += 4) {
    const __m128i bytes =
        _mm_packus_epi16(_mm_packs_epi32(px(x), px(x + 1)), _mm_packs_epi32(px(x + 2), px(x + 3)));
    // Lanes: A0 A1 A2 A3 B0 B1 B2 B3 | C0 ... D3 -> A0 A1 A2 B0 B1 B2 | C0 C1 C2 D0 D1 D2.
    const auto lo = static_cast<std::uint64_t>(_mm_cvtsi128_si64(bytes));
    const auto hi = static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(bytes, bytes)));
    const std::uint64_t ab = (lo & 0xFFFFFFull) | ((lo >> 8) & 0xFFFFFF000000ull);
    const std::uint64_t cd = (hi & 0xFFFFFFull) | ((hi >> 8) & 0xFFFFFF000000ull);
    std::memcpy(out + x * 3, &ab, 8);
    std::memcpy(out + x * 3 + 6, &cd, 8);
  }
  return x;
}
#endif

// row[i] = sum over the tap's rows of weight * pixel, one pass per pair of rows.
void vertical(const std::uint8_t* r0, std::size_t stride, const ResampleTap& t, std::size_t span,
              std::int16_t* row) {
  const std::int16_t w0 = t.weight[0], w1 = t.weight[1];
  const std::uint8_t* r1 = r0 + stride;
  if (t.count == 1) {
    for (std::size_t i = 0; i < span; ++i) row[i] = static_cast<std::int16_t>(r0[i] * w0);
    return;
  }
  for (std::size_t i = 0; i < span; ++i)
    row[i] = static_cast<std::int16_t>(r0[i] * w0 + r1[i] * w1);
  for (int k = 2; k < t.count; k += 2) {
    const std::uint8_t* a = r0 + static_cast<std::size_t>(k) * stride;
    const std::int16_t wa = t.weight[k];
    if (k + 1 < t.count) {
      const std::uint8_t* b = a + stride;
      const std::int16_t wb = t.weight[k + 1];
      for (std::size_t i = 0; i < span; ++i)
        row[i] = static_cast<std::int16_t>(row[i] + a[i] * wa + b[i] * wb);
    } else {
      for (std::size_t i = 0; i < span; ++i) row[i] = static_cast<std::int16_t>(row[i] + a[i] * wa);
    }
  }
}

void make_taps(ResampleFilter filter, double f0, double extent, int out, int limit,
               std::vector<ResampleTap>& t) {
  if (filter == ResampleFilter::kArea)
    area_taps(f0, extent, out, limit, t);
  else
    linear_taps(f0, extent, out, limit, t);
}

}  // namespace

bool resample_supports(ResampleFilter filter, double extent_x, int out_x, double extent_y,
                       int out_y) {
  if (filter == ResampleFilter::kLinear) return true;
  // An output pixel spanning r source pixels touches at most ceil(r) + 1 of them.
  return extent_x / out_x + 2 <= kMaxResampleTaps && extent_y / out_y + 2 <= kMaxResampleTaps;
}

void resample(const ImageRef& src, double fx, double fy, double fw, double fh, std::uint8_t* dst,
              int dw, int dh, bool mirror, ResampleFilter filter, ResampleScratch& scratch) {
  const int c = src.channels;
  make_taps(filter, fx, fw, dw, src.width, scratch.xs);
  make_taps(filter, fy, fh, dh, src.height, scratch.ys);
  // Only the source columns some output pixel reads are blended vertically.
  int first = src.width, last = 0, most = 0;
  for (const ResampleTap& t : scratch.xs) {
    first = std::min(first, t.first);
    last = std::max(last, t.first + t.count - 1);
    most = std::max(most, t.count);
  }
  const std::size_t span = static_cast<std::size_t>(last - first + 1) * c;
  scratch.row.assign(span + 1, 0);  // +1: horizontal3 reads one lane past the last pixel
  std::int16_t* row = scratch.row.data();
  // Mirrored output reads the columns right to left.
  scratch.columns.resize(scratch.xs.size());
  for (std::size_t x = 0; x < scratch.xs.size(); ++x) {
    const ResampleTap& t = scratch.xs[mirror ? scratch.xs.size() - 1 - x : x];
    ColumnTap& col = scratch.columns[x];
    for (int j = 0; j < kMaxResampleTaps; ++j)  // unused taps read tap 0 with weight 0
      col.off[j] = (t.first + (j < t.count ? j : 0) - first) * c;
    for (int p = 0; p < kMaxResampleTaps / 2; ++p)
      col.weights[p] = pack(t.weight[2 * p], t.weight[2 * p + 1]);
  }
  const ColumnTap* cols = scratch.columns.data();
  for (int y = 0; y < dh; ++y) {
    const ResampleTap& ty = scratch.ys[static_cast<std::size_t>(y)];
    vertical(src.data + static_cast<std::size_t>(ty.first) * src.stride + first * c, src.stride, ty,
             span, row);
    std::uint8_t* out = dst + static_cast<std::size_t>(y) * dw * c;
    int done = 0;
#if defined(__SSE2__)
    if (c == 3) {
      if (most <= 2)
        done = horizontal3<1>(row, cols, dw, out);
      else if (most <= 4)
        done = horizontal3<2>(row, cols, dw, out);
      else if (most <= 6)
        done = horizontal3<3>(row, cols, dw, out);
      else
        done = horizontal3<kMaxResampleTaps / 2>(row, cols, dw, out);
    }
#endif
    horizontal_scalar(row, cols, done, dw, c, out);
  }
}

}  // namespace stoke::detail
