#pragma once
// The geometric operations of the augmentation policies on uint8 images, computed as
// torchvision.transforms.v2.functional computes them on uint8 tensors (torchvision 0.29.2,
// torch 2.15 on the CPU): F.affine and F.rotate with nearest (or bilinear, below) interpolation,
// expand=False and one fill level for every channel. Each output pixel copies the input pixel
// that torch's float32 sampling grid lands on, or takes the fill where it lands outside the
// image. Nearest rounding makes most pixels indifferent to how that grid is computed; the pixels
// whose grid point sits on a half (whole or half-pixel translations, quarter turns, shears of 45
// degrees, scales of 0.5 and 2) are not, so every rounding below is torch's:
//  - the inverse matrix in double, as _get_inverse_affine_matrix's Python arithmetic, with
//    glibc's sin, cos and tan (what Python's math module calls), then rounded to float32;
//  - _affine_grid's float32 grid: each product rounded, summed x term, y term, then constant,
//    as torch's bmm does for these shapes (its own loop for small images, MKL above);
//  - grid_sample's unnormalisation (g + 1) * (size / 2) - 0.5 with the multiply and subtract
//    fused, as torch's AVX-512 grid sampler is compiled, rounded half to even.
// torchvision's conventions are kept: F.affine turns clockwise and F.rotate counter-clockwise;
// F.rotate turns by 180 degrees, and a square image by 90 or 270, with torch.rot90 (its grid
// would give the same pixels), and quarter turns of other images keep their size, so the bands
// they uncover take the fill. A half-pixel translation puts every point near a half, so
// rounding decides each pixel: an exact half goes to the even column (translated by 0.5, a width
// of 4 reads columns 0 0 2 2; by -0.5, 0 2 2 and the fill, half a pixel past the last column
// being outside for an even size and inside for an odd one), and a near half goes wherever
// float32 puts it (translated by 0.5, a width of 6 reads 0 0 1 2 3 4).
//
// The golden files tests/data/geometric_golden.bin and tests/data/random_affine_golden.bin hold
// torch's outputs for these ops, made on x86 with AVX-512; stoke matches them byte for byte.
//
// With bilinear interpolation (Interpolation::kBilinear, AugMix's default) each output pixel is
// grid_sample's blend of the four input pixels around the same grid point, unrounded: in float32,
// x_w = floor(x), w = x - x_w, e = 1 - w (likewise n and s for y), the weights s * e, s * w,
// n * e, n * w, and the blend fma(se_v, se, fma(sw_v, sw, fma(ne_v, ne, nw_v * nw))) as GCC
// contracts torch's sum of four products, a corner outside the image reading 0. With a fill, the
// same blend of a ones channel (the share of the point inside the image) mixes in the fill as
// torch does, ((v - fill) * mask) + fill, each step rounded; without one (torchvision's
// fill=None) the zeros outside blend in at the edges. Then round half to even, to a byte.
// tests/data/bilinear_golden.bin holds torch's outputs (tests/loader/make_bilinear_golden.py).
// random_affine's boxes and masks follow F.affine's kernels for BoundingBoxes and Mask (below).
//
// Thread-safety: functions of their arguments; the copy buffer belongs to one thread.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "augment/photometric.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {

// Where F.affine's rotation, scale and shear are centred: center=None (the image centre) or
// center=[0, 0] (the top-left corner, as the AutoAugment, RandAugment and TrivialAugment
// policies pass for ShearX and ShearY).
enum class AffineCenter { kImage, kOrigin };

// The fill of the ops below is a level in [0, 255], or kNoFill (stoke/pipeline.hpp) for
// torchvision's fill=None: the points outside read grid_sample's zeros (for nearest sampling,
// the same as a fill of 0).

// F.affine(image, angle=args[0], translate=[args[1], args[2]], scale=args[3],
// shear=[args[4], args[5]], interpolation, fill=args[6]), in place; `copy` receives the input
// (the image's size). REQUIRES: image.channels is 1 or 3; args[3] > 0; args[6] in [0, 255] or
// kNoFill.
void affine(const Pixels& image, const AppliedOp& op, AffineCenter center,
            std::vector<std::uint8_t>& copy, Interpolation interpolation = Interpolation::kNearest);

// F.rotate(image, angle=args[0], interpolation, expand=False, center=None, fill=args[1]), in
// place; `copy` as for affine. REQUIRES: image.channels is 1 or 3; args[1] in [0, 255] or
// kNoFill.
void rotate(const Pixels& image, const AppliedOp& op, std::vector<std::uint8_t>& copy,
            Interpolation interpolation = Interpolation::kNearest);

// The policies' ShearX (args[1] = 0) or ShearY (1) of magnitude args[0]: F.affine with
// shear=[degrees(atan(m)), 0] or [0, degrees(atan(m))], center=[0, 0], fill=args[2], the angle
// in double as Python computes it. `copy` as for affine.
void policy_shear(const Pixels& image, const AppliedOp& op, std::vector<std::uint8_t>& copy,
                  Interpolation interpolation = Interpolation::kNearest);

// F.affine(image, ..., interpolation=BILINEAR) with kAffine's numbers and centre (args[6] the
// fill): affine(image, op, AffineCenter::kImage, copy, Interpolation::kBilinear), the
// ImageOp::kAffineBilinear that random_affine_bilinear records.
void affine_bilinear(const Pixels& image, const AppliedOp& op, std::vector<std::uint8_t>& copy);

// A label map (a segmentation mask): one label of `bytes` (1 or 2, native-endian uint16) per
// pixel, rows `stride` bytes apart.
struct LabelImage {
  std::uint8_t* data = nullptr;
  int width = 0, height = 0;
  int bytes = 1;
  std::size_t stride = 0;
};

// F.affine on a tv_tensors.Mask with kAffine's (or kAffineBilinear's) numbers and centre, in
// place: nearest whatever the image's interpolation (torchvision's Mask kernel ignores it), the
// same grid as the image's, `fill` where the point lands outside. `copy` receives the input.
void affine_labels(const LabelImage& labels, const AppliedOp& op, std::uint16_t fill,
                   std::vector<std::uint8_t>& copy);

// The forward map of that F.affine on a width x height image, in its pixels (what F.affine sends
// a bounding box's corners through): (x, y) goes to (m[0] x + m[1] y + m[2], m[3] x + m[4] y +
// m[5]). _get_inverse_affine_matrix(centre, ..., inverted=False) in double (torchvision rounds
// it to float32 before its float32 product, within 1e-4 px of this at a few hundred pixels).
std::array<double, 6> affine_forward_matrix(const AppliedOp& op, int width, int height);

// Where grid_sample samples for grid value `g` on an axis of `size` pixels (half_size = size / 2):
// (g + 1) * half_size - 0.5 with one rounding, as a fused multiply-add gives. NaN stays NaN.
float source_coordinate(float g, float half_size);

// The input column (or row) that nearest sampling reads: source_coordinate rounded half to even.
// Inside the image when in [0, size - 1]; NaN stays NaN.
float source_index(float g, float half_size);

}  // namespace stoke::detail
