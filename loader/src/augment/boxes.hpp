#pragma once
// Bounding boxes through a sample's geometric steps: the augmenter's OutputMap (augment.hpp)
// applied to xyxy boxes in source pixels, then clipped to the output and filtered, so a box
// moves, scales and mirrors with the pixels it surrounds. Thread-safety: pure functions.
//
// The rules, chosen to match torchvision.transforms.v2 (its BoundingBoxes through the same
// crop, resize and flip, then ClampBoundingBoxes and SanitizeBoundingBoxes):
//   - a box is mapped exactly (float, no rounding of its edges), then clipped to
//     [0, width] x [0, height];
//   - it is dropped when, clipped, a side is shorter than min_size pixels (SanitizeBoundingBoxes'
//     min_size, default 1), its area is below min_area, or less than min_visible of its mapped
//     area remains inside the output (0 by default: off). A box wholly outside has no side left.

#include <cstddef>
#include <cstdint>
#include <span>

#include "augment/augment.hpp"
#include "data/sample_box.hpp"

namespace stoke::detail {

struct Box {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // x1 <= x2, y1 <= y2, in pixels
};

struct BoxRules {
  float min_size = 1;     // pixels, both sides after clipping
  float min_area = 0;     // square pixels after clipping
  float min_visible = 0;  // fraction of the mapped box's area inside the output
};

// Maps `in` (source pixels) into a width x height output through `map` and keeps those the
// rules allow, in order, until `out` is full: out[j] is in[kept[j]]'s box. Returns how many were written, at most out.size().
// REQUIRES: kept.size() >= out.size().
std::size_t map_boxes(const OutputMap& map, int width, int height, const BoxRules& rules,
                      std::span<const SampleBox> in, std::span<Box> out, std::span<std::uint32_t> kept);

}  // namespace stoke::detail
