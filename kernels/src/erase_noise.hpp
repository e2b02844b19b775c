#pragma once
// Private: erase_noise's arithmetic, compiled both by the host compiler (erase.cpp) and by nvcc
// for the device (erase.cu), so the two produce the same bits. Every float operation is one of
// the correctly rounded IEEE ones (add, multiply, fused multiply-add, divide, square root), each
// spelled out so neither compiler may fuse or reorder it (on the host, a file that includes this
// is compiled under the exact-float rule, cmake/StokeExactFloat.cmake); log and cos are
// polynomials of those.

#include <cstdint>

#if !defined(__CUDACC__) && !defined(STOKE_EXACT_FLOAT)
#error "erase_noise.hpp: list the file that includes it in cmake/StokeExactFloat.cmake"
#endif

#if defined(__CUDACC__)
#define STOKE_HOST_DEVICE __host__ __device__
#else
#define STOKE_HOST_DEVICE
#include <cmath>
#endif

namespace stoke::detail::erase_math {

STOKE_HOST_DEVICE inline float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
STOKE_HOST_DEVICE inline float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
STOKE_HOST_DEVICE inline float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
STOKE_HOST_DEVICE inline float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
STOKE_HOST_DEVICE inline float sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

STOKE_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// ln(k * 2^-24) for k in [1, 2^24]: k = m * 2^e with m in [sqrt(1/2), sqrt(2)) (both exact, and
// no cancellation between e ln 2 and ln m near u = 1, where Box-Muller's radius is small), and
// ln(m) = 2 atanh(s) with s = (m - 1) / (m + 1) in (-0.172, 0.172), its series to s^15 (the next
// term is below 1e-14).
STOKE_HOST_DEVICE inline float log_of_fraction(std::uint32_t k) {
  // The highest set bit (k >= 1).
#if defined(__CUDA_ARCH__)
  int e = 31 - __clz(static_cast<int>(k));
#else
  int e = 31 - __builtin_clz(k);
#endif
  // k / 2^e in [1, 2); past sqrt(2) (k^2 > 2^(2e+1)), the next power of two is the nearer one.
  if (static_cast<std::uint64_t>(k) * k > std::uint64_t{1} << (2 * e + 1)) ++e;
  const float m = div(static_cast<float>(k), static_cast<float>(std::uint64_t{1} << e));
  const float s = div(add(m, -1.0f), add(m, 1.0f));
  const float s2 = mul(s, s);
  float p = 1.0f / 15.0f;
  p = fma(p, s2, 1.0f / 13.0f);
  p = fma(p, s2, 1.0f / 11.0f);
  p = fma(p, s2, 1.0f / 9.0f);
  p = fma(p, s2, 1.0f / 7.0f);
  p = fma(p, s2, 1.0f / 5.0f);
  p = fma(p, s2, 1.0f / 3.0f);
  p = fma(p, s2, 1.0f);
  const float ln_m = mul(mul(2.0f, s), p);
  return fma(static_cast<float>(e - 24), 0.693147180559945309f, ln_m);
}

// cos(2 pi q / 2^24) for q in [0, 2^24): the quarter turn from the top two bits, then sin or
// cos of a in [0, pi/2) from their Taylor series (to a^13 and a^14: below 4e-8 at pi/2).
STOKE_HOST_DEVICE inline float cos_of_turn(std::uint32_t q) {
  const std::uint32_t quarter = q >> 22;
  const float a = mul(static_cast<float>(q & 0x3fffffu), 1.57079632679489662f / 4194304.0f);
  const float a2 = mul(a, a);
  float c = 1.0f / 87178291200.0f;  // 1/14!
  c = fma(c, a2, -1.0f / 479001600.0f);
  c = fma(c, a2, 1.0f / 3628800.0f);
  c = fma(c, a2, -1.0f / 40320.0f);
  c = fma(c, a2, 1.0f / 720.0f);
  c = fma(c, a2, -1.0f / 24.0f);
  c = fma(c, a2, 0.5f);
  const float cos_a = fma(-c, a2, 1.0f);
  float s = 1.0f / 6227020800.0f;  // 1/13!
  s = fma(s, a2, -1.0f / 39916800.0f);
  s = fma(s, a2, 1.0f / 362880.0f);
  s = fma(s, a2, -1.0f / 5040.0f);
  s = fma(s, a2, 1.0f / 120.0f);
  s = fma(s, a2, -1.0f / 6.0f);
  const float sin_a = fma(mul(s, a2), a, a);
  switch (quarter) {
    case 0:
      return cos_a;
    case 1:
      return -sin_a;
    case 2:
      return -cos_a;
    default:
      return sin_a;
  }
}

STOKE_HOST_DEVICE inline float noise(std::uint32_t key_lo, std::uint32_t key_hi,
                                     std::uint32_t index) {
  const std::uint64_t key = static_cast<std::uint64_t>(key_hi) << 32 | key_lo;
  const std::uint64_t bits = mix64(key ^ mix64(index));
  const auto k = static_cast<std::uint32_t>(bits >> 40) + 1;  // [1, 2^24]
  const auto q = static_cast<std::uint32_t>(bits >> 16) & 0xffffffu;
  const float r = sqrt(mul(-2.0f, log_of_fraction(k)));
  return mul(r, cos_of_turn(q));
}

}  // namespace stoke::detail::erase_math
