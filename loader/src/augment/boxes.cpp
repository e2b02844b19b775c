#include "augment/boxes.hpp"

#include <algorithm>
#include <array>

#include "augment/geometric_ops.hpp"

namespace stoke::detail {
namespace {

// A mirror swaps the edges.
MovedBox through(const OutputMap& map, const MovedBox& b) {
  const double xa = map.x(b.x1), xb = map.x(b.x2);
  const double ya = map.y(b.y1), yb = map.y(b.y2);
  return {std::min(xa, xb), std::min(ya, yb), std::max(xa, xb), std::max(ya, yb)};
}

MovedBox clipped(const MovedBox& b, int width, int height) {
  const auto w = static_cast<double>(width), h = static_cast<double>(height);
  return {std::clamp(b.x1, 0.0, w), std::clamp(b.y1, 0.0, h), std::clamp(b.x2, 0.0, w),
          std::clamp(b.y2, 0.0, h)};
}

// The axis-aligned box around b's four corners moved by m (affine_forward_matrix).
MovedBox around_corners(const std::array<double, 6>& m, const MovedBox& b) {
  const double xs[4] = {b.x1, b.x2, b.x2, b.x1}, ys[4] = {b.y1, b.y1, b.y2, b.y2};
  MovedBox out{1e300, 1e300, -1e300, -1e300};
  for (int i = 0; i < 4; ++i) {
    const double x = m[0] * xs[i] + m[1] * ys[i] + m[2];
    const double y = m[3] * xs[i] + m[4] * ys[i] + m[5];
    out.x1 = std::min(out.x1, x);
    out.y1 = std::min(out.y1, y);
    out.x2 = std::max(out.x2, x);
    out.y2 = std::max(out.y2, y);
  }
  return out;
}

}  // namespace

MovedBox move_box(std::span<const Warp> warps, const OutputMap& last, const SampleBox& b,
                  MovedBox* free) {
  MovedBox kept{b.x1, b.y1, b.x2, b.y2};
  MovedBox loose = kept;
  for (const Warp& w : warps) {
    const std::array<double, 6> m = affine_forward_matrix(w.op, w.width, w.height);
    kept = clipped(around_corners(m, clipped(through(w.before, kept), w.width, w.height)), w.width,
                   w.height);
    loose = around_corners(m, through(w.before, loose));
  }
  if (free != nullptr) *free = through(last, loose);
  return through(last, kept);
}

std::size_t map_boxes(std::span<const Warp> warps, const OutputMap& last, int width, int height,
                      const BoxRules& rules, std::span<const SampleBox> in, std::span<Box> out,
                      std::span<std::uint32_t> kept) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < in.size() && n < out.size(); ++i) {
    MovedBox moved;
    const MovedBox c = clipped(move_box(warps, last, in[i], &moved), width, height);
    const double w = c.x2 - c.x1, h = c.y2 - c.y1;
    if (w < rules.min_size || h < rules.min_size || w <= 0 || h <= 0) continue;
    if (w * h < rules.min_area) continue;
    if (rules.min_visible > 0 && w * h < rules.min_visible * moved.area()) continue;
    out[n] = Box{static_cast<float>(c.x1), static_cast<float>(c.y1), static_cast<float>(c.x2),
                 static_cast<float>(c.y2)};
    kept[n] = static_cast<std::uint32_t>(i);
    ++n;
  }
  return n;
}

}  // namespace stoke::detail
