#pragma once
// One sample's MixUp/CutMix, as the loader writes it beside a batch and delivers it
// (stoke::Batch::mixing()) and as the mixing kernels (stoke/kernels/mix.hpp) read it: a fixed
// layout. Thread-safety: plain value types.

#include <cstdint>

namespace stoke {

enum class MixOp : std::uint32_t {
  kNone = 0,    // the sample is left as it is
  kMixUp = 1,   // weighted sum with the partner
  kCutMix = 2,  // the partner's pixels inside the box
};

struct MixSample {
  std::int32_t partner = 0;  // the other sample, an index within its device's chunk
  MixOp op = MixOp::kNone;
  float self_weight = 1;  // kMixUp: the pixels' weights
  float partner_weight = 0;
  // The soft labels' weights: the sample's own smoothed one-hot label times label_self, plus
  // its partner's times label_partner (MixUp: the pixels' weights; CutMix: from its lambda).
  float label_self = 1;
  float label_partner = 0;
  std::int32_t top = 0, left = 0, bottom = 0, right = 0;  // kCutMix: output pixels
  double lambda = 1;  // the drawn lambda (CutMix: corrected to the box's area), for the user
};
static_assert(sizeof(MixSample) == 48);

}  // namespace stoke
