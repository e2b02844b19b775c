#include "device/host_jpeg_decode.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace stoke::detail {

namespace {

// One axis of resize_region(): the window [start, start + extent) resampled to `out` pixels
// reads taps within max(scale, 1) of its centres.
void span(float start, float extent, int out, int size, int& lo, int& hi) {
  const double support = std::max(1.0, static_cast<double>(extent) / out);
  lo = std::clamp(static_cast<int>(std::floor(start - support)) - 1, 0, size);
  hi = std::clamp(static_cast<int>(std::ceil(start + extent + support)) + 1, 0, size);
}

}  // namespace

JpegWindow window_of(const float* g, int out_width, int out_height) {
  const double sx = g[0], tx = g[1], sy = g[2], ty = g[3];
  const double x0 = -tx / sx, x1 = (out_width - tx) / sx;
  const double y0 = -ty / sy, y1 = (out_height - ty) / sy;
  JpegWindow w;
  w.width = static_cast<int>(g[4]);
  w.height = static_cast<int>(g[5]);
  w.x = static_cast<float>(std::min(x0, x1));
  w.y = static_cast<float>(std::min(y0, y1));
  w.w = static_cast<float>(std::abs(x1 - x0));
  w.h = static_cast<float>(std::abs(y1 - y0));
  w.mirror_x = sx < 0 ? 1u : 0u;
  w.mirror_y = sy < 0 ? 1u : 0u;
  return w;
}

ResizeRegion resize_region(const JpegWindow& window, int out_width, int out_height) {
  ResizeRegion r;
  span(window.x, window.w, out_width, window.width, r.x0, r.x1);
  span(window.y, window.h, out_height, window.height, r.y0, r.y1);
  return r;
}

kernels::ResizeImage resize_image(const JpegWindow& job, const DecodedRegion& region,
                                  int out_index) {
  kernels::ResizeImage m;
  m.src = region.src;
  m.src_stride = region.stride;
  m.region_x = region.x;
  m.region_y = region.y;
  m.region_width = region.width;
  m.region_height = region.height;
  m.image_width = job.width;
  m.image_height = job.height;
  m.x = job.x;
  m.y = job.y;
  m.w = job.w;
  m.h = job.h;
  m.mirror_x = job.mirror_x;
  m.mirror_y = job.mirror_y;
  m.out_index = out_index;
  return m;
}

bool HostJpegDecode::decode_sample(const JpegChunk& chunk, int k, std::uint8_t* dst) {
  const JpegJob& job = chunk.jobs[k];
  const JpegWindow window = window_of(chunk.geometry + 6 * k, chunk.width, chunk.height);
  const std::size_t sample_bytes =
      static_cast<std::size_t>(chunk.height) * chunk.width * chunk.channels;
  const ResizeRegion region = resize_region(window, chunk.width, chunk.height);
  if (region.empty()) {  // the window lies outside the image: all padding
    std::memset(dst, 0, sample_bytes);
    return true;
  }
  const std::uint8_t* bytes = chunk.compressed + static_cast<std::size_t>(k) * chunk.stride;
  source_.set_verify(chunk.verify);
  if (source_.open(bytes, job.size, chunk.channels, std::int64_t{window.width} * window.height) !=
          BadInput::kNone ||
      source_.width() != window.width || source_.height() != window.height)
    return false;
  const int w = region.x1 - region.x0, h = region.y1 - region.y0;
  SourceRegion r;
  try {
    r = source_.region(region.x0, region.y0, w, h, w, h);
  } catch (const BadImage&) {
    return false;
  }
  if (r.scale != 1 || r.image.channels != chunk.channels) return false;
  const kernels::ResizeImage m = resize_image(
      window,
      {r.image.data, static_cast<std::int64_t>(r.image.stride), static_cast<int>(r.origin_x),
       static_cast<int>(r.origin_y), r.image.width, r.image.height},
      0);
  kernels::ResizeParams p;
  p.images = 1;
  p.samples = 1;
  p.height = chunk.height;
  p.width = chunk.width;
  p.channels = chunk.channels;
  p.jobs = &m;
  kernels::resize_cpu(p, dst);
  return true;
}

void HostJpegDecode::run(const JpegChunk& chunk, std::uint8_t* out) {
  const auto started = std::chrono::steady_clock::now();
  std::int64_t failed = 0;
  for (int k = 0; k < chunk.samples; ++k) {
    if (chunk.jobs[k].by != JpegJob::kDevice) continue;
    const std::size_t sample_bytes =
        static_cast<std::size_t>(chunk.height) * chunk.width * chunk.channels;
    std::uint8_t* dst = out + static_cast<std::size_t>(k) * sample_bytes;
    if (!decode_sample(chunk, k, dst)) {
      std::memset(dst, 0, sample_bytes);
      ++failed;
    }
  }
  if (chunk.failed != nullptr) chunk.failed->fetch_add(failed, std::memory_order_relaxed);
  if (chunk.decode_ns != nullptr)
    chunk.decode_ns->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - started)
                                   .count(),
                               std::memory_order_relaxed);
}

}  // namespace stoke::detail
