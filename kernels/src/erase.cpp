#include "stoke/kernels/erase.hpp"

#include <tbb/blocked_range.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "cpu_features.hpp"
#include "erase_noise.hpp"
#include "float_chunk_checks.hpp"
#include "normalize_coeffs.hpp"
#include "parallel_for.hpp"

// The noise is worked out with the device's exact operation sequence: nothing is fused (the
// exact-float rule, cmake/StokeExactFloat.cmake, which erase_noise.hpp's functions need here).

namespace stoke::kernels {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("erase: " + what);
}

// The rectangle's values in channel c, row y, column x (box coordinates), before rounding.
float box_value(const EraseBox& b, int c, int y, int x) {
  switch (b.mode) {
    case EraseMode::kConstant:
      return b.value[c];
    case EraseMode::kPixelNoise:
      return detail::erase_math::noise(
          b.key_lo, b.key_hi,
          (static_cast<std::uint32_t>(c) * b.height + y) * static_cast<std::uint32_t>(b.width) + x);
    default:  // kChannelNoise
      return detail::erase_math::noise(b.key_lo, b.key_hi, static_cast<std::uint32_t>(c));
  }
}

std::uint16_t to_16(DType t, float v) {
  return t == DType::kFloat16 ? float_to_half_rn(v) : float_to_bfloat16_rn(v);
}

[[gnu::always_inline]] inline void erase_sample(const EraseParams& p, int n, unsigned char* dst) {
  const EraseBox& b = p.boxes[n];
  if (!erases(b, p.height, p.width)) return;
  const std::size_t size = dtype_size(p.dtype);
  const std::size_t h = static_cast<std::size_t>(p.height), w = static_cast<std::size_t>(p.width);
  const std::size_t ch = static_cast<std::size_t>(p.channels);
  for (int c = 0; c < p.channels; ++c) {
    for (int y = 0; y < b.height; ++y) {
      for (int x = 0; x < b.width; ++x) {
        const std::size_t row = static_cast<std::size_t>(b.top + y);
        const std::size_t col = static_cast<std::size_t>(b.left + x);
        const std::size_t at = p.layout == Layout::kNCHW
                                   ? ((static_cast<std::size_t>(n) * ch + c) * h + row) * w + col
                                   : ((static_cast<std::size_t>(n) * h + row) * w + col) * ch + c;
        const float v = box_value(b, c, y, x);
        if (p.dtype == DType::kFloat32) {
          std::memcpy(dst + at * size, &v, sizeof v);
        } else {
          const std::uint16_t u = to_16(p.dtype, v);
          std::memcpy(dst + at * size, &u, sizeof u);
        }
      }
    }
  }
}

#if STOKE_AVX2_FMA_DISPATCH
// The same sample compiled for AVX2 and FMA, where the noise's two dozen fused multiply-adds are
// instructions instead of library calls (each correctly rounded either way: the same bits).
STOKE_TARGET_AVX2_FMA void erase_sample_avx2(const EraseParams& p, int n, unsigned char* dst) {
  erase_sample(p, n, dst);
}
#endif

}  // namespace

EraseParams erase_params(const NormalizeParams& n, const EraseBox* boxes) {
  EraseParams p;
  p.samples = n.samples;
  p.height = detail::resolved_out_height(n);
  p.width = detail::resolved_out_width(n);
  p.channels = n.channels;
  p.dtype = n.dtype;
  p.layout = n.layout;
  p.boxes = boxes;
  return p;
}

void validate(const EraseParams& p) {
  detail::check_float_chunk("erase", p.samples, p.height, p.width, p.channels, p.dtype, p.layout,
                            "uint8 images are erased by the workers");
  if (p.boxes == nullptr) fail("boxes must not be null");
}

void erase_cpu(const EraseParams& p, void* dst) {
  validate(p);
  if (dst == nullptr) fail("dst must not be null");
  auto* out = static_cast<unsigned char*>(dst);
  const bool avx2 = detail::has_avx2_fma();
  stoke::parallel_for(tbb::blocked_range<int>(0, p.samples), [&](const auto& range) {
    for (int n = range.begin(); n != range.end(); ++n) {
#if STOKE_AVX2_FMA_DISPATCH
      if (avx2) {
        erase_sample_avx2(p, n, out);
        continue;
      }
#endif
      (void)avx2;
      erase_sample(p, n, out);
    }
  });
}

float erase_noise(std::uint32_t key_lo, std::uint32_t key_hi, std::uint32_t index) {
  return detail::erase_math::noise(key_lo, key_hi, index);
}

}  // namespace stoke::kernels
