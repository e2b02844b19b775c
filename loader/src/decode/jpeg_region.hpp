#pragma once
// A JPEG as an ImageSource: the header is read up front (so the pipeline can plan its crop from
// the image size), then only the region the first resize needs is decoded, at the smallest DCT
// scale (1/8, 1/4, 1/2 or 1) that still gives that region the resolution the resize asks for.
// Rows above the region are skipped without inverse DCT and MCU columns outside it are cropped
// away. What happens below the region is Verify's choice (stoke/options.hpp): under kWholeFile
// the rest of the scan is still entropy-decoded through the end-of-image marker, so a file that
// is bad anywhere — any libjpeg warning, a truncated scan, a missing marker — is reported
// exactly as the whole-image decoder reports it, even when the crop never reaches the damage;
// under kRegion decoding stops after the region's last row, and only damage above that (in the
// header, the rows above the region, or the region) is reported. whole() always reads it all.
//
// Thread-safety: one thread at a time. `data` passed to open() must outlive the source.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "data/image_source.hpp"
#include "decode/jpeg_common.hpp"
#include "stoke/options.hpp"

namespace stoke::detail {

class JpegRegionSource final : public ImageSource {
 public:
  JpegRegionSource() = default;
  ~JpegRegionSource() override;
  JpegRegionSource(const JpegRegionSource&) = delete;
  JpegRegionSource& operator=(const JpegRegionSource&) = delete;

  // Reads the header. Returns kNone, or why the file is bad (kUndecodable, kTooLarge, ...):
  // sides whose product exceeds max_pixels are refused before any pixel is allocated.
  // `channels` (1 or 3) is the output's.
  BadInput open(const std::uint8_t* data, std::size_t size, int channels, std::int64_t max_pixels);

  // kWholeFile unless set; applies to every later region().
  void set_verify(Verify v) { verify_ = v; }

  int width() const override { return width_; }
  int height() const override { return height_; }
  bool partial() const override { return true; }
  SourceRegion region(int x, int y, int w, int h, int min_w, int min_h) override;
  ImageRef whole() override;

  // Nanoseconds spent decoding (header included) since the last call; resets the count.
  std::int64_t take_decode_ns() { return std::exchange(decode_ns_, 0); }

  // The DCT scale numerator (over 8) that region() would pick; exposed for tests.
  static int scale_for(int w, int h, int min_w, int min_h);

 private:
  // Decodes rows/columns covering [x, x + w) x [y, y + h) at scale num/8 into pixels_.
  BadInput decode(int x, int y, int w, int h, int num, Verify verify, SourceRegion& out);
  void close();

  jpeg_decompress_struct cinfo_{};
  JpegErrors errors_;
  bool created_ = false;
  int width_ = 0, height_ = 0, channels_ = 3;
  std::vector<std::uint8_t> pixels_;
  std::vector<std::uint8_t> cmyk_row_;
  std::vector<std::uint8_t> tail_row_;
  std::int64_t decode_ns_ = 0;
  Verify verify_ = Verify::kWholeFile;
};

}  // namespace stoke::detail
