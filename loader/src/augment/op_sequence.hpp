#pragma once
// A sample's drawn ops, run in order on its image. Most ops act alone (apply_color_op);
// torchvision's AugMix (ImageOp kAugMix and its chains) is one mix, augmix.hpp's; timm's
// AugMix (ImageOp kTimmAugMixChain, kTimmAugMixBlend) is a group: each chain's ops run on a copy
// of the image the mix began with, and AugMixAugment's arithmetic combines them: without blended
// mode, `mixed += weight * chain` in float32 per chain, then the sum clipped to [0, 255],
// truncated to bytes, and Image.blend(input, mixed, m); in blended mode, Image.blend(image,
// chain, weight) after each chain.
//
// Thread-safety: a function of its arguments; the scratch belongs to one thread.

#include <span>

#include "augment/photometric.hpp"

namespace stoke::detail {

// REQUIRES: as apply_color_op's. A chain whose ops run past the end of `ops` takes those there.
void apply_ops(std::span<const ColorOpArgs> ops, const Pixels& image, PhotometricScratch& scratch);

}  // namespace stoke::detail
