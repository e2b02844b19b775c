#pragma once
// The checks every kernel over a normalized chunk (erase, mix) makes of its shape, type and
// layout, with the same words. Thread-safety: a pure function.

#include <stdexcept>
#include <string>

#include "stoke/kernels/normalize.hpp"

namespace stoke::detail {

// Throws std::invalid_argument "<kernel>: ..." for non-positive sizes, channels outside 1..4, a
// dtype that is not a float type (`why_float` says why in the message) or an unknown layout.
inline void check_float_chunk(const char* kernel, int samples, int height, int width,
                              int channels, DType dtype, Layout layout, const char* why_float) {
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(std::string(kernel) + ": " + what);
  };
  if (samples <= 0 || height <= 0 || width <= 0)
    fail("samples, height and width must be positive (got " + std::to_string(samples) + ", " +
         std::to_string(height) + ", " + std::to_string(width) + ")");
  if (channels < 1 || channels > 4)
    fail("channels must be in 1..4 (got " + std::to_string(channels) + ")");
  if (dtype != DType::kFloat32 && dtype != DType::kFloat16 && dtype != DType::kBFloat16)
    fail(std::string("dtype must be float32, float16 or bfloat16 (") + why_float + ")");
  if (layout != Layout::kNCHW && layout != Layout::kNHWC)
    fail("unknown layout value " + std::to_string(static_cast<int>(layout)));
}

}  // namespace stoke::detail
