#include "stoke/kernels/resize.hpp"

#include <tbb/blocked_range.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "parallel_for.hpp"
#include "resize_taps.hpp"

// Under the exact-float rule (cmake/StokeExactFloat.cmake): the weights and sums are the GPU
// kernel's operations, fused only where resize_taps.hpp writes fmaf.

namespace stoke::kernels {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("resize: " + what);
}

// One axis of an image: every output coordinate's taps, and their weights over their sum.
struct Axis {
  std::vector<detail::Taps> taps;
  std::vector<std::size_t> at;  // where coordinate i's weights start in `weights`
  std::vector<float> weights;

  void make(float start, float extent, int out, int size, int lo, int hi, bool mirror, bool area,
            bool padded) {
    taps.resize(static_cast<std::size_t>(out));
    at.resize(static_cast<std::size_t>(out));
    weights.clear();
    for (int o = 0; o < out; ++o) {
      const int i = mirror ? out - 1 - o : o;
      const detail::Taps t = detail::resize_taps(start, extent, out, size, lo, hi, i, area, padded);
      taps[static_cast<std::size_t>(o)] = t;
      at[static_cast<std::size_t>(o)] = weights.size();
      if (t.total > 0.f)  // (those of the taps that read pixels)
        for (int j = t.read_first; j < t.read_end; ++j)
          weights.push_back(detail::resize_weight(t, j) / t.total);
    }
  }
};

void resize_image(const ResizeParams& p, const ResizeImage& m, std::uint8_t* dst) {
  const bool area = detail::resize_by_area(m, p.height, p.width);
  const bool padded = detail::resize_padded(m);
  Axis xs, ys;
  xs.make(m.x, m.w, p.width, m.image_width, m.region_x, m.region_x + m.region_width,
          m.mirror_x != 0, area, padded);
  ys.make(m.y, m.h, p.height, m.image_height, m.region_y, m.region_y + m.region_height,
          m.mirror_y != 0, area, padded);
  const int ch = p.channels;
  std::uint8_t* out = dst + static_cast<std::size_t>(m.out_index) * p.height * p.width * ch;
  for (int oy = 0; oy < p.height; ++oy) {
    const detail::Taps& ty = ys.taps[static_cast<std::size_t>(oy)];
    const float* wy = ys.weights.data() + ys.at[static_cast<std::size_t>(oy)];
    for (int ox = 0; ox < p.width; ++ox) {
      const detail::Taps& tx = xs.taps[static_cast<std::size_t>(ox)];
      const float* wx = xs.weights.data() + xs.at[static_cast<std::size_t>(ox)];
      std::uint8_t* o = out + (static_cast<std::size_t>(oy) * p.width + ox) * ch;
      for (int c = 0; c < ch; ++c) {
        if (tx.total <= 0.f || ty.total <= 0.f) {
          o[c] = 0;
          continue;
        }
        float acc = 0.f;
        for (int y = ty.read_first; y < ty.read_end; ++y) {
          const std::uint8_t* row = m.src +
                                    static_cast<std::int64_t>(y - m.region_y) * m.src_stride +
                                    static_cast<std::int64_t>(tx.read_first - m.region_x) * ch + c;
          float sum = 0.f;
          for (int k = 0; k < tx.read_end - tx.read_first; ++k, row += ch)
            sum = fmaf(wx[k], static_cast<float>(*row), sum);
          acc = fmaf(wy[y - ty.read_first], sum, acc);
        }
        const float r = rintf(acc);
        o[c] = static_cast<std::uint8_t>(r < 0.f ? 0.f : (r > 255.f ? 255.f : r));
      }
    }
  }
}

}  // namespace

void validate(const ResizeParams& p) {
  if (p.images < 0 || p.height <= 0 || p.width <= 0 || p.samples < 0)
    fail("sizes must be positive (images and samples non-negative)");
  if (p.channels != 1 && p.channels != 3)
    fail("channels must be 1 or 3, got " + std::to_string(p.channels));
  if (p.images > 0 && p.jobs == nullptr) fail("no jobs");
  for (int n = 0; n < p.images; ++n) {
    const ResizeImage& m = p.jobs[n];
    const std::string at = "image " + std::to_string(n) + ": ";
    if (m.out_index < 0 || m.out_index >= p.samples)
      fail(at + "out_index " + std::to_string(m.out_index) + " outside 0.." +
           std::to_string(p.samples - 1));
    if (!(m.w > 0 && m.h > 0)) fail(at + "the window has no extent");
    if (m.image_width <= 0 || m.image_height <= 0 || m.region_x < 0 || m.region_y < 0 ||
        m.region_width <= 0 || m.region_height <= 0 ||
        m.region_width > m.image_width - m.region_x ||
        m.region_height > m.image_height - m.region_y)
      fail(at + "the decoded region is not inside the image");
    if (m.src == nullptr || m.src_stride < static_cast<std::int64_t>(m.region_width) * p.channels)
      fail(at + "no pixels, or rows shorter than the region");
  }
}

void resize_cpu(const ResizeParams& p, std::uint8_t* dst) {
  validate(p);
  stoke::parallel_for(tbb::blocked_range<int>(0, p.images), [&](const tbb::blocked_range<int>& r) {
    for (int n = r.begin(); n != r.end(); ++n) resize_image(p, p.jobs[n], dst);
  });
}

}  // namespace stoke::kernels
