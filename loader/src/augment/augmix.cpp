#include "augment/augmix.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

// torch rounds each product before its add (two kernels: the multiply, then add_), so neither
// is fused here (the exact-float rule, cmake/StokeExactFloat.cmake).

namespace stoke::detail {
namespace {

// mix[i] = float(p[i]) * weight
void scale_into(const std::uint8_t* p, std::size_t n, float weight, float* mix) {
  for (std::size_t i = 0; i < n; ++i) mix[i] = static_cast<float>(p[i]) * weight;
}

// mix[i] = mix[i] + float(p[i]) * weight
void add_into(const std::uint8_t* p, std::size_t n, float weight, float* mix) {
  for (std::size_t i = 0; i < n; ++i) mix[i] = mix[i] + static_cast<float>(p[i]) * weight;
}

// The float-to-uint8 conversion truncates; the weights sum to 1 within a few ulps, so the mix
// stays within [0, 256) and the clamp only keeps the conversion defined.
void truncate_into(const float* mix, std::size_t n, std::uint8_t* p) {
  for (std::size_t i = 0; i < n; ++i)
    p[i] = static_cast<std::uint8_t>(std::clamp(mix[i], 0.0f, 255.0f));
}

Interpolation interpolation_of(const AppliedOp& head) {
  return head.args[2] == 1.0f ? Interpolation::kBilinear : Interpolation::kNearest;
}

}  // namespace

std::size_t augmix(std::span<const AppliedOp> record, const Pixels& image,
                   PhotometricScratch& scratch) {
  const AppliedOp& head = record[0];
  const Interpolation interpolation = interpolation_of(head);
  const std::size_t line = image.row_bytes();
  const std::size_t n = line * static_cast<std::size_t>(image.height);
  scratch.mix_sum.resize(n);
  scratch.mix_chain.resize(n);
  float* mix = scratch.mix_sum.data();
  std::uint8_t* chain = scratch.mix_chain.data();
  for (int y = 0; y < image.height; ++y)
    scale_into(image.row(y), line, head.args[0], mix + static_cast<std::size_t>(y) * line);
  const Pixels chain_px{chain, image.height, image.width, image.channels, line};
  std::size_t i = 1;
  const auto chains = static_cast<std::size_t>(std::max(head.args[1], 0.0f));
  for (std::size_t k = 0; k < chains && i < record.size(); ++k) {
    const AppliedOp& c = record[i++];
    if (c.op != ImageOp::kAugMixChain) break;  // not a record the draws make
    tight_copy(image, scratch.mix_chain);
    const std::size_t ops =
        std::min(static_cast<std::size_t>(std::max(c.args[1], 0.0f)), record.size() - i);
    for (std::size_t j = 0; j < ops; ++j)
      apply_color_op(record[i + j], chain_px, scratch, interpolation);
    i += ops;
    add_into(chain, n, c.args[0], mix);
  }
  for (int y = 0; y < image.height; ++y)
    truncate_into(mix + static_cast<std::size_t>(y) * line, line, image.row(y));
  return i;
}

}  // namespace stoke::detail
