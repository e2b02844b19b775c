#pragma once
// The photometric operations of today's training recipes on uint8 images, computed as
// torchvision.transforms.v2.functional computes them on uint8 tensors (torchvision 0.29): the
// same float32 arithmetic in the same order, the same truncations and roundings, the same
// special cases (a 1-channel image ignores saturation and hue; sharpness leaves the border and
// images of at most 2 rows or columns alone; equalize keeps a channel with fewer than 255 pixels
// below its maximum). Each op works in place on an interleaved image of 1 or 3 channels in RGB
// order; the few that need a second image use the caller's scratch.
//
// Byte for byte, but for rare bytes that differ by one: tests/data/photometric_golden.bin holds
// torch 2.15's outputs on x86 with AVX-512. Where torch does not compute one thing everywhere,
// stoke follows one choice (photometric_color.cpp and photometric_filters.cpp give how often a
// byte moves):
//  - contrast's mean on images of more than 65,793 pixels, whose float32 sum torch takes in an
//    order set by its vector width and thread count; stoke's sum is correctly rounded;
//  - contrast's blend of the last few values of each thread's range, where torch's remainder
//    loop rounds a product that its vector loop fuses; stoke fuses everywhere (the golden file
//    holds one case that meets it: two bytes differ);
//  - blur kernels of 9 to 15 taps, whose softmax sum torch's AVX2 build folds 8 lanes at a
//    time; stoke follows the AVX-512 build's 16.
// torchvision's own arithmetic has surprises that these ops keep: its grey weights sum to
// 0.9999 and the grey is truncated, so white is 254 in grayscale (and in the grey that
// saturation and contrast blend with); autocontrast divides by (max - min) * float32(1/255),
// which for 213 of the 255 possible ranges puts a channel's maximum just short of 255, so it
// becomes 254.
//
// Thread-safety: functions of their arguments; a PhotometricScratch belongs to one thread.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "stoke/pipeline.hpp"

namespace stoke::detail {

// An interleaved uint8 image: `channels` (1 or 3, RGB) bytes per pixel, rows `stride` bytes apart.
struct Pixels {
  std::uint8_t* data = nullptr;
  int height = 0;
  int width = 0;
  int channels = 0;
  std::size_t stride = 0;

  std::uint8_t* row(int y) const { return data + static_cast<std::size_t>(y) * stride; }
  // The bytes of a row's pixels, without its padding.
  std::size_t row_bytes() const {
    return static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  }
};

// The image's rows, without their padding, in `copy` (resized to fit): what an op that reads
// its input while it writes works from. Returns copy.data().
const std::uint8_t* tight_copy(const Pixels& im, std::vector<std::uint8_t>& copy);

// One operation and its numbers (stoke::ImageOp and stoke::AppliedOp, the public record of
// what a sample got: Batch::applied_ops()). A gaussian blur of an image no wider than args[0] / 2
// or no taller than args[1] / 2 leaves it as it is (torch's reflect padding raises there).
using ColorOp = ImageOp;
using ColorOpArgs = AppliedOp;

// What the ops need beyond the image, reused across calls so that a worker allocates once: the
// blur's 2-D kernel (f0), 1-D kernels (f1) and padded image in float32 with one row of sums
// (f2), the copy of the image that sharpness, the blur
// and the geometric ops read from while they write (u0; reflect-padded for the blur, at most 9
// times the image), Pillow's smoothed image for its sharpness (u1), and an AugMix's input, its
// chain's image and its float32 sum (op_sequence.hpp, augmix.hpp).
struct PhotometricScratch {
  std::vector<float> f0, f1, f2;
  std::vector<std::uint8_t> u0, u1;
  std::vector<std::uint8_t> mix_input, mix_chain;
  std::vector<float> mix_sum;
};

// Applies `op` to `image` in place; torchvision's colour ops and filters are
// photometric_ops.hpp's; the geometric ops (kAffine, kAffineAtOrigin, kRotate, kShear,
// kAffineBilinear) are geometric_ops.hpp's, kAffine, kAffineAtOrigin, kRotate and kShear sampling
// with `interpolation`; timm's (kPil*) are pil_ops.hpp's; AugMix's records (kAugMix,
// kAugMixChain, kTimmAugMixChain, kTimmAugMixBlend) are op_sequence.hpp's and augmix.hpp's, and
// here they do nothing. REQUIRES: image.channels is 1 or 3; the arguments are in the ranges above
// and there (the pipeline's validation guarantees them).
void apply_color_op(const ColorOpArgs& op, const Pixels& image, PhotometricScratch& scratch,
                    Interpolation interpolation = Interpolation::kNearest);

}  // namespace stoke::detail
