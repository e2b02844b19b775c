#include "augment/masks.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "augment/geometric_ops.hpp"

namespace stoke::detail {
namespace {

// Source index of each output index along one axis (out = s * in + t), or -1 outside.
void source_indices(double s, double t, int out, int in, std::vector<int>& idx) {
  idx.resize(static_cast<std::size_t>(out));
  for (int o = 0; o < out; ++o) {
    // A centre that lands on a source pixel's edge (a tie) belongs to the pixel right of it, as
    // exact arithmetic says; rounding in s and t must not push it to the left one.
    const double x = (o + 0.5 - t) / s;
    const double nearest = std::round(x);
    const double v = std::abs(x - nearest) < 1e-9 ? nearest : std::floor(x);
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

int last_source_row(const OutputMap& map, int out_height, int source_height) {
  thread_local std::vector<int> ys;
  source_indices(map.sy, map.ty, out_height, source_height, ys);
  int last = -1;
  for (const int y : ys) last = std::max(last, y);
  return last;
}

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

int last_source_row(std::span<const Warp> warps, const OutputMap& last, int out_height,
                    int source_height) {
  if (warps.empty()) return last_source_row(last, out_height, source_height);
  return last_source_row(warps.front().before, warps.front().height, source_height);
}

void map_mask(std::span<const Warp> warps, const OutputMap& last, const LabelMap& src,
              int out_width, int out_height, int out_bytes, std::uint16_t ignore, void* dst) {
  if (warps.empty()) return map_mask(last, src, out_width, out_height, out_bytes, ignore, dst);
  // Between the warps, labels as wide as the source's or the output's, whichever holds more (an
  // ignore label of 16 bits must survive an 8-bit source).
  const int bytes = std::max(src.bytes, out_bytes);
  thread_local std::vector<std::uint8_t> stages[2], copy;
  LabelMap current = src;
  for (std::size_t i = 0; i < warps.size(); ++i) {
    const Warp& w = warps[i];
    std::vector<std::uint8_t>& buf = stages[i % 2];
    const std::size_t stride = static_cast<std::size_t>(w.width) * static_cast<std::size_t>(bytes);
    buf.resize(stride * static_cast<std::size_t>(w.height));
    map_mask(w.before, current, w.width, w.height, bytes, ignore, buf.data());
    affine_labels(LabelImage{buf.data(), w.width, w.height, bytes, stride}, w.op, ignore, copy);
    current = LabelMap{buf.data(), w.width, w.height, bytes, stride};
  }
  map_mask(last, current, out_width, out_height, out_bytes, ignore, dst);
}

}  // namespace stoke::detail
