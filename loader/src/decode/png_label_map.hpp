#pragma once
// PNG label maps (segmentation masks) read with libpng, as labels rather than colours: a gray
// PNG's values (1, 2, 4, 8 or 16 bits) or a palette PNG's indices (1 to 8 bits, as Pascal VOC's
// SegmentationClass masks store them: the palette only colours the labels for viewing). Rows
// are decoded only as far as the crop reads them unless the whole file is to be checked.
//
// Thread-safety: a reader is used by one thread at a time.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/bad_input.hpp"

namespace stoke::detail {

// Whether `data` starts with the PNG signature.
bool is_png(const std::uint8_t* data, std::size_t size);

class PngLabelMapReader {
 public:
  // Reads the header. kBadMask for a PNG that is not a label map (gray with alpha, RGB, RGBA),
  // kUndecodable for one that is not PNG at all, kTooLarge beyond max_pixels.
  BadInput open(const std::uint8_t* data, std::size_t size, std::int64_t max_pixels);
  int width() const { return width_; }
  int height() const { return height_; }
  int bytes() const { return bit_depth_ == 16 ? 2 : 1; }  // per label, once decoded

  // Decodes rows [0, last_row] (all of them and the rest of the file when `whole_file`), one
  // label per byte (two, native-endian, for 16-bit files). kCorrupt when libpng finds the data
  // damaged. REQUIRES: open() succeeded; 0 <= last_row < height().
  BadInput decode(int last_row, bool whole_file);
  const std::uint8_t* rows() const { return pixels_.data(); }
  std::size_t stride() const { return static_cast<std::size_t>(width_) * bytes(); }

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  int width_ = 0, height_ = 0, bit_depth_ = 0, color_type_ = 0, interlace_ = 0;
  std::vector<std::uint8_t> pixels_;
};

}  // namespace stoke::detail
