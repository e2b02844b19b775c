#pragma once
// What the tests of the kernels over a normalized chunk (erase_test, mix_test) share: their
// parameters' shape, where element (n, c, y, x) lives in either layout, and a float's bytes in
// an output type.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "stoke/kernels/normalize.hpp"

namespace stoke::kernels::float_chunk {

// P (EraseParams, MixParams) with its shape, type and layout set; the caller adds its entries.
template <class P>
P chunk_params(int samples, int height, int width, int channels, DType dtype, Layout layout) {
  P p;
  p.samples = samples;
  p.height = height;
  p.width = width;
  p.channels = channels;
  p.dtype = dtype;
  p.layout = layout;
  return p;
}

// The index of element (n, c, y, x) of the chunk p describes.
template <class P>
std::size_t element(const P& p, int n, int c, int y, int x) {
  const auto h = static_cast<std::size_t>(p.height), w = static_cast<std::size_t>(p.width);
  const auto ch = static_cast<std::size_t>(p.channels);
  return p.layout == Layout::kNCHW ? ((n * ch + c) * h + y) * w + x
                                   : ((n * h + y) * w + x) * ch + c;
}

// The bytes of v in the output type, rounded to nearest even.
inline std::vector<std::uint8_t> encoded(DType t, float v) {
  std::vector<std::uint8_t> out(dtype_size(t));
  if (t == DType::kFloat32) {
    std::memcpy(out.data(), &v, 4);
  } else {
    const std::uint16_t u = t == DType::kFloat16 ? float_to_half_rn(v) : float_to_bfloat16_rn(v);
    std::memcpy(out.data(), &u, 2);
  }
  return out;
}

}  // namespace stoke::kernels::float_chunk
