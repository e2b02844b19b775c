#pragma once
// AugMix's mix (torchvision.transforms.v2.AugMix._forward on a uint8 image): given one sample's
// record (ImageOp::kAugMix, then each chain's kAugMixChain and ops, as policies.hpp draws them),
// each chain's ops run in order on a copy of the image as AugMix received it, and the image
// becomes, in float32, m0 * image + w_1 * chain_1 + ... + w_n * chain_n: each byte converted to
// float32, each product rounded, the sum taken in chain order with each add rounded (torch's
// `mix.add_(w * aug)`), then truncated to a byte (`.to(torch.uint8)`).
// tests/data/augmix_golden.bin holds torchvision's outputs for recorded draws
// (tests/loader/make_augmix_golden.py).
//
// Thread-safety: functions of their arguments; the scratch belongs to one thread.

#include <cstddef>
#include <span>

#include "augment/photometric.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {

// Runs the AugMix record that begins at record[0] (a kAugMix) on `image` in place, with the
// chains in scratch.mix_chain and the mix in scratch.mix_sum (kept for the next call, so that a
// worker allocates them once). Returns the number of ops the record spans (its chains' counts,
// bounded by the ops given). REQUIRES: record[0].op == ImageOp::kAugMix; image.channels is 1 or 3.
std::size_t augmix(std::span<const AppliedOp> record, const Pixels& image,
                   PhotometricScratch& scratch);

}  // namespace stoke::detail
