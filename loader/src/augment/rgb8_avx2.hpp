#pragma once
// Eight interleaved RGB pixels (24 bytes) to and from three vectors, one channel each, for the
// per-pixel loops that photometric_color.cpp and pil_ops.cpp compile for AVX2
// (cpu_features.hpp): loads read exactly the 24 bytes, stores write exactly them.
//
// Thread-safety: pure functions.

#include <cstdint>

#include "cpu_features.hpp"

#if STOKE_AVX2_FMA_DISPATCH
#include <immintrin.h>

namespace stoke::detail::rgb8 {

// The channels of the 8 pixels at p as 32-bit integers.
struct Channels {
  __m256i r, g, b;
};

// The bytes of a that from_a names and of b that from_b names (-1: none), or-ed. (Functions,
// not lambdas: clang compiles a lambda for the baseline target.)
STOKE_TARGET_AVX2_FMA inline __m128i pick(__m128i a, __m128i b, __m128i from_a, __m128i from_b) {
  return _mm_or_si128(_mm_shuffle_epi8(a, from_a), _mm_shuffle_epi8(b, from_b));
}

STOKE_TARGET_AVX2_FMA inline Channels load(const std::uint8_t* p) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));       // bytes 0..15
  const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16));  // 16..23
  constexpr char z = -1;  // pshufb writes 0 here
  const __m128i r = pick(lo, hi, _mm_setr_epi8(0, 3, 6, 9, 12, 15, z, z, z, z, z, z, z, z, z, z),
                         _mm_setr_epi8(z, z, z, z, z, z, 2, 5, z, z, z, z, z, z, z, z));
  const __m128i g = pick(lo, hi, _mm_setr_epi8(1, 4, 7, 10, 13, z, z, z, z, z, z, z, z, z, z, z),
                         _mm_setr_epi8(z, z, z, z, z, 0, 3, 6, z, z, z, z, z, z, z, z));
  const __m128i b = pick(lo, hi, _mm_setr_epi8(2, 5, 8, 11, 14, z, z, z, z, z, z, z, z, z, z, z),
                         _mm_setr_epi8(z, z, z, z, z, 1, 4, 7, z, z, z, z, z, z, z, z));
  return {_mm256_cvtepu8_epi32(r), _mm256_cvtepu8_epi32(g), _mm256_cvtepu8_epi32(b)};
}

// Eight 32-bit values, each within 0..255, as the low 8 bytes.
STOKE_TARGET_AVX2_FMA inline __m128i narrow(__m256i v) {
  const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  return _mm_packus_epi16(words, words);
}

// REQUIRES: every value within 0..255.
STOKE_TARGET_AVX2_FMA inline void store(std::uint8_t* p, __m256i r, __m256i g, __m256i b) {
  const __m128i rg = _mm_unpacklo_epi64(narrow(r), narrow(g));  // r0..r7 g0..g7
  const __m128i bb = narrow(b);                                 // b0..b7
  constexpr char z = -1;
  const __m128i first =
      pick(rg, bb, _mm_setr_epi8(0, 8, z, 1, 9, z, 2, 10, z, 3, 11, z, 4, 12, z, 5),
           _mm_setr_epi8(z, z, 0, z, z, 1, z, z, 2, z, z, 3, z, z, 4, z));
  const __m128i second =
      pick(rg, bb, _mm_setr_epi8(13, z, 6, 14, z, 7, 15, z, z, z, z, z, z, z, z, z),
           _mm_setr_epi8(z, 5, z, z, 6, z, z, 7, z, z, z, z, z, z, z, z));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), first);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 16), second);
}

// Eight float32 values clamped to [0, 255] and truncated, as 32-bit integers: a uint8 tensor's
// `.clamp_(0, 255).to(torch.uint8)` and Pillow's clipped float-to-byte alike.
STOKE_TARGET_AVX2_FMA inline __m256i clamp_to_bytes(__m256 v) {
  return _mm256_cvttps_epi32(
      _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f)));
}

// The sum of eight 32-bit lanes, each at least 0.
STOKE_TARGET_AVX2_FMA inline std::uint64_t lane_sum(__m256i lanes) {
  alignas(32) std::int32_t parts[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(parts), lanes);
  std::uint64_t sum = 0;
  for (const std::int32_t v : parts) sum += static_cast<std::uint64_t>(v);
  return sum;
}

}  // namespace stoke::detail::rgb8

#endif
