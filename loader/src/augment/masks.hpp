#pragma once
// Label maps (segmentation masks) through a sample's geometric steps: the augmenter's maps
// (augment.hpp) applied to a mask image by nearest neighbour, so every output label is one of
// the source's, never a blend. Thread-safety: pure functions (each thread keeps its own scratch).
//
// The rule: output pixel (X, Y) takes the source label at (floor(x), floor(y)), where (x, y) is
// the source point the map sends to the output pixel's centre (X + 0.5, Y + 0.5): the centre
// rule of PIL's NEAREST and torch's "nearest-exact". Output pixels whose centre comes from
// outside the source (padding of a centre crop or a pad-crop) get `ignore`.
//
// A random_affine warp moves the mask as F.affine moves a tv_tensors.Mask: the mask is first
// mapped (by the rule above) into the image the warp acts on, then warped by nearest neighbour on
// the image's own sampling grid (geometric_ops.hpp, affine_labels), with `ignore` where the warp
// uncovers the image.

#include <cstdint>
#include <span>

#include "augment/augment.hpp"

namespace stoke::detail {

struct LabelMap {
  const void* data = nullptr;
  int width = 0, height = 0;
  int bytes = 1;           // per label: 1 (uint8) or 2 (uint16)
  std::size_t stride = 0;  // bytes per row
};

// The last source row map_mask reads for an output of out_height rows, or -1 when it reads none
// (the output is all padding).
int last_source_row(const OutputMap& map, int out_height, int source_height);
// The same through `warps` and then `last` (the first warp's map decides).
int last_source_row(std::span<const Warp> warps, const OutputMap& last, int out_height,
                    int source_height);

// Writes out_height x out_width labels of out_bytes (1 or 2) each to `dst`, row-major. A uint16
// source into uint8 labels keeps the low byte; the caller checks that the values fit.
// REQUIRES: the map's source is the mask's size; dst holds out_height * out_width * out_bytes.
void map_mask(const OutputMap& map, const LabelMap& src, int out_width, int out_height,
              int out_bytes, std::uint16_t ignore, void* dst);
// The same through `warps` and then `last` (map_mask above when there are none). REQUIRES: the
// first map's source is the mask's size.
void map_mask(std::span<const Warp> warps, const OutputMap& last, const LabelMap& src,
              int out_width, int out_height, int out_bytes, std::uint16_t ignore, void* dst);

}  // namespace stoke::detail
