#include "decode/png_label_map.hpp"

#include <png.h>

#include <csetjmp>
#include <cstring>

namespace stoke::detail {
namespace {

struct Input {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t at;
};

void read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* in = static_cast<Input*>(png_get_io_ptr(png));
  if (n > in->size - in->at) png_error(png, "truncated");
  std::memcpy(out, in->data + in->at, n);
  in->at += n;
}

[[noreturn]] void on_error(png_structp png, png_const_charp) { png_longjmp(png, 1); }
void on_warning(png_structp, png_const_charp) {}  // benign (an sRGB profile's checksum, ...)

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

// Decodes rows [0, last] into `out` (rows of `stride` bytes); every pass, for interlaced files.
// Plain C inside setjmp: nothing here has a destructor that a longjmp would skip.
bool decode_rows(Input* in, int last, bool whole_file, std::uint8_t* out, std::size_t stride,
                 int height, int bit_depth, bool interlaced) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, on_error, on_warning);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, in, read_bytes);
#ifdef PNG_IGNORE_ADLER32
  // The zlib stream's Adler-32 covers every row, so it can be checked only when all of them are
  // read (Verify::kWholeFile); the chunks' CRCs are checked either way.
  if (!whole_file) png_set_option(png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
#endif
  png_read_info(png, info);
  if (bit_depth < 8) png_set_packing(png);  // one label per byte, values kept (not scaled)
  if (bit_depth == 16) png_set_swap(png);   // PNG is big-endian
  const int passes = interlaced ? png_set_interlace_handling(png) : 1;
  png_read_update_info(png, info);
  const int rows = interlaced || whole_file ? height : last + 1;
  for (int pass = 0; pass < passes; ++pass) {
    for (int y = 0; y < rows; ++y) png_read_row(png, out + static_cast<std::size_t>(y) * stride, nullptr);
  }
  if (whole_file) png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace

bool is_png(const std::uint8_t* data, std::size_t size) {
  static constexpr std::uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return size >= 8 && std::memcmp(data, kSignature, 8) == 0;
}

BadInput PngLabelMapReader::open(const std::uint8_t* data, std::size_t size,
                                 std::int64_t max_pixels) {
  // The signature, then the IHDR chunk: length 13, "IHDR", width, height, depth, colour type,
  // compression, filter, interlace.
  if (!is_png(data, size) || size < 33 || std::memcmp(data + 12, "IHDR", 4) != 0)
    return BadInput::kUndecodable;
  data_ = data;
  size_ = size;
  width_ = static_cast<int>(be32(data + 16));
  height_ = static_cast<int>(be32(data + 20));
  bit_depth_ = data[24];
  color_type_ = data[25];
  interlace_ = data[28];
  if (width_ <= 0 || height_ <= 0) return BadInput::kUndecodable;
  if (static_cast<std::int64_t>(width_) * height_ > max_pixels) return BadInput::kTooLarge;
  const bool gray = color_type_ == PNG_COLOR_TYPE_GRAY;
  const bool palette = color_type_ == PNG_COLOR_TYPE_PALETTE;
  if (!gray && !palette) return BadInput::kBadMask;
  if (palette ? bit_depth_ > 8 : bit_depth_ > 16) return BadInput::kUndecodable;
  return BadInput::kNone;
}

BadInput PngLabelMapReader::decode(int last_row, bool whole_file) {
  try {
    pixels_.resize(stride() * static_cast<std::size_t>(height_));
  } catch (const std::bad_alloc&) {
    return BadInput::kTooLarge;
  }
  Input in{data_, size_, 0};
  return decode_rows(&in, last_row, whole_file, pixels_.data(), stride(), height_, bit_depth_,
                     interlace_ != 0)
             ? BadInput::kNone
             : BadInput::kCorrupt;
}

}  // namespace stoke::detail
