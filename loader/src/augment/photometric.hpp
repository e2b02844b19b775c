#pragma once
// The photometric operations of today's training recipes on uint8 images, computed as
// torchvision.transforms.v2.functional computes them on uint8 tensors (torchvision 0.29): the
// same float32 arithmetic in the same order, the same truncations and roundings, the same
// special cases (a 1-channel image ignores saturation and hue; sharpness leaves the border and
// images of 2 rows or columns alone; equalize keeps an image whose non-maximum pixels are fewer
// than 255 per channel). Each op works in place on an interleaved image of 1 or 3 channels in
// RGB order; the few that need a second image use the caller's scratch.
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
};

// One operation and its numbers (stoke::ImageOp and stoke::AppliedOp, the public record of
// what a sample got: Batch::applied_ops()).
using ColorOp = ImageOp;
using ColorOpArgs = AppliedOp;

// What the ops need beyond the image: a float32 copy, a second image, histograms. Reused
// across calls so that a worker allocates once.
struct PhotometricScratch {
  std::vector<float> f0, f1;
  std::vector<std::uint8_t> u0;
};

// Applies `op` to `image` in place. REQUIRES: image.channels is 1 or 3; the arguments are in
// the ranges above (the pipeline's validation guarantees them).
void apply_color_op(const ColorOpArgs& op, const Pixels& image, PhotometricScratch& scratch);

}  // namespace stoke::detail
