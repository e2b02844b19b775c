#pragma once
// A baseline JPEG's restart intervals, and the smaller JPEG of those that cover a rectangle.
//
// Restart markers (RST0..RST7 every `restart` MCUs, the DRI marker's count) reset the DC
// predictors and byte-align the entropy-coded segment, so a scan can be entered at any interval:
// the intervals covering a rectangle of MCUs, spliced after the file's tables under a frame
// header of the rectangle's size with their markers renumbered, are a JPEG whose DCT
// coefficients are the original's there, bit for bit. libjpeg-turbo decodes it as it decodes the
// whole file; only what lies outside it is never Huffman-decoded. decode/jpeg_region.cpp decodes a
// crop that way when a file allows it (the rectangle widened by an MCU on each side, so chroma
// upsampling has the neighbours it has in a whole decode).
//
// What allows it: one sequential Huffman scan (SOF0 or SOF1) holding every component (or a
// single-component frame), a DRI interval, every interval's marker present and in order, and
// intervals that tile the MCU rows: `restart` divides the MCUs of a row (then columns are skipped
// as well as rows) or is a whole number of rows (rows only). Anything else is not a layout; the
// caller then decodes sequentially, as it does without markers.
//
// Thread-safety: plain functions over caller-owned bytes.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stoke::detail {

struct JpegIntervals {
  int width = 0, height = 0;          // the frame's
  int mcu_width = 0, mcu_height = 0;  // pixels
  int mcus_x = 0, mcus_y = 0;
  int restart = 0;           // MCUs an interval
  std::size_t frame_at = 0;  // the SOF marker
  std::size_t scan_at = 0;   // the SOS marker
  std::size_t data_at = 0;   // the entropy-coded segment's first byte
  // Interval k's bytes: [starts[k], ends[k]) (without the RST marker that follows it).
  std::vector<std::uint32_t> starts, ends;

  // Whether a rectangle can skip MCU columns (intervals within rows), not only rows.
  bool columns() const { return restart > 0 && mcus_x % restart == 0; }
};

// The layout of the JPEG in `data`, found by one walk of its markers and its entropy-coded
// segment: true and `out` set, or false when the file has none a crop can be spliced from (see
// above; a damaged or misplaced marker, a second scan, a file cut short: all false).
bool find_jpeg_intervals(const std::uint8_t* data, std::size_t size, JpegIntervals& out);

// The JPEG of the intervals covering MCUs [mx0, mx1) x [my0, my1) (REQUIRES: 0 <= mx0 < mx1 <=
// mcus_x, 0 <= my0 < my1 <= mcus_y), widened to whole intervals, into `out`; `x`, `y` its first
// pixel in the file's frame. Its width and height reach the frame's edge where it does (the last
// MCU column or row partly outside the image, as in the file). Markers before the scan other
// than tables (APP1..APP13, APP15, COM: Exif, XMP, ICC) are left out. Returns the entropy-coded
// bytes it kept (the intervals', without their markers).
std::size_t splice_jpeg_intervals(const std::uint8_t* data, const JpegIntervals& layout, int mx0,
                                  int my0, int mx1, int my1, std::vector<std::uint8_t>& out, int& x,
                                  int& y);

}  // namespace stoke::detail
