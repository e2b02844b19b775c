#pragma once
// A source image for the augmenter whose pixels are produced on demand, so a decoder can skip
// what the pipeline never reads: a JPEG decodes only the rows and MCU columns of the region the
// first resize needs, at the smallest DCT scale that still gives it enough resolution.
//
// Thread-safety: a source is used by one thread at a time.

#include <cstdint>

#include "data/bad_input.hpp"

namespace stoke::detail {

struct ImageRef {
  const std::uint8_t* data = nullptr;
  int height = 0;
  int width = 0;
  int channels = 0;
  std::size_t stride = 0;  // bytes per row
  bool bgr = false;        // channel order of 3-channel data
};

// Decoded pixels of part of a source. Pixel column i of `image` covers source columns
// [origin_x + i / scale, origin_x + (i + 1) / scale); rows likewise.
struct SourceRegion {
  ImageRef image;
  double scale = 1;
  double origin_x = 0;
  double origin_y = 0;
};

// Thrown by a source whose pixels turn out to be bad (a corrupt scan found while decoding).
struct BadImage {
  BadInput reason;
};

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  virtual int width() const = 0;
  virtual int height() const = 0;
  // Whether region() may return less than the whole image at full scale. Sources that cannot
  // (already-decoded pixels) keep the general resize path, whose bytes tests pin down.
  virtual bool partial() const { return false; }
  // Pixels covering [x, x + w) x [y, y + h), at a scale where that region spans at least
  // min_w x min_h pixels when the source allows it. REQUIRES: the region lies inside the image;
  // called at most once per sample. Throws BadImage.
  virtual SourceRegion region(int x, int y, int w, int h, int min_w, int min_h) = 0;
  // The whole image at full scale. Throws BadImage.
  virtual ImageRef whole() = 0;
};

// Pixels already in memory.
class PlainSource final : public ImageSource {
 public:
  explicit PlainSource(const ImageRef& image) : image_(image) {}
  int width() const override { return image_.width; }
  int height() const override { return image_.height; }
  SourceRegion region(int, int, int, int, int, int) override { return {image_, 1, 0, 0}; }
  ImageRef whole() override { return image_; }

 private:
  ImageRef image_;
};

}  // namespace stoke::detail
