#pragma once
// timm's RandAugment and AugMix config strings ("rand-m9-mstd0.5-inc1", "augmix-m5-w3"), read
// as timm's rand_augment_transform and augment_and_mix_transform read them: sections separated
// by '-', the first naming the policy, each other a key (the letters before its first digit)
// and a number (the rest), int() or float() as timm takes it. stoke is stricter where timm is
// silent or crashes: a section without a number, an unknown key, a repeated key, a number that
// timm's int() or float() would refuse, values that make no sense (no chains, p above 1) and
// values past bounds that keep a sample's work small (m, mmax <= 100; n, w, d <= 16; a <= 1000)
// are ConfigErrors naming the section; timm's other transform sets (the 't' key) are not
// supported and say so.
//
// Thread-safety: a function of its argument.

#include <string>
#include <string_view>

#include "stoke/pipeline.hpp"

namespace stoke::detail {

struct TimmConfig {
  StepKind kind = StepKind::kTimmRandAugment;  // or kTimmAugMix
  TimmAugment settings;  // the string's numbers over timm's defaults for the kind
};

// Throws ConfigError naming the string and the section at fault.
TimmConfig parse_timm_config(std::string_view config);

// A string timm reads back to `settings` (every key): "rand-m9-n2-p0.5-mstd0.5-mmax0-inc1",
// "augmix-m5-w3-d0-a1-b0" (d0: drawn per chain; mstd left out when infinite, AugMix's default,
// and written as mstd101 for rand, which timm takes as infinite).
std::string timm_config_text(StepKind kind, const TimmAugment& settings);

}  // namespace stoke::detail
