// Host float -> float16/bfloat16 with the exact results of CUDA's __float2half_rn and
// __float2bfloat16_rn, so the CPU reference and the GPU kernel agree bit for bit.

#include <bit>
#include <cstdint>

#include "stoke/kernels/normalize.hpp"

namespace stoke::kernels {
namespace {

// Rounds `value >> shift` to nearest, ties to even. REQUIRES: 1 <= shift <= 31.
std::uint32_t shift_right_rne(std::uint32_t value, int shift) {
  const std::uint32_t kept = value >> shift;
  const std::uint32_t rest = value & ((std::uint32_t{1} << shift) - 1);
  const std::uint32_t half = std::uint32_t{1} << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

}  // namespace

std::uint16_t float_to_half_rn(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t mag = bits & 0x7fffffffu;
  if (mag > 0x7f800000u) return 0x7fffu;  // NaN: canonical, sign dropped, as CUDA does
  // 65520 (0x477ff000) is halfway between 65504 and 2^16, and ties-to-even goes to 2^16 = inf.
  if (mag >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (mag >= 0x38800000u) {  // >= 2^-14: a normal half; rebias the exponent from 127 to 15
    // A mantissa carry correctly bumps the exponent (at most to 0x7bff + 1 = 0x7c00 is excluded
    // above).
    return static_cast<std::uint16_t>(sign | shift_right_rne(mag - 0x38000000u, 13));
  }
  // 2^-25 (0x33000000) is halfway between 0 and the smallest subnormal 2^-24: ties to 0.
  if (mag <= 0x33000000u) return static_cast<std::uint16_t>(sign);
  // Subnormal half: value = mant * 2^(exp - 150), in units of 2^-24 that is mant >> (126 - exp).
  // exp is in [102, 112] here, so the shift is in [14, 24]; rounding up to 0x400 yields the
  // smallest normal, which is the right encoding.
  const int exp = static_cast<int>(mag >> 23);
  const std::uint32_t mant = (mag & 0x7fffffu) | 0x800000u;
  return static_cast<std::uint16_t>(sign | shift_right_rne(mant, 126 - exp));
}

std::uint16_t float_to_bfloat16_rn(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;  // NaN: canonical, as CUDA does
  // Overflow past the largest finite bfloat16 carries into the exponent and yields inf.
  return static_cast<std::uint16_t>(shift_right_rne(bits, 16));
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return std::bit_cast<float>(sign);
  // Subnormal half: normalize it into a float's exponent.
  std::uint32_t e = 113u;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    e -= 1;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

float bfloat16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace stoke::kernels
