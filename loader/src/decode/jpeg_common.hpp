#pragma once
// libjpeg plumbing for stoke's JPEG decoder (jpeg_region.cpp, which decode.cpp's whole-image
// decode also goes through): error handling that records every warning, and CMYK conversion.
// Thread-safety: plain functions; a JpegErrors belongs to one decompressor.

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <csetjmp>
#include <cstdint>

namespace stoke::detail {

// libjpeg reports fatal errors through error_exit (which must not return) and warnings through
// emit_message(-1). Both are recorded; nothing is printed.
struct JpegErrors {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  bool warned = false;
};

// libjpeg refuses sides above 65500 inside jpeg_read_header, before stoke sees the size.
inline bool too_big(const JpegErrors& e) {
  return e.mgr.msg_code == JERR_IMAGE_TOO_BIG;
}

[[noreturn]] inline void jpeg_fail(j_common_ptr cinfo) {
  std::longjmp(reinterpret_cast<JpegErrors*>(cinfo->err)->jump, 1);
}

inline void jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0) reinterpret_cast<JpegErrors*>(cinfo->err)->warned = true;
}

inline void jpeg_quiet(j_common_ptr) {}

// Adobe CMYK JPEGs store inverted ink values: R = C * K / 255 (and so on) on the stored bytes.
inline void cmyk_to_rgb(const std::uint8_t* in, std::uint8_t* out, int pixels) {
  for (int i = 0; i < pixels; ++i, in += 4, out += 3) {
    const int k = in[3];
    out[0] = static_cast<std::uint8_t>((in[0] * k + 127) / 255);
    out[1] = static_cast<std::uint8_t>((in[1] * k + 127) / 255);
    out[2] = static_cast<std::uint8_t>((in[2] * k + 127) / 255);
  }
}

// Installs the handlers above on `errors` and returns the libjpeg error manager to use.
inline jpeg_error_mgr* install_jpeg_errors(JpegErrors& errors) {
  jpeg_error_mgr* mgr = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = jpeg_fail;
  errors.mgr.emit_message = jpeg_message;
  errors.mgr.output_message = jpeg_quiet;
  return mgr;
}

// Gray level of an RGB pixel (ITU-R BT.601 weights, rounded), as OpenCV converts.
inline std::uint8_t gray_of(const std::uint8_t* rgb) {
  return static_cast<std::uint8_t>((299 * rgb[0] + 587 * rgb[1] + 114 * rgb[2] + 500) / 1000);
}

// One CMYK scanline of `width` pixels converted to RGB (channels 3) or gray (channels 1).
inline void cmyk_row_to(const std::uint8_t* cmyk, std::uint8_t* out, int width, int channels) {
  if (channels == 3) {
    cmyk_to_rgb(cmyk, out, width);
    return;
  }
  std::uint8_t rgb[3];
  for (int x = 0; x < width; ++x) {
    cmyk_to_rgb(cmyk + 4 * x, rgb, 1);
    out[x] = gray_of(rgb);
  }
}

}  // namespace stoke::detail
