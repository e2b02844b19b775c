#pragma once
// Resampling a fractional source rectangle, for the region-decode path: the region a JPEG
// decoder returns is aligned to its MCUs and scaled by its DCT, so the window the pipeline asked
// for starts at a fractional pixel. Two filters, matching what the general path asks OpenCV for:
//   kLinear  OpenCV's INTER_LINEAR (output pixel centres mapped into the source, 2 taps, edges
//            replicated);
//   kArea    OpenCV's INTER_AREA for shrinking (each output pixel averages the source area it
//            covers, fractional pixels weighted by their coverage).
//
// Thread-safety: pure apart from `scratch`, which belongs to the caller.

#include <cstdint>
#include <vector>

#include "data/image_source.hpp"

namespace stoke::detail {

enum class ResampleFilter { kLinear, kArea };

// Up to 6x shrinking per axis at any fractional offset; past that the caller falls back to
// OpenCV on a window rounded to whole pixels. Even: the horizontal pass blends taps in pairs.
inline constexpr int kMaxResampleTaps = 8;
static_assert(kMaxResampleTaps % 2 == 0);

// The source indices and 7-bit weights (summing to 128) of one output coordinate.
struct ResampleTap {
  int first = 0;  // first source index
  int count = 0;  // 1..kMaxResampleTaps
  std::int16_t weight[kMaxResampleTaps] = {};
};

// A column tap resolved for the horizontal pass: element offsets of its taps into the blended
// row and their weights in pairs ((0, 1), (2, 3), ...), packed as two 16-bit halves each.
struct ColumnTap {
  int off[kMaxResampleTaps];
  std::int32_t weights[kMaxResampleTaps / 2];
};

// Scratch space for resample(); keep one per thread and reuse it.
struct ResampleScratch {
  std::vector<ResampleTap> xs, ys;
  std::vector<ColumnTap> columns;
  std::vector<std::int16_t> row;
};

// Whether resample() can take [extent]-wide source spans down to `out` pixels with `filter`
// (an area filter needs at most kMaxResampleTaps taps per output pixel).
bool resample_supports(ResampleFilter filter, double extent_x, int out_x, double extent_y,
                       int out_y);

// Resizes [fx, fx + fw) x [fy, fy + fh) of `src` (pixel i spans [i, i + 1)) to dw x dh pixels of
// src.channels channels, written densely (rows of dw * channels bytes) at `dst`, mirrored left
// to right when `mirror`. Vertical pass first, across whole rows (it vectorizes), then
// horizontal (SSE2 multiply-adds for 3 channels); 7-bit weights, one rounding at the end.
// REQUIRES: fw, fh > 0; dw, dh > 0; src non-empty; dst does not overlap src;
// resample_supports(filter, fw, dw, fh, dh).
void resample(const ImageRef& src, double fx, double fy, double fw, double fh, std::uint8_t* dst,
              int dw, int dh, bool mirror, ResampleFilter filter, ResampleScratch& scratch);

}  // namespace stoke::detail
