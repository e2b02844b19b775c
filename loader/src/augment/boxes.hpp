#pragma once
// Bounding boxes through a sample's geometric steps: the augmenter's maps (augment.hpp) applied
// to xyxy boxes in source pixels, then clipped to the output and filtered, so a box moves,
// scales and mirrors with the pixels it surrounds, and follows random_affine's warps.
// Thread-safety: pure functions.
//
// The rules, chosen to match torchvision.transforms.v2 (its BoundingBoxes through the same
// crop, resize, flip and affine, then ClampBoundingBoxes and SanitizeBoundingBoxes):
//   - a box is mapped exactly (float, no rounding of its edges), then clipped to
//     [0, width] x [0, height];
//   - a warp (F.affine on BoundingBoxes) takes the box clipped to the image it warps (as
//     torchvision's crops have left it), moves its four corners and keeps the axis-aligned box
//     around them, clipped to that image again. A box a crop cut away is a line on the image's
//     edge there, and one that a turn lays across the image comes back as a box around it, as in
//     torchvision; min_size drops the slivers that stay;
//   - it is dropped when, clipped, a side is shorter than min_size pixels (SanitizeBoundingBoxes'
//     min_size, default 1), its area is below min_area, or less than min_visible of its moved
//     area remains inside the output (0 by default: off; the moved box is the box through every
//     map and warp with no clipping at all). A box wholly outside has no side left.

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
  float min_visible = 0;  // fraction of the moved box's area inside the output
};

// A box in double, x1 <= x2 and y1 <= y2.
struct MovedBox {
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  double area() const { return (x2 - x1) * (y2 - y1); }
};

// Source box `b` through `warps` as the rules above take it, then through `last`, not yet
// clipped to last's output; `free` (when not null) receives the box moved with no clipping.
MovedBox move_box(std::span<const Warp> warps, const OutputMap& last, const SampleBox& b,
                  MovedBox* free = nullptr);

// Maps `in` (source pixels) into a width x height output through `warps` and then `last` and
// keeps those the rules allow, in order, until `out` is full: out[j] is in[kept[j]]'s box.
// Returns how many were written, at most out.size(). REQUIRES: kept.size() >= out.size().
std::size_t map_boxes(std::span<const Warp> warps, const OutputMap& last, int width, int height,
                      const BoxRules& rules, std::span<const SampleBox> in, std::span<Box> out,
                      std::span<std::uint32_t> kept);

// The same without warps: `map` takes the source to the output.
inline std::size_t map_boxes(const OutputMap& map, int width, int height, const BoxRules& rules,
                             std::span<const SampleBox> in, std::span<Box> out,
                             std::span<std::uint32_t> kept) {
  return map_boxes({}, map, width, height, rules, in, out, kept);
}

}  // namespace stoke::detail
