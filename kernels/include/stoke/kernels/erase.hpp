#pragma once
// Random erasing on a normalized batch (torchvision's F.erase on the normalized tensor, as its
// RandomErasing runs after Normalize): each sample's rectangle, in output pixels, gets either one
// value per channel or N(0, 1) noise. Host-only header; the GPU launch is in erase_cuda.hpp.
//
// Thread safety: every function here is pure with respect to its arguments; concurrent calls
// are safe as long as their destination buffers do not overlap.
//
// Numerics (identical on CPU and GPU, so results are bit-identical): the noise of element
// (c, y, x) of a rectangle is erase_noise(key, (c * height + y) * width + x), worked out from
// integers with only correctly rounded float operations (no library log or cos, whose results
// differ between the two), then rounded to the output type as normalize rounds.

#include <cstddef>
#include <cstdint>

#include "stoke/kernels/normalize.hpp"

namespace stoke::kernels {

enum class EraseMode : std::uint32_t {
  kNone = 0,          // the sample is left alone
  kConstant = 1,      // value[c] in every element of channel c
  kPixelNoise = 2,    // N(0, 1) per element (torchvision's value="random", timm's "pixel")
  kChannelNoise = 3,  // N(0, 1) per channel, the same in every pixel (timm's "rand")
};

// One sample's rectangle, as workers write it into a batch slot (so its layout is fixed).
struct EraseBox {
  std::int32_t top = 0, left = 0, height = 0, width = 0;  // output pixels
  EraseMode mode = EraseMode::kNone;
  std::uint32_t key_lo = 0, key_hi = 0;  // the noise's key (noise modes)
  float value[4] = {};                   // kConstant, in output units
  std::uint32_t reserved = 0;
};
static_assert(sizeof(EraseBox) == 48);

struct EraseParams {
  // The normalized output: samples x channels x height x width (NCHW) or samples x height x
  // width x channels (NHWC), of dtype.
  int samples = 0, height = 0, width = 0, channels = 0;
  DType dtype = DType::kFloat32;  // a float type
  Layout layout = Layout::kNCHW;
  // One per sample: host memory for erase_cpu, device memory for erase_cuda.
  const EraseBox* boxes = nullptr;
};

// The erasing of what normalize(n) writes: its output's shape, type and layout.
EraseParams erase_params(const NormalizeParams& n, const EraseBox* boxes);

// Throws std::invalid_argument naming the problem: non-positive sizes, channels outside 1..4,
// a uint8 or unknown dtype, an unknown layout, null boxes.
void validate(const EraseParams&);

#if defined(__CUDACC__)
#define STOKE_ERASE_HOST_DEVICE __host__ __device__
#else
#define STOKE_ERASE_HOST_DEVICE
#endif

// Whether box b lies inside a height x width image and names a known mode other than kNone:
// the kernels skip any other box, so a bad box never writes outside its sample.
STOKE_ERASE_HOST_DEVICE constexpr bool erases(const EraseBox& b, int height, int width) {
  return b.mode >= EraseMode::kConstant && b.mode <= EraseMode::kChannelNoise && b.top >= 0 &&
         b.left >= 0 && b.height > 0 && b.width > 0 && b.top <= height - b.height &&
         b.left <= width - b.width;
}

// CPU reference, oneTBB-parallel over samples. Validates p first.
// REQUIRES: dst is the normalized output described by p.
void erase_cpu(const EraseParams& p, void* dst);

// The noise value with this key at this index: a standard normal draw (Box-Muller from 48 bits
// of a hash of key and index), the same bits on CPUs and GPUs.
float erase_noise(std::uint32_t key_lo, std::uint32_t key_hi, std::uint32_t index);

}  // namespace stoke::kernels
