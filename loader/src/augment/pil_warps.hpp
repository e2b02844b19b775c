#pragma once
// Pillow's Image.transform(AFFINE) and Image.rotate on uint8 images, as timm's rotate, shear and
// translate ops call them (pil_ops.hpp has the rest of timm's ops), in Pillow's C arithmetic:
//  - each output pixel centre (x + 0.5, y + 0.5) is mapped through the inverse matrix in double
//    (a x + b y + c, rounded after each operation, never fused) and filtered as Geometry.c does
//    (bilinear: 2 x 2, bicubic: 4 x 4 with a = -1, both in double, edges clamped); a centre
//    outside [0, size) takes the fill;
//  - Image.rotate's matrix is its Python arithmetic: cos and sin of -radians(angle % 360)
//    rounded to 15 decimals, about the image centre, with its fast paths (0: unchanged; 180,
//    and 90 and 270 of a square image: an exact transposition).
// tests/data/pil_golden.bin holds Pillow 13.0's outputs for them; stoke matches it byte for byte.
//
// Thread-safety: functions of their arguments; the copy buffer belongs to one thread.

#include <array>
#include <cstdint>
#include <vector>

#include "augment/photometric.hpp"

namespace stoke::detail {

// Pillow's transform filters, by its numbers (Image.Resampling).
enum class PilFilter : int { kBilinear = 2, kBicubic = 3 };

// An RGB fill colour (a 1-channel image takes fill[0]).
using PilFill = std::array<std::uint8_t, 3>;

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

}  // namespace stoke::detail
