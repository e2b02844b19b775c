#pragma once
// decode=gpu's reference decode, for host devices and the tests' fake GPU: each JpegJob::kDevice
// sample's JPEG decoded by libjpeg-turbo at full scale over its window (widened by the resize's
// support, clamped to the image), then kernels::resize_cpu into its place in the chunk. The
// same slot format, jobs and resize the GPUs take, so planning, fallback, determinism and resume
// run without one; only the decoder differs (libjpeg-turbo's IDCT and chroma upsampling against
// nvJPEG's).
//
// Thread-safety: one thread at a time (it owns a decoder and buffers).

#include <cstdint>
#include <vector>

#include "decode/jpeg_region.hpp"
#include "device/device_backend.hpp"
#include "stoke/kernels/resize.hpp"

namespace stoke::detail {

class HostJpegDecode {
 public:
  // Decodes the chunk's device jobs into `out` (chunk.samples outputs); counts into the chunk's
  // counters. A file the decoder refuses gets 0 pixels and is counted as failed.
  void run(const JpegChunk& chunk, std::uint8_t* out);
  // Sample k's JPEG decoded and resized into `dst` (its output: height x width x channels);
  // false when the file is bad. (nvJPEG's decoder falls back to this for a file it refuses.)
  bool decode_sample(const JpegChunk& chunk, int k, std::uint8_t* dst);

 private:
  JpegRegionSource source_;
};

// The source window a sample's output covers, from its geometry record (ArenaView::geometry:
// the map sx, tx, sy, ty and the source's size): the output's edges, back through the map. It
// may reach past the image (which reads as 0 there); mirror_x, mirror_y: the output is mirrored.
struct JpegWindow {
  int width = 0, height = 0;  // the source image's
  float x = 0, y = 0, w = 0, h = 0;
  std::uint32_t mirror_x = 0, mirror_y = 0;
};
JpegWindow window_of(const float* geometry, int out_width, int out_height);

// Where a job's decoded region lies: its first pixel, bytes per row, and its rectangle in the
// image (ResizeImage's region).
struct DecodedRegion {
  const std::uint8_t* src = nullptr;
  std::int64_t stride = 0;
  int x = 0, y = 0, width = 0, height = 0;
};
// The resize of `window` from `region` into output sample `out_index`.
kernels::ResizeImage resize_image(const JpegWindow& window, const DecodedRegion& region,
                                  int out_index);

// The source rectangle a window's resize reads (resize.hpp's taps, and a pixel more), clamped
// to the image: [x0, x1) x [y0, y1); empty when the window lies outside it.
struct ResizeRegion {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
};
ResizeRegion resize_region(const JpegWindow& window, int out_width, int out_height);

}  // namespace stoke::detail
