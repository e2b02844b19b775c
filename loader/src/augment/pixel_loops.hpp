#pragma once
// The loops photometric_color.cpp (torchvision's ops) and pil_ops.cpp (Pillow's) share: over
// pixels, over bytes, through a table per byte or per channel, per-channel histograms and
// ranges, and the row walk of the AVX2 per-pixel loops (cpu_features.hpp: each an 8-pixel loop
// beside the baseline one, the same operations in the same order, so the same bytes). each_byte
// runs an AVX2 compilation of its loop where the CPU has one: 32 bytes a step instead of SSE2's
// 16.
//
// Thread-safety: functions of their arguments.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "augment/photometric.hpp"
#include "cpu_features.hpp"

// The functions given to each_byte round every product where their own file says (both files
// keep products apart from their adds); the compiler contracts in the function they are inlined
// into, so a file that includes this is compiled under the same rule (the exact-float rule,
// cmake/StokeExactFloat.cmake).
#if !defined(STOKE_EXACT_FLOAT)
#error "augment/pixel_loops.hpp: list the file that includes it in cmake/StokeExactFloat.cmake"
#endif

namespace stoke::detail::pixels {

using Lut = std::array<std::uint8_t, 256>;
// Counts per channel value, for each of up to 3 channels.
using Histograms = std::array<std::array<std::uint64_t, 256>, 3>;

template <typename Fn>
void for_each_pixel(const Pixels& im, Fn&& fn) {
  for (int y = 0; y < im.height; ++y) {
    std::uint8_t* p = im.row(y);
    for (int x = 0; x < im.width; ++x, p += im.channels) fn(p);
  }
}

template <typename Fn>
[[gnu::always_inline]] inline void each_byte_of_row(std::uint8_t* p, std::size_t n, const Fn& f) {
  for (std::size_t i = 0; i < n; ++i) p[i] = f(p[i]);
}

#if STOKE_AVX2_FMA_DISPATCH
template <typename Fn>
STOKE_TARGET_AVX2_FMA void each_byte_of_row_avx2(std::uint8_t* p, std::size_t n, const Fn& f) {
  each_byte_of_row(p, n, f);
}
#endif

// p[i] = f(p[i]) over every byte of the image.
template <typename Fn>
void each_byte(const Pixels& im, const Fn& f) {
  const std::size_t n = im.row_bytes();
#if STOKE_AVX2_FMA_DISPATCH
  if (has_avx2_fma()) {
    for (int y = 0; y < im.height; ++y) each_byte_of_row_avx2(im.row(y), n, f);
    return;
  }
#endif
  for (int y = 0; y < im.height; ++y) each_byte_of_row(im.row(y), n, f);
}

// How many of each row's pixels the AVX2 per-pixel loops take: a multiple of 8 (at most 2^23,
// so that eight 32-bit lane sums of bytes cannot overflow), 0 for 1 channel or without AVX2.
inline int vector_pixels(const Pixels& im) {
  if (im.channels != 3 || !has_avx2_fma()) return 0;
  return std::min(im.width, 1 << 23) / 8 * 8;
}

// A per-pixel op on a 3-channel image: vector_rows(row, n) on each row's first n =
// vector_pixels(im) pixels (an AVX2 loop of eight at a time), scalar(pixel) on the rest.
template <typename Vector, typename Scalar>
void each_rgb_pixel(const Pixels& im, const Vector& vector_rows, const Scalar& scalar) {
  const int vector = vector_pixels(im);
  for (int y = 0; y < im.height; ++y) {
    std::uint8_t* p = im.row(y);
    if (vector > 0) vector_rows(p, vector);
    for (int x = vector; x < im.width; ++x) scalar(p + static_cast<std::size_t>(x) * 3);
  }
}

// The sum of the image's grey levels: luma(pixel) over a 3-channel image, vector_rows(row, n)
// giving each row's first n = vector_pixels(im) pixels' part; the values themselves over a
// 1-channel one.
template <typename Vector, typename Scalar>
std::uint64_t sum_of_lumas(const Pixels& im, const Vector& vector_rows, const Scalar& luma) {
  std::uint64_t sum = 0;
  if (im.channels != 3) {
    for_each_pixel(im, [&](const std::uint8_t* p) { sum += p[0]; });
    return sum;
  }
  each_rgb_pixel(
      im, [&](const std::uint8_t* p, int n) { sum += vector_rows(p, n); },
      [&](const std::uint8_t* p) { sum += luma(p); });
  return sum;
}

inline Lut identity_lut() {
  Lut lut;
  for (int v = 0; v < 256; ++v) lut[static_cast<std::size_t>(v)] = static_cast<std::uint8_t>(v);
  return lut;
}

// Every byte through the one table.
void map_bytes(const Pixels& im, const Lut& lut);

// Channel k through luts[k].
void map_channels(const Pixels& im, const std::array<Lut, 3>& luts);

// Each channel's histogram (the ones past im.channels stay zero).
Histograms histograms(const Pixels& im);

// Each channel's smallest and largest value (255 and 0 past im.channels, and for no pixels).
struct ChannelRanges {
  std::array<std::uint8_t, 3> lo = {255, 255, 255}, hi = {0, 0, 0};
};
ChannelRanges channel_ranges(const Pixels& im);

}  // namespace stoke::detail::pixels
