#pragma once
// The image operations of timm's RandAugment and AugMix (timm.data.auto_augment's op
// functions), computed as Pillow computes them on uint8 images: ImageOps' tables
// (autocontrast, equalize, invert, posterize, solarize, and timm's solarize_add), ImageEnhance's
// blends with their degenerate images (Color, Contrast, Brightness, Sharpness) and
// Image.transform / Image.rotate with its bilinear and bicubic filters and a fill colour. Each
// is Pillow's C arithmetic in its order and precision:
//  - Image.blend takes its factor as a float32 and computes in1 + factor * (in2 - in1) in
//    float32, truncated (clamped to [0, 255] first when the factor lies outside [0, 1]);
//  - the grey of Color and Contrast is Pillow's integer L: (19595 r + 38470 g + 7471 b +
//    2^15) >> 16; Contrast's grey level is int(mean + 0.5) of the L image, in double;
//  - Sharpness blends with ImageFilter.SMOOTH (1 around, 5 in the middle, each weight a float32
//    over 13, summed row below, row, row above, plus 0.5, truncated), which leaves the first
//    and last row and column as they are, and the whole image when it has fewer than 3 rows or
//    columns;
//  - autocontrast's table is int(v * scale + offset) in double, equalize's the integer steps of
//    ImageOps.equalize, clamped to 255 as Image.point clamps;
//  - the affine transforms map the output pixel centre (x + 0.5, y + 0.5) through the inverse
//    matrix in double (a x + b y + c, rounded after each operation, never fused) and filter
//    as Geometry.c does (bilinear: 2 x 2, bicubic: 4 x 4 with a = -1, both in double, edges
//    clamped, a centre outside [0, size) takes the fill); Image.rotate's matrix is its Python
//    arithmetic: cos and sin of -radians(angle % 360) rounded to 15 decimals, about the image
//    centre, with its fast paths (0: unchanged; 180, and 90 and 270 of a square image: an exact
//    transposition).
// Posterize keeps Pillow 12's table for 0 bits and fewer (every value 0, which timm's
// PosterizeIncreasing asks for at magnitude 10); Pillow 13's ImageOps.posterize raises there.
//
// The golden file tests/data/pil_golden.bin holds Pillow 13.0's outputs for these ops; stoke
// matches it byte for byte.
//
// Thread-safety: functions of their arguments; the copy buffer belongs to one thread.

#include <array>
#include <cstdint>
#include <vector>

#include "augment/photometric.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {

// Pillow's transform filters, by its numbers (Image.Resampling).
enum class PilFilter : int { kBilinear = 2, kBicubic = 3 };

// An RGB fill colour (a 1-channel image takes fill[0]).
using PilFill = std::array<std::uint8_t, 3>;

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

// image.transform(image.size, Image.AFFINE, m, filter, fillcolor=fill), in place; `copy`
// receives the input. m maps an output point to the input: (m[0] x + m[1] y + m[2], m[3] x +
// m[4] y + m[5]).
void pil_affine(const Pixels& image, const std::array<double, 6>& m, PilFilter filter,
                const PilFill& fill, std::vector<std::uint8_t>& copy);
// image.rotate(degrees, filter, fillcolor=fill): counter-clockwise about the centre, the same
// size.
void pil_rotate(const Pixels& image, double degrees, PilFilter filter, const PilFill& fill,
                std::vector<std::uint8_t>& copy);

// Image.rotate's matrix for a width x height image turned by `degrees` (after the fast paths).
std::array<double, 6> pil_rotate_matrix(double degrees, int width, int height);

// Applies one of the timm ops (ImageOp kPilAutocontrast to kPilTranslateYRel) as
// stoke/pipeline.hpp gives their numbers. REQUIRES: image.channels is 1 or 3; the numbers in
// those ranges (the pipeline's draws make them so).
void apply_pil_op(const AppliedOp& op, const Pixels& image, PhotometricScratch& scratch);

// Whether `op` is one of those.
constexpr bool is_pil_op(ImageOp op) {
  return op >= ImageOp::kPilAutocontrast && op <= ImageOp::kPilTranslateYRel;
}

}  // namespace stoke::detail
