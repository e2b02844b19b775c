#include "decode/decode.hpp"

#include <cstring>
#include <new>
#include <opencv2/core.hpp>

#ifndef STOKE_NO_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#endif

#include "data/file_reader.hpp"

namespace stoke::detail {
namespace {

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

std::int32_t le32(const std::uint8_t* p) {
  return static_cast<std::int32_t>(std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) |
                                   (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24));
}

// The formats handed to OpenCV, by their magic bytes. Anything else is undecodable here rather
// than passed on to whichever of OpenCV's many decoders claims it (Debian's build includes
// DICOM and GDAL readers that abort the process on malformed input, and some decoders spool
// their input to temporary files).
// The formats stoke decodes besides JPEG, by their first bytes: the one table of them (the
// decoder's and stoke-pack's).
enum class Format { kNone, kPng, kBmp, kTiff, kWebp, kPnm, kHdr, kSunRaster };

Format format_of(const std::uint8_t* d, std::size_t n) {
  const auto starts = [&](const char* magic, std::size_t len) {
    return n >= len && std::memcmp(d, magic, len) == 0;
  };
  if (starts("\x89PNG\r\n\x1a\n", 8)) return Format::kPng;
  if (starts("BM", 2)) return Format::kBmp;
  if (starts("II*\0", 4) || starts("MM\0*", 4)) return Format::kTiff;
  if (n >= 12 && starts("RIFF", 4) && std::memcmp(d + 8, "WEBP", 4) == 0) return Format::kWebp;
  if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') return Format::kPnm;
  if (starts("#?RADIANCE", 10) || starts("#?RGBE", 6)) return Format::kHdr;
  if (starts("\x59\xa6\x6a\x95", 4)) return Format::kSunRaster;
  return Format::kNone;
}

bool known_format(const std::uint8_t* d, std::size_t n) {
  return format_of(d, n) != Format::kNone;
}

}  // namespace

const char* shard_image_extension(const std::uint8_t* data, std::size_t size) {
  if (is_jpeg({data, size})) return "jpg";
  switch (format_of(data, size)) {
    case Format::kPng:
      return "png";
    case Format::kBmp:
      return "bmp";
    case Format::kTiff:
      return "tiff";
    case Format::kWebp:
      return "webp";
    case Format::kPnm:
      return "pnm";
    case Format::kNone:
    case Format::kHdr:
    case Format::kSunRaster:
      break;
  }
  return "";
}

bool peek_dimensions(const std::uint8_t* data, std::size_t size, std::int64_t& width,
                     std::int64_t& height) {
  static constexpr std::uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 24 && std::memcmp(data, kPng, 8) == 0 && std::memcmp(data + 12, "IHDR", 4) == 0) {
    width = be32(data + 16);
    height = be32(data + 20);
    return true;
  }
  if (size >= 26 && data[0] == 'B' && data[1] == 'M') {
    width = le32(data + 18);
    height = le32(data + 22);
    if (width < 0) width = -width;
    if (height < 0) height = -height;  // top-down bitmaps store a negative height
    return true;
  }
  return false;
}

// Division, not w * h: header fields up to 2^32 would overflow the product.
bool ImageDecoder::acceptable_size(std::int64_t width, std::int64_t height) const {
  return width > 0 && height > 0 && width <= max_pixels_ / height;
}

BadInput ImageDecoder::decode(const std::string& path, int channels, DecodedImage& out) {
  if (const BadInput r = local_files().read(path, {}, file_); r != BadInput::kNone) return r;
  return decode_buffer(file_.data(), file_.size(), channels, out);
}

BadInput ImageDecoder::decode_buffer(const std::uint8_t* data, std::size_t size, int channels,
                                     DecodedImage& out) {
  if (size == 0) return BadInput::kEmpty;
  try {
    if (is_jpeg({data, size})) return decode_jpeg(data, size, channels, out);
    return decode_other(data, size, channels, out);
  } catch (const std::bad_alloc&) {
    return BadInput::kTooLarge;
  } catch (const cv::Exception&) {
    return BadInput::kUndecodable;
  }
}

// The region decoder's whole-image decode: one libjpeg code path for both, so a verdict or a
// pixel can never differ between them.
BadInput ImageDecoder::decode_jpeg(const std::uint8_t* data, std::size_t size, int channels,
                                   DecodedImage& out) {
  if (const BadInput r = jpeg_.open(data, size, channels, max_pixels_); r != BadInput::kNone)
    return r;
  try {
    const ImageRef whole = jpeg_.whole();
    out.pixels = cv::Mat(whole.height, whole.width, CV_8UC(channels),
                         const_cast<std::uint8_t*>(whole.data), whole.stride);
    out.bgr = false;
  } catch (const BadImage& e) {
    return e.reason;
  }
  return BadInput::kNone;
}

BadInput ImageDecoder::decode_label_map(const std::uint8_t* data, std::size_t size,
                                       DecodedImage& out) {
  if (size == 0) return BadInput::kEmpty;
  try {
    if (const BadInput r = imdecode(data, size, Read::kUnchanged, out); r != BadInput::kNone)
      return r;
  } catch (const std::bad_alloc&) {
    return BadInput::kTooLarge;
  } catch (const cv::Exception&) {
    return BadInput::kUndecodable;
  }
  out.bgr = false;
  const int depth = out.pixels.depth();
  if (out.pixels.channels() != 1 || (depth != CV_8U && depth != CV_16U)) return BadInput::kBadMask;
  if (!acceptable_size(out.pixels.cols, out.pixels.rows)) return BadInput::kTooLarge;
  return BadInput::kNone;
}

BadInput ImageDecoder::decode_other(const std::uint8_t* data, std::size_t size, int channels,
                                    DecodedImage& out) {
  const BadInput r = imdecode(data, size, channels == 1 ? Read::kGray : Read::kColor, out);
  if (r != BadInput::kNone) return r;
  out.bgr = channels == 3;
  if (out.pixels.depth() != CV_8U) return BadInput::kUndecodable;
  if (!acceptable_size(out.pixels.cols, out.pixels.rows)) return BadInput::kTooLarge;
  return BadInput::kNone;
}

BadInput ImageDecoder::imdecode(const std::uint8_t* data, std::size_t size, Read read,
                                DecodedImage& out) {
  std::int64_t w = 0, h = 0;
  if (!known_format(data, size)) return BadInput::kUndecodable;
  if (peek_dimensions(data, size, w, h) && !acceptable_size(w, h)) return BadInput::kTooLarge;
#ifdef STOKE_NO_IMGCODECS
  (void)read;
  (void)out;
  return BadInput::kUnsupportedFormat;
#else
  const cv::Mat encoded(1, static_cast<int>(size), CV_8U, const_cast<std::uint8_t*>(data));
  const int mode = read == Read::kGray    ? cv::IMREAD_GRAYSCALE
                   : read == Read::kColor ? cv::IMREAD_COLOR
                                          : cv::IMREAD_UNCHANGED;
  out.pixels = cv::imdecode(encoded, mode | cv::IMREAD_IGNORE_ORIENTATION);
  return out.pixels.empty() ? BadInput::kUndecodable : BadInput::kNone;
#endif
}

}  // namespace stoke::detail
