// Batch.applied_ops: what each sample's photometric ops and policies drew, as Python tuples
// (the names and numbers torchvision's and timm's functions take).

#include <cstdint>
#include <span>
#include <string>

#include "bindings.hpp"

namespace stoke::python {
namespace {

// timm's ops as Python sees them: integers where timm's functions take ints, a warp's fill as
// an (r, g, b) tuple.
nb::tuple timm_op_tuple(const std::string& name, const AppliedOp& op) {
  const auto i = [&](int k) { return static_cast<int>(op.args[k]); };
  switch (op.op) {
    case ImageOp::kPilPosterize:
    case ImageOp::kPilSolarize:
      return nb::make_tuple(name, i(0));
    case ImageOp::kPilSolarizeAdd:
      return nb::make_tuple(name, i(0), i(1));
    case ImageOp::kPilRotate:
    case ImageOp::kPilShearX:
    case ImageOp::kPilShearY:
    case ImageOp::kPilTranslateXRel:
    case ImageOp::kPilTranslateYRel:
      return nb::make_tuple(name, op.args[0], i(1), nb::make_tuple(i(2), i(3), i(4)));
    case ImageOp::kTimmAugMixChain:
      return nb::make_tuple(name, op.args[0], i(1), i(2), op.args[3] != 0);
    default:
      break;
  }
  nb::list numbers;
  numbers.append(name);
  for (int k = 0; k < image_op_arg_count(op.op); ++k) numbers.append(op.args[k]);
  return nb::tuple(numbers);
}

}  // namespace

nb::list applied_ops(const Batch& b) {
  const int width = b.max_applied_ops();
  const std::span<const AppliedOp> all = b.applied_ops();
  // kNoFill (torchvision's fill=None) as None.
  const auto fill = [](float f) -> nb::object { return f == kNoFill ? nb::none() : nb::cast(f); };
  nb::list samples;
  for (int i = 0; i < b.size(); ++i) {
    nb::list ops;
    for (int k = 0; k < width; ++k) {
      const AppliedOp& op = all[static_cast<std::size_t>(i * width + k)];
      if (op.op == ImageOp::kNone) break;
      const std::string name(image_op_name(op.op));
      if (op.op == ImageOp::kAffine || op.op == ImageOp::kAffineAtOrigin ||
          op.op == ImageOp::kAffineBilinear)
        ops.append(nb::make_tuple(name, op.args[0], op.args[1], op.args[2], op.args[3], op.args[4],
                                  op.args[5], fill(op.args[6])));
      else if (op.op == ImageOp::kRotate)
        ops.append(nb::make_tuple(name, op.args[0], fill(op.args[1])));
      else if (op.op == ImageOp::kShear)
        ops.append(
            nb::make_tuple(name, op.args[0], static_cast<int>(op.args[1]), fill(op.args[2])));
      else if (op.op == ImageOp::kAugMix)
        ops.append(nb::make_tuple(name, op.args[0], static_cast<int>(op.args[1]),
                                  op.args[2] == 1.f ? "bilinear" : "nearest", fill(op.args[3])));
      else if (op.op == ImageOp::kAugMixChain)
        ops.append(nb::make_tuple(name, op.args[0], static_cast<int>(op.args[1])));
      else if (op.op == ImageOp::kGaussianBlur)
        ops.append(nb::make_tuple(name, static_cast<int>(op.args[0]), static_cast<int>(op.args[1]),
                                  op.args[2]));
      else if (op.op == ImageOp::kContrast || op.op == ImageOp::kSaturation ||
               op.op == ImageOp::kSharpness)  // the factor, 1 - factor or 0
        ops.append(nb::make_tuple(name, op.args[0], op.args[1]));
      else if (op.op == ImageOp::kPosterize)
        ops.append(nb::make_tuple(name, static_cast<int>(op.args[0])));
      else if (op.op == ImageOp::kErase)
        ops.append(nb::make_tuple(name, static_cast<int>(op.args[0]), static_cast<int>(op.args[1]),
                                  static_cast<int>(op.args[2]), static_cast<int>(op.args[3]),
                                  op.args[4], op.args[5], op.args[6]));
      else if (op.op == ImageOp::kEraseNoise || op.op == ImageOp::kEraseChannelNoise) {
        std::uint64_t key = 0;
        for (int j = 0; j < 3; ++j) key |= static_cast<std::uint64_t>(op.args[4 + j]) << (16 * j);
        ops.append(nb::make_tuple(name, static_cast<int>(op.args[0]), static_cast<int>(op.args[1]),
                                  static_cast<int>(op.args[2]), static_cast<int>(op.args[3]), key));
      } else if (op.op >= ImageOp::kPilAutocontrast)
        ops.append(timm_op_tuple(name, op));
      else if (op.op == ImageOp::kGrayscale || op.op == ImageOp::kEqualize ||
               op.op == ImageOp::kAutocontrast || op.op == ImageOp::kInvert)
        ops.append(nb::make_tuple(name));
      else
        ops.append(nb::make_tuple(name, op.args[0]));
    }
    samples.append(ops);
  }
  return samples;
}

const char* const kAppliedOpsDoc =
    "Per sample, the photometric ops it got in the order applied, as tuples of the op's "
    "name and its drawn numbers: ('brightness', factor), ('contrast', factor, rest), "
    "('saturation', factor, rest), ('hue', factor), ('grayscale',), ('solarize', "
    "threshold), ('posterize', bits), ('equalize',), ('autocontrast',), ('sharpness', "
    "factor, rest) (rest: the blend's 1 - factor as torch takes it when the factor "
    "torchvision got was no float32, the policies' 1 + m; else 0), "
    "('invert',), ('gaussian_blur', kernel_width, kernel_height, sigma), ('affine', "
    "angle, translate_x, translate_y, scale, shear_x, shear_y, fill) and "
    "('affine_at_origin', ...) (center [0, 0]), ('rotate', angle, fill), ('shear', m, "
    "axis, fill) (the policies' ShearX/ShearY: F.affine with shear degrees(atan(m)) "
    "about [0, 0]) (nearest), ('affine_bilinear', angle, translate_x, translate_y, scale, "
    "shear_x, shear_y, fill) (random_affine_bilinear: F.affine with "
    "interpolation=BILINEAR): each "
    "torchvision.transforms.v2.functional's op of that name on uint8 pixels. timm's ops "
    "(timm_augment) come as ('pil_<name>', numbers...), timm.data.auto_augment's function "
    "<name> and its arguments: ('pil_rotate', degrees, filter, (r, g, b)) and the other "
    "warps alike (filter: Pillow's number, 2 bilinear or 3 bicubic), ('pil_posterize', "
    "bits), ('pil_solarize', threshold), ('pil_solarize_add', add, threshold), "
    "('pil_color', factor) and contrast, brightness, sharpness; AugMix as "
    "('timm_augmix_chain', weight, ops, index, blended) before each chain's ops and "
    "('timm_augmix_blend', m) after the last. torchvision's AugMix (augmix): "
    "('augmix', m0, chains, interpolation, fill), then per chain ('augmix_chain', "
    "weight, ops) and its ops, whose warps sample with that interpolation; the output is "
    "m0 * image + the sum of weight * chain in float32, truncated; a fill of None is "
    "torchvision's fill=None. Then "
    "random_erasing's rectangle, if any: ('erase', top, left, height, width, v0, v1, v2) "
    "(F.erase with those values, in normalized units for float outputs), or "
    "('erase_noise', top, left, height, width, key) and ('erase_channel_noise', ...) "
    "(N(0, 1) per value or per channel, from stoke's noise with that key).";

}  // namespace stoke::python
