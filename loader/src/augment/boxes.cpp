#include "augment/boxes.hpp"

#include <algorithm>

namespace stoke::detail {

std::size_t map_boxes(const OutputMap& map, int width, int height, const BoxRules& rules,
                      std::span<const SampleBox> in, std::span<Box> out, std::span<std::uint32_t> kept) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < in.size() && n < out.size(); ++i) {
    const SampleBox& b = in[i];
    // A mirror swaps the edges.
    const double xa = map.x(b.x1), xb = map.x(b.x2);
    const double ya = map.y(b.y1), yb = map.y(b.y2);
    const double x1 = std::min(xa, xb), x2 = std::max(xa, xb);
    const double y1 = std::min(ya, yb), y2 = std::max(ya, yb);
    const double cx1 = std::clamp(x1, 0.0, static_cast<double>(width));
    const double cx2 = std::clamp(x2, 0.0, static_cast<double>(width));
    const double cy1 = std::clamp(y1, 0.0, static_cast<double>(height));
    const double cy2 = std::clamp(y2, 0.0, static_cast<double>(height));
    const double w = cx2 - cx1, h = cy2 - cy1;
    if (w < rules.min_size || h < rules.min_size || w <= 0 || h <= 0) continue;
    if (w * h < rules.min_area) continue;
    const double mapped = (x2 - x1) * (y2 - y1);
    if (rules.min_visible > 0 && w * h < rules.min_visible * mapped) continue;
    out[n] = Box{static_cast<float>(cx1), static_cast<float>(cy1), static_cast<float>(cx2),
                 static_cast<float>(cy2)};
    kept[n] = static_cast<std::uint32_t>(i);
    ++n;
  }
  return n;
}

}  // namespace stoke::detail
