#include "augment/photometric.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "augment/geometric_ops.hpp"
#include "augment/photometric_ops.hpp"
#include "augment/pil_ops.hpp"

namespace stoke::detail {

const std::uint8_t* tight_copy(const Pixels& im, std::vector<std::uint8_t>& copy) {
  copy.resize(im.row_bytes() * static_cast<std::size_t>(im.height));
  for (int y = 0; y < im.height; ++y)
    std::memcpy(copy.data() + static_cast<std::size_t>(y) * im.row_bytes(), im.row(y),
                im.row_bytes());
  return copy.data();
}

namespace {

// random_erasing's rectangle (args 0..3: top, left, height, width) set to the levels args[4..]
// (torchvision's F.erase on a uint8 image: the float value converted, truncating). Rectangles
// outside the image are left alone.
void erase_levels(const Pixels& image, const ColorOpArgs& op) {
  const int top = static_cast<int>(op.args[0]), left = static_cast<int>(op.args[1]);
  const int height = static_cast<int>(op.args[2]), width = static_cast<int>(op.args[3]);
  if (top < 0 || left < 0 || height <= 0 || width <= 0 || top > image.height - height ||
      left > image.width - width)
    return;
  const int c = image.channels;
  std::uint8_t level[4] = {};
  for (int k = 0; k < c && k < 3; ++k)
    level[k] = static_cast<std::uint8_t>(std::clamp(op.args[4 + k], 0.f, 255.f));
  for (int y = top; y < top + height; ++y) {
    std::uint8_t* px = image.row(y) + static_cast<std::size_t>(left) * c;
    for (int x = 0; x < width; ++x, px += c) std::memcpy(px, level, static_cast<std::size_t>(c));
  }
}

}  // namespace

void apply_color_op(const ColorOpArgs& op, const Pixels& image, PhotometricScratch& scratch,
                    Interpolation interpolation) {
  if (image.height <= 0 || image.width <= 0) return;
  switch (op.op) {
    case ColorOp::kNone:
    case ColorOp::kAugMix:
    case ColorOp::kAugMixChain:
      return;
    case ColorOp::kBrightness:
      return brightness(image, op.args[0]);
    case ColorOp::kContrast:
      return contrast(image, op);
    case ColorOp::kSaturation:
      return saturation(image, op);
    case ColorOp::kHue:
      return hue(image, op.args[0]);
    case ColorOp::kGrayscale:
      return grayscale(image);
    case ColorOp::kSolarize:
      return solarize(image, op.args[0]);
    case ColorOp::kPosterize:
      return posterize(image, static_cast<int>(op.args[0]));
    case ColorOp::kEqualize:
      return equalize(image);
    case ColorOp::kAutocontrast:
      return autocontrast(image);
    case ColorOp::kSharpness:
      return sharpness(image, op, scratch.u0);
    case ColorOp::kInvert:
      return invert(image);
    case ColorOp::kGaussianBlur:
      return gaussian_blur(image, static_cast<int>(op.args[0]), static_cast<int>(op.args[1]),
                           op.args[2], scratch);
    case ColorOp::kAffine:
      return affine(image, op, AffineCenter::kImage, scratch.u0, interpolation);
    case ColorOp::kAffineAtOrigin:
      return affine(image, op, AffineCenter::kOrigin, scratch.u0, interpolation);
    case ColorOp::kRotate:
      return rotate(image, op, scratch.u0, interpolation);
    case ColorOp::kShear:
      return policy_shear(image, op, scratch.u0, interpolation);
    case ColorOp::kAffineBilinear:
      return affine_bilinear(image, op, scratch.u0);
    case ColorOp::kErase:
      return erase_levels(image, op);
    case ColorOp::kEraseNoise:
    case ColorOp::kEraseChannelNoise:
      return;  // values of the normalized image: the batch's normalize writes them
    case ColorOp::kTimmAugMixChain:
    case ColorOp::kTimmAugMixBlend:
      return;
    default:
      if (is_pil_op(op.op)) apply_pil_op(op, image, scratch);
      return;
  }
}

}  // namespace stoke::detail
