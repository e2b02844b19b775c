#pragma once
// Reading and decoding one image file. Thread-safety: an ImageDecoder owns its buffers and is
// used by one thread at a time.
//
// JPEG goes through libjpeg-turbo directly so that *any* libjpeg warning (a truncated scan, a
// missing end-of-image marker, damaged entropy data — cases where libjpeg "succeeds" and returns
// gray) marks the file bad, and so that the header's dimensions are checked against the pixel
// limit before anything large is allocated. PNG and BMP dimensions are checked from their headers
// the same way; other formats go through OpenCV (whose own limit stoke-worker sets to the same
// value). EXIF orientation is ignored everywhere: pixels are used in stored order.

#include <cstddef>
#include <cstdint>
#include <opencv2/core/mat.hpp>
#include <span>
#include <string>
#include <vector>

#include "data/bad_input.hpp"
#include "decode/jpeg_region.hpp"

namespace stoke::detail {

inline constexpr std::int64_t kDefaultMaxPixels = 100'000'000;

// For JPEG input `pixels` views the decoder's own buffer: valid until that decoder's next call.
struct DecodedImage {
  cv::Mat pixels;    // 8-bit, 1 or 3 channels
  bool bgr = false;  // channel order of 3-channel pixels
};

class ImageDecoder {
 public:
  explicit ImageDecoder(std::int64_t max_pixels = kDefaultMaxPixels) : max_pixels_(max_pixels) {}

  // Reads (from the local file system) and decodes `path` to gray (channels == 1) or color
  // (channels == 3). Returns BadInput::kNone on success; never throws for bad files.
  BadInput decode(const std::string& path, int channels, DecodedImage& out);
  // The same for bytes already in memory.
  BadInput decode_buffer(const std::uint8_t* data, std::size_t size, int channels,
                         DecodedImage& out);
  // A label map (a segmentation mask): one channel, 8 or 16 bits, as stored (no conversion).
  // kBadMask when the file is an image of another kind.
  BadInput decode_label_map(const std::uint8_t* data, std::size_t size, DecodedImage& out);

 private:
  // Positive sides whose product is within max_pixels.
  bool acceptable_size(std::int64_t width, std::int64_t height) const;
  BadInput decode_jpeg(const std::uint8_t* data, std::size_t size, int channels, DecodedImage& out);
  BadInput decode_other(const std::uint8_t* data, std::size_t size, int channels,
                        DecodedImage& out);
  // OpenCV's decode of a known format whose header is within the pixel limit, into out.pixels
  // (gray, colour, or as stored); kUnsupportedFormat in a build without imgcodecs.
  enum class Read { kGray, kColor, kUnchanged };
  BadInput imdecode(const std::uint8_t* data, std::size_t size, Read read, DecodedImage& out);

  std::int64_t max_pixels_;
  std::vector<std::uint8_t> file_;
  JpegRegionSource jpeg_;  // JPEG pixels live here until the next decode
};

// Whether `data` starts like a JPEG (SOI marker followed by another marker).
inline bool is_jpeg(std::span<const std::uint8_t> data) {
  return data.size() >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

// The extension stoke's tar shards give an image of these bytes, by what they are: "jpg",
// "png", "bmp", "tiff", "webp" or "pnm" (the image members a shard is read with); "" for bytes
// of another kind: GIF (which stoke does not decode), Radiance HDR and Sun raster (which it
// decodes from a folder but no shard member carries), or none.
const char* shard_image_extension(const std::uint8_t* data, std::size_t size);

// Width and height from a PNG or BMP header; false when `data` is neither or too short.
bool peek_dimensions(const std::uint8_t* data, std::size_t size, std::int64_t& width,
                     std::int64_t& height);

}  // namespace stoke::detail
