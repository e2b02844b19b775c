#pragma once
// torchvision's photometric ops, one function each, as apply_color_op (photometric.hpp) runs
// them: the colour ops are photometric_color.cpp's, the two that filter a neighbourhood
// (sharpness and the gaussian blur) photometric_filters.cpp's. photometric.hpp says whose
// arithmetic they follow and where they part from it. REQUIRES (every op): image.channels is 1
// or 3, the arguments in the ranges the pipeline's validation guarantees.
//
// Thread-safety: functions of their arguments.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "augment/photometric.hpp"

namespace stoke::detail {

// `.clamp_(0, 255).to(torch.uint8)`: the conversion truncates toward zero.
inline std::uint8_t clamp_to_byte(float v) {
  return static_cast<std::uint8_t>(std::clamp(v, 0.0f, 255.0f));
}

// torchvision's `1.0 - ratio`: taken in double, as Python does, and rounded by torch. A factor
// that was no float32 (the policies' 1 + m) comes with its own (args[1]; pipeline.hpp).
inline float one_minus(const ColorOpArgs& op) {
  return op.args[1] != 0.f ? op.args[1] : static_cast<float>(1.0 - static_cast<double>(op.args[0]));
}

// The colour ops, each ColorOp's of the same name; `op` carries the factor in args[0].
void brightness(const Pixels& image, float factor);
void contrast(const Pixels& image, const ColorOpArgs& op);
void saturation(const Pixels& image, const ColorOpArgs& op);
void hue(const Pixels& image, float factor);
void grayscale(const Pixels& image);
void solarize(const Pixels& image, float threshold);
void posterize(const Pixels& image, int bits);
void invert(const Pixels& image);
void equalize(const Pixels& image);
void autocontrast(const Pixels& image);

// adjust_sharpness; `copy` receives the image, which the op reads while it writes.
void sharpness(const Pixels& image, const ColorOpArgs& op, std::vector<std::uint8_t>& copy);
// gaussian_blur with a kw x kh kernel of standard deviation sigma, through the scratch's f0, f1,
// f2 and u0; an image no wider than kw / 2 or no taller than kh / 2 is left as it is.
void gaussian_blur(const Pixels& image, int kw, int kh, float sigma, PhotometricScratch& scratch);

}  // namespace stoke::detail
