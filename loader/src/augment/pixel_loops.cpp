#include "augment/pixel_loops.hpp"

#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stoke::detail::pixels {

void map_bytes(const Pixels& im, const Lut& lut) {
  const std::size_t n = im.row_bytes();
  for (int y = 0; y < im.height; ++y) {
    std::uint8_t* p = im.row(y);
    std::size_t i = 0;
    // Four independent lookups per step, so that their loads overlap.
    for (; i + 4 <= n; i += 4) {
      const std::uint8_t a = lut[p[i]], b = lut[p[i + 1]], c = lut[p[i + 2]], d = lut[p[i + 3]];
      p[i] = a;
      p[i + 1] = b;
      p[i + 2] = c;
      p[i + 3] = d;
    }
    for (; i < n; ++i) p[i] = lut[p[i]];
  }
}

void map_channels(const Pixels& im, const std::array<Lut, 3>& luts) {
  if (im.channels != 3) {
    map_bytes(im, luts[0]);
    return;
  }
  for (int y = 0; y < im.height; ++y) {
    std::uint8_t* p = im.row(y);
    for (int x = 0; x < im.width; ++x, p += 3) {
      const std::uint8_t r = luts[0][p[0]], g = luts[1][p[1]], b = luts[2][p[2]];
      p[0] = r;
      p[1] = g;
      p[2] = b;
    }
  }
}

Histograms histograms(const Pixels& im) {
  // Two sets of 32-bit counters, even and odd pixels apart, so that equal neighbouring values
  // do not wait on each other's increment; an image holds fewer than 2^32 pixels
  // (decode.hpp's kDefaultMaxPixels).
  std::array<std::array<std::uint32_t, 256>, 6> count{};
  const int c = im.channels;
  for (int y = 0; y < im.height; ++y) {
    const std::uint8_t* p = im.row(y);
    int x = 0;
    if (c == 3) {
      for (; x + 2 <= im.width; x += 2, p += 6) {
        ++count[0][p[0]];
        ++count[1][p[1]];
        ++count[2][p[2]];
        ++count[3][p[3]];
        ++count[4][p[4]];
        ++count[5][p[5]];
      }
      for (; x < im.width; ++x, p += 3) {
        ++count[0][p[0]];
        ++count[1][p[1]];
        ++count[2][p[2]];
      }
    } else {
      for (; x + 2 <= im.width; x += 2, p += 2) {
        ++count[0][p[0]];
        ++count[3][p[1]];
      }
      for (; x < im.width; ++x, ++p) ++count[0][p[0]];
    }
  }
  Histograms h{};
  for (std::size_t k = 0; k < 3; ++k)
    for (std::size_t v = 0; v < 256; ++v) h[k][v] = std::uint64_t{count[k][v]} + count[k + 3][v];
  return h;
}

ChannelRanges channel_ranges(const Pixels& im) {
  // 48 bytes (16 pixels of 3 channels, or 48 of 1) at a time, lane j holding channel j % c;
  // SSE2's byte minima and maxima, which baseline x86-64 has.
  constexpr std::size_t kBlock = 48;
  alignas(16) std::array<std::uint8_t, kBlock> lo, hi;
  lo.fill(255);
  hi.fill(0);
  const auto c = static_cast<std::size_t>(im.channels);
  const std::size_t n = im.row_bytes();
  ChannelRanges r;
#if defined(__SSE2__)
  __m128i l[3], h[3];
  for (int k = 0; k < 3; ++k) {
    l[k] = _mm_set1_epi8(static_cast<char>(0xff));
    h[k] = _mm_setzero_si128();
  }
#endif
  for (int y = 0; y < im.height; ++y) {
    const std::uint8_t* p = im.row(y);
    std::size_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
#if defined(__SSE2__)
      for (int k = 0; k < 3; ++k) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 16 * k));
        l[k] = _mm_min_epu8(l[k], v);
        h[k] = _mm_max_epu8(h[k], v);
      }
#else
      for (std::size_t j = 0; j < kBlock; ++j) {
        lo[j] = std::min(lo[j], p[i + j]);
        hi[j] = std::max(hi[j], p[i + j]);
      }
#endif
    }
    for (; i < n; ++i) {  // a whole number of pixels: byte i is channel i % c
      r.lo[i % c] = std::min(r.lo[i % c], p[i]);
      r.hi[i % c] = std::max(r.hi[i % c], p[i]);
    }
  }
#if defined(__SSE2__)
  for (int k = 0; k < 3; ++k) {
    _mm_store_si128(reinterpret_cast<__m128i*>(lo.data() + 16 * k), l[k]);
    _mm_store_si128(reinterpret_cast<__m128i*>(hi.data() + 16 * k), h[k]);
  }
#endif
  for (std::size_t j = 0; j < kBlock; ++j) {
    r.lo[j % c] = std::min(r.lo[j % c], lo[j]);
    r.hi[j % c] = std::max(r.hi[j % c], hi[j]);
  }
  return r;
}

}  // namespace stoke::detail::pixels
