#pragma once
// The image operations of timm's RandAugment and AugMix (timm.data.auto_augment's op
// functions), computed as Pillow computes them on uint8 images: ImageOps' tables
// (autocontrast, equalize, invert, posterize, solarize, and timm's solarize_add) and
// ImageEnhance's blends with their degenerate images (Color, Contrast, Brightness, Sharpness);
// the affine ones (rotate, shear, translate) are pil_warps.hpp's. Each is Pillow's C arithmetic
// in its order and precision:
//  - Image.blend takes its factor as a float32 and computes in1 + factor * (in2 - in1) in
//    float32, truncated (clamped to [0, 255] first when the factor lies outside [0, 1]);
//  - the grey of Color and Contrast is Pillow's integer L: (19595 r + 38470 g + 7471 b +
//    2^15) >> 16; Contrast's grey level is int(mean + 0.5) of the L image, in double;
//  - Sharpness blends with ImageFilter.SMOOTH (1 around, 5 in the middle, each weight a float32
//    over 13, summed row below, row, row above, plus 0.5, truncated), which leaves the first
//    and last row and column as they are, and the whole image when it has fewer than 3 rows or
//    columns;
//  - autocontrast's table is int(v * scale + offset) in double, equalize's the integer steps of
//    ImageOps.equalize, clamped to 255 as Image.point clamps.
// Posterize keeps Pillow 12's table for 0 bits and fewer (every value 0, which timm's
// PosterizeIncreasing asks for at magnitude 10); Pillow 13's ImageOps.posterize raises there.
//
// The golden file tests/data/pil_golden.bin holds Pillow 13.0's outputs for these ops; stoke
// matches it byte for byte.
//
// Thread-safety: functions of their arguments; the copy buffers belong to one thread.

#include <cstdint>
#include <vector>

#include "augment/photometric.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {

void pil_autocontrast(const Pixels& image);
void pil_equalize(const Pixels& image);
void pil_invert(const Pixels& image);
// timm's posterize: 8 bits or more leave the image; 0 or fewer make it black.
void pil_posterize(const Pixels& image, int bits);
// Values at or above `threshold` become 255 - value.
void pil_solarize(const Pixels& image, int threshold);
// timm's solarize_add: values below `threshold` get `add` more, at most 255.
void pil_solarize_add(const Pixels& image, int add, int threshold);
// image = Image.blend(image, other, alpha); `other` holds the image's bytes without row padding.
void pil_blend(const Pixels& image, const std::uint8_t* other, float alpha);

// ImageEnhance.<op>(image).enhance(factor).
void pil_color(const Pixels& image, float factor);
void pil_contrast(const Pixels& image, float factor);
void pil_brightness(const Pixels& image, float factor);
// `copy` receives the input, `smoothed` its ImageFilter.SMOOTH.
void pil_sharpness(const Pixels& image, float factor, std::vector<std::uint8_t>& copy,
                   std::vector<std::uint8_t>& smoothed);

// Applies one of the timm ops (ImageOp kPilAutocontrast to kPilTranslateYRel) as
// stoke/pipeline.hpp gives their numbers. REQUIRES: image.channels is 1 or 3; the numbers in
// those ranges (the pipeline's draws make them so).
void apply_pil_op(const AppliedOp& op, const Pixels& image, PhotometricScratch& scratch);

// Whether `op` is one of those.
constexpr bool is_pil_op(ImageOp op) {
  return op >= ImageOp::kPilAutocontrast && op <= ImageOp::kPilTranslateYRel;
}

}  // namespace stoke::detail
