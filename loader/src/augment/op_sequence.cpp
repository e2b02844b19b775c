#include "augment/op_sequence.hpp"

#include <algorithm>
#include <cstring>

#include "augment/augmix.hpp"
#include "augment/pil_ops.hpp"

// numpy's float32 `mixed += w * img` rounds the product, then the sum: never fused (the
// exact-float rule, cmake/StokeExactFloat.cmake).

namespace stoke::detail {
namespace {

bool is_chain(const ColorOpArgs& op) {
  return op.op == ColorOp::kTimmAugMixChain;
}

// Runs the mix that starts at ops[first] (a chain of index 0); returns the index after it.
std::size_t mix(std::span<const ColorOpArgs> ops, std::size_t first, const Pixels& image,
                PhotometricScratch& scratch) {
  const std::uint8_t* input = tight_copy(image, scratch.mix_input);
  const std::size_t bytes = image.row_bytes() * static_cast<std::size_t>(image.height);
  const bool blended = ops[first].args[3] != 0.f;
  if (!blended) scratch.mix_sum.assign(bytes, 0.f);
  std::size_t i = first;
  while (i < ops.size() && is_chain(ops[i]) && (i == first || ops[i].args[2] != 0.f)) {
    const float weight = ops[i].args[0];
    const std::size_t count =
        std::min(static_cast<std::size_t>(std::max(ops[i].args[1], 0.f)), ops.size() - i - 1);
    scratch.mix_chain.assign(input, input + bytes);
    const Pixels chain{scratch.mix_chain.data(), image.height, image.width, image.channels,
                       image.row_bytes()};
    for (std::size_t j = i + 1; j <= i + count; ++j) apply_color_op(ops[j], chain, scratch);
    const std::uint8_t* c = scratch.mix_chain.data();
    if (blended) {
      pil_blend(image, c, weight);
    } else {
      float* sum = scratch.mix_sum.data();
      for (std::size_t k = 0; k < bytes; ++k) sum[k] += weight * static_cast<float>(c[k]);
    }
    i += 1 + count;
  }
  if (blended || i == ops.size() || ops[i].op != ColorOp::kTimmAugMixBlend) return i;
  // np.clip(mixed, 0, 255).astype(np.uint8), then Image.blend(input, mixed, m); the image still
  // holds the input.
  std::vector<std::uint8_t>& mixed = scratch.mix_chain;
  for (std::size_t k = 0; k < bytes; ++k)
    mixed[k] = static_cast<std::uint8_t>(std::clamp(scratch.mix_sum[k], 0.f, 255.f));
  pil_blend(image, mixed.data(), ops[i].args[0]);
  return i + 1;
}

}  // namespace

void apply_ops(std::span<const ColorOpArgs> ops, const Pixels& image, PhotometricScratch& scratch) {
  if (image.height <= 0 || image.width <= 0) return;
  for (std::size_t i = 0; i < ops.size();) {
    if (is_chain(ops[i])) {
      i = mix(ops, i, image, scratch);
    } else if (ops[i].op == ColorOp::kAugMix) {
      i += augmix(ops.subspan(i), image, scratch);
    } else {
      apply_color_op(ops[i], image, scratch);
      ++i;
    }
  }
}

}  // namespace stoke::detail
