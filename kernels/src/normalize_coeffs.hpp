#pragma once
// Private: what the CPU reference and the CUDA launch share, so both compute the per-channel
// coefficients and the output shape in exactly one place (host code compiled by the host
// compiler, never by nvcc's device pass).

#include "stoke/kernels/normalize.hpp"

namespace stoke::detail {

// Passed to the kernel by value. Invariant: only the first `channels` entries are meaningful.
struct NormalizeCoeffs {
  float scale[4];  // 1.0f / stddev[c]
  float bias[4];   // -mean[c] * scale[c]
};

// REQUIRES: kernels::validate(p) passes.
NormalizeCoeffs make_coeffs(const kernels::NormalizeParams& p);

// Output extent: out_* when nonzero, else the rest of the image after the crop offset.
inline int resolved_out_height(const kernels::NormalizeParams& p) {
  return p.out_height != 0 ? p.out_height : p.height - p.crop_y;
}
inline int resolved_out_width(const kernels::NormalizeParams& p) {
  return p.out_width != 0 ? p.out_width : p.width - p.crop_x;
}

}  // namespace stoke::detail
