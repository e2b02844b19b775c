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
// Under kRegion, a file with restart markers that tile its MCU rows (data/jpeg_intervals.hpp:
// stoke-pack's re-laid-out JPEGs, `jpegtran -restart`, many cameras') is not entered at its top:
// the intervals covering the region and an MCU around it are spliced into a smaller JPEG and
// that is decoded, whole, at the same scale. The region's pixels are the whole decode's as the
// sequential path's are, and its window (origin, size) the same; what lies outside the intervals
// is never Huffman-decoded, so damage there is not seen. A file whose markers do not allow it
// (none, misplaced, a second scan, progressive) takes the sequential path.
//
// Thread-safety: one thread at a time. `data` passed to open() must outlive the source.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "data/image_source.hpp"
#include "decode/jpeg_common.hpp"
#include "decode/jpeg_intervals.hpp"
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

  // What the header says of the file opened last, for decode=gpu's choice of decoder: whether
  // it is progressive, and whether NVIDIA's decoders take it at all (8-bit Huffman-coded
  // YCbCr or grayscale; not CMYK/YCCK, 12-bit or arithmetic-coded). REQUIRES: open() gave kNone.
  bool progressive() const { return cinfo_.progressive_mode != 0; }
  bool device_decodable() const;

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

  // Whether region() may decode restart intervals (true unless set; tests compare both paths),
  // and how many regions it decoded so since open() (for tests: 0 or 1).
  void set_intervals(bool on) { intervals_on_ = on; }
  int spliced() const { return spliced_; }
  // For benchmarks: the last region's share of the image's area, and, when it was spliced, the
  // entropy-coded bytes kept and the file's (else 0 and 0).
  struct SpliceShare {
    double area = 0;
    std::uint64_t kept = 0, total = 0;
  };
  const SpliceShare& last_share() const { return share_; }

 private:
  // Decodes rows/columns covering [x, x + w) x [y, y + h) at scale num/8 into pixels_.
  BadInput decode(int x, int y, int w, int h, int num, Verify verify, SourceRegion& out);
  // decode()'s window [sx0, sx0 + cols) x [sy0, sy0 + rows) (scaled pixels) from the spliced
  // intervals around it, into pixels_ (its verdict in `result`); false, with nothing decoded,
  // when the window needs every interval.
  bool decode_spliced(int sx0, int sy0, int cols, int rows, int num, BadInput& result);
  // Skips `skip` rows of the decompression under way, then reads `rows` rows of `cols` pixels
  // into pixels_ (CMYK converted to the output's channels).
  void read_window(int skip, int rows, int cols);
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
  // The file's bytes, and its restart intervals (found the first time a region wants them).
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  enum class Layout { kUnknown, kNone, kFound } layout_ = Layout::kUnknown;
  JpegIntervals intervals_;
  bool intervals_on_ = true;
  int spliced_ = 0;
  SpliceShare share_;
  std::vector<std::uint8_t> splice_;  // the spliced JPEG
};

}  // namespace stoke::detail
