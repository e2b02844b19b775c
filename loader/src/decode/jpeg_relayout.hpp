#pragma once
// Lossless JPEG re-layout (stoke-pack's, docs/USAGE.md "stoke-pack"): a JPEG's DCT coefficients,
// read through libjpeg's coefficient API and written again as one baseline sequential scan with
// optimized Huffman tables and restart markers that tile its MCU rows, so that a crop decodes
// only the intervals that cover it (decode/jpeg_intervals.hpp). No coefficient changes, so no
// pixel does: a progressive file becomes baseline (libjpeg decodes it 2-3x faster), and most
// files shrink by what the optimized tables save, more than the markers cost.
//
// Thread-safety: reentrant (each call its own libjpeg objects).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stoke::detail {

// MCUs an interval for a row of `mcus_x` MCUs: the largest divisor of it at most an eighth of
// it (so a crop skips columns as well as rows), unless that makes more than 64 intervals a row
// (a row of a prime number of MCUs would get a marker each MCU); then the row itself. Measured
// (docs/BENCHMARKS.md): against a quarter row and 16 at most, crops decode 1.33x instead of
// 1.56x their share of a file's entropy-coded bytes (camera photos: 1.27x, not 1.42x), for
// 2.4% more bytes.
int restart_mcus(int mcus_x);

struct Relayout {
  std::vector<std::uint8_t> bytes;  // the new file, when `why` is empty
  std::string why;                  // why the file is kept as it is: "" when re-laid out
  bool was_progressive = false;
};

// `data` re-laid out. `why` is set (and `bytes` empty) for a file libjpeg cannot read whole
// without a warning (damaged, truncated), or one that is not 8-bit JPEG: such a file is kept as
// it is, and reported as it would have been.
Relayout relayout_jpeg(const std::uint8_t* data, std::size_t size);

}  // namespace stoke::detail
