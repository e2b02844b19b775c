// The names and argument counts of the ops Batch::applied_ops() reports (stoke/pipeline.hpp).

#include "stoke/pipeline.hpp"

namespace stoke {

std::string_view image_op_name(ImageOp op) {
  switch (op) {
    case ImageOp::kBrightness:
      return "brightness";
    case ImageOp::kContrast:
      return "contrast";
    case ImageOp::kSaturation:
      return "saturation";
    case ImageOp::kHue:
      return "hue";
    case ImageOp::kGrayscale:
      return "grayscale";
    case ImageOp::kSolarize:
      return "solarize";
    case ImageOp::kPosterize:
      return "posterize";
    case ImageOp::kEqualize:
      return "equalize";
    case ImageOp::kAutocontrast:
      return "autocontrast";
    case ImageOp::kSharpness:
      return "sharpness";
    case ImageOp::kInvert:
      return "invert";
    case ImageOp::kGaussianBlur:
      return "gaussian_blur";
    case ImageOp::kAffine:
      return "affine";
    case ImageOp::kAffineAtOrigin:
      return "affine_at_origin";
    case ImageOp::kRotate:
      return "rotate";
    case ImageOp::kShear:
      return "shear";
    case ImageOp::kErase:
      return "erase";
    case ImageOp::kEraseNoise:
      return "erase_noise";
    case ImageOp::kEraseChannelNoise:
      return "erase_channel_noise";
    case ImageOp::kPilAutocontrast:
      return "pil_autocontrast";
    case ImageOp::kPilEqualize:
      return "pil_equalize";
    case ImageOp::kPilInvert:
      return "pil_invert";
    case ImageOp::kPilPosterize:
      return "pil_posterize";
    case ImageOp::kPilSolarize:
      return "pil_solarize";
    case ImageOp::kPilSolarizeAdd:
      return "pil_solarize_add";
    case ImageOp::kPilColor:
      return "pil_color";
    case ImageOp::kPilContrast:
      return "pil_contrast";
    case ImageOp::kPilBrightness:
      return "pil_brightness";
    case ImageOp::kPilSharpness:
      return "pil_sharpness";
    case ImageOp::kPilRotate:
      return "pil_rotate";
    case ImageOp::kPilShearX:
      return "pil_shear_x";
    case ImageOp::kPilShearY:
      return "pil_shear_y";
    case ImageOp::kPilTranslateXRel:
      return "pil_translate_x_rel";
    case ImageOp::kPilTranslateYRel:
      return "pil_translate_y_rel";
    case ImageOp::kTimmAugMixChain:
      return "timm_augmix_chain";
    case ImageOp::kTimmAugMixBlend:
      return "timm_augmix_blend";
    case ImageOp::kAffineBilinear:
      return "affine_bilinear";
    case ImageOp::kAugMix:
      return "augmix";
    case ImageOp::kAugMixChain:
      return "augmix_chain";
    case ImageOp::kNone:
      break;
  }
  return "";
}

int image_op_arg_count(ImageOp op) {
  switch (op) {
    case ImageOp::kNone:
    case ImageOp::kGrayscale:
    case ImageOp::kEqualize:
    case ImageOp::kAutocontrast:
    case ImageOp::kInvert:
    case ImageOp::kPilAutocontrast:
    case ImageOp::kPilEqualize:
    case ImageOp::kPilInvert:
      return 0;
    case ImageOp::kBrightness:
    case ImageOp::kHue:
    case ImageOp::kSolarize:
    case ImageOp::kPosterize:
    case ImageOp::kPilPosterize:
    case ImageOp::kPilSolarize:
    case ImageOp::kPilColor:
    case ImageOp::kPilContrast:
    case ImageOp::kPilBrightness:
    case ImageOp::kPilSharpness:
    case ImageOp::kTimmAugMixBlend:
      return 1;
    case ImageOp::kContrast:  // the factor, and the blend's 1 - factor as torch takes it
    case ImageOp::kSaturation:
    case ImageOp::kSharpness:
    case ImageOp::kRotate:
    case ImageOp::kPilSolarizeAdd:
    case ImageOp::kAugMixChain:
      return 2;
    case ImageOp::kGaussianBlur:
    case ImageOp::kShear:
      return 3;
    case ImageOp::kTimmAugMixChain:
    case ImageOp::kAugMix:
      return 4;
    case ImageOp::kPilRotate:
    case ImageOp::kPilShearX:
    case ImageOp::kPilShearY:
    case ImageOp::kPilTranslateXRel:
    case ImageOp::kPilTranslateYRel:
      return 5;
    case ImageOp::kAffine:
    case ImageOp::kAffineAtOrigin:
    case ImageOp::kAffineBilinear:
    case ImageOp::kErase:
    case ImageOp::kEraseNoise:
    case ImageOp::kEraseChannelNoise:
      return 7;
  }
  return 0;
}

}  // namespace stoke
