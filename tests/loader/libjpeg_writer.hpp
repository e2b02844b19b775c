#pragma once
// A JPEG written by libjpeg's own compressor, for tests that need what OpenCV's encoder cannot
// choose (chroma sampling, restart intervals, CMYK, markers, progressive scans).

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <opencv2/core.hpp>
#include <vector>

namespace stoke::test {

// `m` (1, 3 or 4 channels: gray, RGB or CMYK rows) at libjpeg's defaults and quality 90;
// `configure` sets what those do not (sampling, quality, colour space, restart interval),
// `markers` writes markers after the start.
inline std::vector<std::uint8_t> libjpeg_compress(
    const cv::Mat& m, const std::function<void(jpeg_compress_struct&)>& configure = {},
    const std::function<void(jpeg_compress_struct&)>& markers = {}) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = static_cast<JDIMENSION>(m.cols);
  c.image_height = static_cast<JDIMENSION>(m.rows);
  c.input_components = m.channels();
  c.in_color_space = m.channels() == 1 ? JCS_GRAYSCALE : m.channels() == 4 ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  if (configure) configure(c);
  jpeg_start_compress(&c, TRUE);
  if (markers) markers(c);
  for (int y = 0; y < m.rows; ++y) {
    JSAMPROW row = const_cast<std::uint8_t*>(m.ptr(y));
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<std::uint8_t> bytes(out, out + size);
  jpeg_destroy_compress(&c);
  std::free(out);
  return bytes;
}

}  // namespace stoke::test
