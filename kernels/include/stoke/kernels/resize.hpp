#pragma once
// The resize of decode=gpu: a window of each decoded image into a batch's uint8 NHWC outputs,
// with the filters the workers' resize uses (augment/resample.hpp), so that a sample decoded on
// a device is within a level of the same sample decoded by a worker: where the window shrinks
// at least 2x both ways, each output pixel averages the source area it covers (OpenCV's
// INTER_AREA, fractional pixels weighted by coverage: antialiased); otherwise a bilinear blend
// of the two source pixels around its centre on each axis (INTER_LINEAR). The window is
// fractional, may lie partly outside the image (reads 0 there), and may be mirrored. Host-only
// header; the GPU launch is in resize_cuda.hpp.
//
// Thread safety: every function here is pure with respect to its arguments; concurrent calls
// are safe as long as their destination buffers do not overlap.
//
// Numerics (identical on CPU and GPU, so results are bit-identical): output coordinate i of a
// window [x, x + w) resampled to n pixels has scale s = w / n and centre c = fma(s, i + 0.5, x);
// area taps are the pixels [floor(fma(s, i, x)), ceil(fma(s, i + 1, x))) weighted by their
// coverage, linear taps j in [trunc(c - 0.5), trunc(c + 1.5)) weighted max(0, 1 - |j - c + 0.5|);
// both within the image and the decoded region, over their sum. A pixel is
// sum_y wy * (sum_x wx * p) in float32 with every product-add an fma, rounded to nearest even
// and clamped to 0..255. A centre outside the image reads 0 (the window's padding).

#include <cstddef>
#include <cstdint>

namespace stoke::kernels {

// One image to resize into output sample `out_index`.
struct ResizeImage {
  // The decoded rectangle: its first pixel, bytes per row, and where it lies in the image
  // (rows and columns [region_y, + region_height) x [region_x, + region_width)); device memory
  // for resize_cuda (never read on the host). Its channels are the output's.
  const std::uint8_t* src = nullptr;
  std::int64_t src_stride = 0;
  std::int32_t region_x = 0, region_y = 0, region_width = 0, region_height = 0;
  std::int32_t image_width = 0, image_height = 0;
  // The window the output covers, in image pixels (pixel i spans [i, i + 1)), and mirroring.
  float x = 0, y = 0, w = 0, h = 0;
  std::uint32_t mirror_x = 0, mirror_y = 0;
  std::int32_t out_index = 0;
  std::int32_t reserved = 0;
};

struct ResizeParams {
  int images = 0;
  int height = 0, width = 0, channels = 0;  // each output sample; channels 1 or 3
  int samples = 0;                          // output samples dst holds (out_index < samples)
  const ResizeImage* jobs = nullptr;        // host memory (both)
};

// Throws std::invalid_argument naming the problem: sizes, channels, an out_index outside the
// outputs, a window of no extent, a region outside its image, no pixels.
void validate(const ResizeParams& p);

// CPU reference, oneTBB-parallel over images. Validates p first.
// REQUIRES: dst holds p.samples outputs of height * width * channels bytes.
void resize_cpu(const ResizeParams& p, std::uint8_t* dst);

}  // namespace stoke::kernels
