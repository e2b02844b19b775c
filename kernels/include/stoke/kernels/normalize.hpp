#pragma once
// uint8 image batch -> normalized float32/float16/bfloat16, with crop, horizontal flip and
// NHWC/NCHW output. Host-only header: no CUDA includes; the GPU launch is declared in
// normalize_cuda.hpp.
//
// Thread safety: every function here is pure with respect to its arguments; concurrent calls
// are safe as long as their destination buffers do not overlap.
//
// Numerics (identical on CPU and GPU, so results are bit-identical): per call the host computes
// scale[c] = 1.0f / stddev[c] and bias[c] = -mean[c] * scale[c] in float; each output value is
// fmaf(float(x), scale[c], bias[c]), then rounded to the output type with round-to-nearest-even
// (float16 as __float2half_rn, bfloat16 as __float2bfloat16_rn).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "stoke/dtype.hpp"

namespace stoke::kernels {

using stoke::DType;
using stoke::Layout;

struct NormalizeParams {
  // Input: samples x height x width x channels uint8, dense NHWC.
  int samples = 0, height = 0, width = 0, channels = 0;
  // Crop window; out_* == 0 means the full height/width.
  int crop_y = 0, crop_x = 0, out_height = 0, out_width = 0;
  DType dtype = DType::kFloat32;  // kUInt8 is not a valid normalize target
  Layout layout = Layout::kNCHW;
  float mean[4] = {0, 0, 0, 0};    // in uint8 units (e.g. 0.485*255)
  float stddev[4] = {1, 1, 1, 1};  // in uint8 units
  // Per-sample 0/1 horizontal flip flags (nonzero = flip), nullptr = none. Host memory for
  // normalize_cpu, device memory for normalize_cuda.
  const std::uint8_t* flip = nullptr;
};

std::size_t dtype_size(DType);
const char* dtype_name(DType);  // "uint8", "float32", "float16", "bfloat16"
// Throws std::invalid_argument naming the accepted names.
DType parse_dtype(std::string_view);

// Output size in bytes: samples * channels * out_height * out_width * dtype_size(dtype).
// REQUIRES: validate(p) passes.
std::size_t normalized_bytes(const NormalizeParams&);

// Throws std::invalid_argument naming the problem: non-positive sizes, channels outside 1..4,
// crop window outside the image, kUInt8 target, a stddev that is zero or not finite, a mean
// that is not finite, or an output too large to index.
void validate(const NormalizeParams&);

// CPU reference, oneTBB-parallel over samples x output rows. Validates p first.
// REQUIRES: src holds samples*height*width*channels bytes; dst holds normalized_bytes(p)
// bytes (any alignment) and does not overlap src.
void normalize_cpu(const NormalizeParams& p, const std::uint8_t* src, void* dst);

// Bit-exact host equivalents of __float2half_rn and __float2bfloat16_rn (round to nearest
// even; float16 overflows to +-inf and produces subnormals; NaN becomes the canonical 0x7fff).
std::uint16_t float_to_half_rn(float);
std::uint16_t float_to_bfloat16_rn(float);
// Their exact inverses (every float16 and bfloat16 value is a float; NaNs stay NaN).
float half_to_float(std::uint16_t);
float bfloat16_to_float(std::uint16_t);

}  // namespace stoke::kernels
