#include "augment/masks.hpp"

#include <cmath>
#include <vector>

namespace stoke::detail {
namespace {

// Source index of each output index along one axis (out = s * in + t), or -1 outside.
void source_indices(double s, double t, int out, int in, std::vector<int>& idx) {
  idx.resize(static_cast<std::size_t>(out));
  for (int o = 0; o < out; ++o) {
    const double v = std::floor((o + 0.5 - t) / s);
    idx[static_cast<std::size_t>(o)] = v >= 0 && v < in ? static_cast<int>(v) : -1;
  }
}

template <class Out, class In>
void resample(const std::vector<int>& xs, const std::vector<int>& ys, const LabelMap& src,
              std::uint16_t ignore, Out* dst) {
  const auto* base = static_cast<const std::uint8_t*>(src.data);
  const Out fill = static_cast<Out>(ignore);
  for (const int y : ys) {
    if (y < 0) {
      for (std::size_t x = 0; x < xs.size(); ++x) *dst++ = fill;
      continue;
    }
    const In* row = reinterpret_cast<const In*>(base + static_cast<std::size_t>(y) * src.stride);
    for (const int x : xs) *dst++ = x < 0 ? fill : static_cast<Out>(row[x]);
  }
}

}  // namespace

void map_mask(const OutputMap& map, const LabelMap& src, int out_width, int out_height,
              int out_bytes, std::uint16_t ignore, void* dst) {
  thread_local std::vector<int> xs, ys;
  source_indices(map.sx, map.tx, out_width, src.width, xs);
  source_indices(map.sy, map.ty, out_height, src.height, ys);
  if (out_bytes == 1 && src.bytes == 1)
    resample<std::uint8_t, std::uint8_t>(xs, ys, src, ignore, static_cast<std::uint8_t*>(dst));
  else if (out_bytes == 1)
    resample<std::uint8_t, std::uint16_t>(xs, ys, src, ignore, static_cast<std::uint8_t*>(dst));
  else if (src.bytes == 1)
    resample<std::uint16_t, std::uint8_t>(xs, ys, src, ignore, static_cast<std::uint16_t*>(dst));
  else
    resample<std::uint16_t, std::uint16_t>(xs, ys, src, ignore, static_cast<std::uint16_t*>(dst));
}

}  // namespace stoke::detail
