#include "decode/jpeg_intervals.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace stoke::detail {

namespace {

// A marker segment of the header: its marker's first byte, its code, and where its payload is.
struct Segment {
  std::size_t marker = 0;  // the 0xFF
  std::uint8_t code = 0;
  std::size_t payload = 0;  // after the length
  std::size_t length = 0;   // of the payload
};

// The segment at `at` (fill bytes 0xFF before the code allowed): false when there is none there.
bool segment_at(const std::uint8_t* d, std::size_t n, std::size_t at, Segment& s) {
  if (at >= n || d[at] != 0xFF) return false;
  while (at + 1 < n && d[at + 1] == 0xFF) ++at;
  if (at + 4 > n) return false;
  s.marker = at;
  s.code = d[at + 1];
  // (Standalone markers, SOI, EOI and RSTn, have no length: none belongs in a header.)
  if (s.code == 0x00 || s.code == 0x01 || s.code == 0xD8 || s.code == 0xD9 ||
      (s.code >= 0xD0 && s.code <= 0xD7))
    return false;
  const std::size_t length = std::size_t{d[at + 2]} << 8 | d[at + 3];
  if (length < 2 || length > n - (at + 2)) return false;
  s.payload = at + 4;
  s.length = length - 2;
  return true;
}

// Markers a spliced JPEG does without: APP1..APP13 and APP15 (Exif, XMP, ICC profiles, ...) and
// comments. APP0 (JFIF) and APP14 (Adobe: the colour transform) say how the components are read.
bool left_out(std::uint8_t code) {
  return (code >= 0xE1 && code <= 0xED) || code == 0xEF || code == 0xFE;
}

bool is_sof(std::uint8_t code) {
  return code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC;
}

std::uint16_t be16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] << 8 | p[1]);
}

}  // namespace

bool find_jpeg_intervals(const std::uint8_t* d, std::size_t n, JpegIntervals& out) {
  // (Reset field by field: the vectors keep their capacity for the next file.)
  std::vector<std::uint32_t> starts = std::move(out.starts), ends = std::move(out.ends);
  starts.clear();
  ends.clear();
  out = JpegIntervals{};
  out.starts = std::move(starts);
  out.ends = std::move(ends);
  if (n < 4 || n > std::numeric_limits<std::uint32_t>::max() || d[0] != 0xFF || d[1] != 0xD8)
    return false;
  int components = 0, max_h = 1, max_v = 1;
  bool frame = false;
  std::size_t at = 2;
  for (;;) {
    Segment s;
    if (!segment_at(d, n, at, s)) return false;
    const std::uint8_t* p = d + s.payload;
    if (is_sof(s.code)) {
      // Sequential Huffman (baseline or extended), 8 bits a sample, once.
      if ((s.code != 0xC0 && s.code != 0xC1) || frame || s.length < 6 || p[0] != 8) return false;
      out.height = be16(p + 1);
      out.width = be16(p + 3);
      components = p[5];
      if (out.width == 0 || out.height == 0 || components < 1 || components > 4 ||
          s.length != 6 + 3 * static_cast<std::size_t>(components))
        return false;
      for (int c = 0; c < components; ++c) {
        const int h = p[7 + 3 * c] >> 4, v = p[7 + 3 * c] & 15;
        if (h < 1 || h > 4 || v < 1 || v > 4) return false;
        max_h = std::max(max_h, h);
        max_v = std::max(max_v, v);
      }
      frame = true;
      out.frame_at = s.marker;
    } else if (s.code == 0xDD) {
      if (s.length != 2) return false;
      out.restart = be16(p);
    } else if (s.code == 0xDA) {
      // One scan of every component (interleaved, or a single component's), the whole spectrum.
      if (!frame || s.length < 1 || p[0] != components ||
          s.length != 4 + 2 * static_cast<std::size_t>(components))
        return false;
      const std::uint8_t* spectral = p + 1 + 2 * components;
      if (spectral[0] != 0 || spectral[1] != 63 || spectral[2] != 0) return false;
      out.scan_at = s.marker;
      out.data_at = s.payload + s.length;
      break;
    } else if (s.code == 0xDC) {
      return false;  // DNL: the height comes after the scan
    }
    at = s.payload + s.length;
  }
  if (out.restart == 0) return false;
  out.mcu_width = components == 1 ? 8 : 8 * max_h;
  out.mcu_height = components == 1 ? 8 : 8 * max_v;
  out.mcus_x = (out.width + out.mcu_width - 1) / out.mcu_width;
  out.mcus_y = (out.height + out.mcu_height - 1) / out.mcu_height;
  if (out.mcus_x % out.restart != 0 && out.restart % out.mcus_x != 0) return false;
  const std::uint64_t mcus = std::uint64_t{static_cast<std::uint32_t>(out.mcus_x)} *
                             static_cast<std::uint32_t>(out.mcus_y);
  const std::uint64_t intervals = (mcus + out.restart - 1) / out.restart;
  // (Every interval holds a byte at least: a planted DRI of 1 over a huge frame claims more.)
  if (intervals > n - out.data_at) return false;
  out.starts.reserve(intervals);
  out.ends.reserve(intervals);
  out.starts.push_back(static_cast<std::uint32_t>(out.data_at));
  for (std::size_t i = out.data_at; i + 1 < n; ++i) {
    // (memchr: most of the segment holds no 0xFF.)
    const void* ff = std::memchr(d + i, 0xFF, n - 1 - i);
    if (ff == nullptr) break;
    i = static_cast<std::size_t>(static_cast<const std::uint8_t*>(ff) - d);
    const std::uint8_t next = d[i + 1];
    if (next == 0x00 || next == 0xFF) continue;  // a stuffed 0xFF, or a fill byte
    if (next == 0xD9) {
      out.ends.push_back(static_cast<std::uint32_t>(i));
      return out.ends.size() == intervals;
    }
    // RSTn, numbered from 0 modulo 8, never more than the frame's intervals; any other marker
    // (a second scan, tables, DNL) ends the layout.
    if (next < 0xD0 || next > 0xD7 || next - 0xD0 != static_cast<int>(out.ends.size() % 8) ||
        out.starts.size() >= intervals)
      return false;
    out.ends.push_back(static_cast<std::uint32_t>(i));
    out.starts.push_back(static_cast<std::uint32_t>(i + 2));
    ++i;
  }
  return false;  // no end-of-image marker: cut short
}

std::size_t splice_jpeg_intervals(const std::uint8_t* d, const JpegIntervals& l, int mx0, int my0,
                                  int mx1, int my1, std::vector<std::uint8_t>& out, int& x,
                                  int& y) {
  // The intervals: whole ones of each row of MCUs (columns skipped too), or whole runs of rows.
  std::size_t per_row = 0, first = 0, last = 0;  // intervals a row; rows' first, last + 1
  int x0 = 0, x1 = l.mcus_x, y0 = my0, y1 = my1;
  if (l.columns()) {
    per_row = static_cast<std::size_t>(l.mcus_x / l.restart);
    x0 = mx0 / l.restart * l.restart;
    x1 = std::min((mx1 + l.restart - 1) / l.restart * l.restart, l.mcus_x);
  } else {
    const int rows = l.restart / l.mcus_x;
    y0 = my0 / rows * rows;
    y1 = std::min((my1 + rows - 1) / rows * rows, l.mcus_y);
    first = static_cast<std::size_t>(y0 / rows);
    last = static_cast<std::size_t>((y1 + rows - 1) / rows);
  }
  x = x0 * l.mcu_width;
  y = y0 * l.mcu_height;
  const int w = x1 == l.mcus_x ? l.width - x : (x1 - x0) * l.mcu_width;
  const int h = y1 == l.mcus_y ? l.height - y : (y1 - y0) * l.mcu_height;

  out.clear();
  out.push_back(0xFF);
  out.push_back(0xD8);
  // The header's segments through the scan's, the frame's size patched.
  for (std::size_t at = 2; at < l.data_at;) {
    Segment s;
    if (!segment_at(d, l.data_at, at, s)) break;  // (not reached: find_jpeg_intervals read them)
    at = s.payload + s.length;
    if (left_out(s.code)) continue;
    const std::size_t from = out.size();
    out.insert(out.end(), d + s.marker, d + at);
    if (s.marker == l.frame_at) {
      std::uint8_t* sof = out.data() + from + (s.payload - s.marker);
      sof[1] = static_cast<std::uint8_t>(h >> 8);
      sof[2] = static_cast<std::uint8_t>(h & 0xFF);
      sof[3] = static_cast<std::uint8_t>(w >> 8);
      sof[4] = static_cast<std::uint8_t>(w & 0xFF);
    }
  }
  std::size_t written = 0;  // intervals, for the markers' numbers
  std::size_t kept = 0;
  const auto add = [&](std::size_t k) {
    if (written > 0) {
      out.push_back(0xFF);
      out.push_back(static_cast<std::uint8_t>(0xD0 + (written - 1) % 8));
    }
    out.insert(out.end(), d + l.starts[k], d + l.ends[k]);
    kept += l.ends[k] - l.starts[k];
    ++written;
  };
  if (l.columns()) {
    const auto k0 = static_cast<std::size_t>(x0 / l.restart);
    const auto k1 = static_cast<std::size_t>(x1 / l.restart);
    for (int row = y0; row < y1; ++row)
      for (std::size_t k = k0; k < k1; ++k) add(static_cast<std::size_t>(row) * per_row + k);
  } else {
    for (std::size_t k = first; k < last; ++k) add(k);
  }
  out.push_back(0xFF);
  out.push_back(0xD9);
  return kept;
}

}  // namespace stoke::detail
