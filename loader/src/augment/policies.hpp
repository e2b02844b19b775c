#pragma once
// The augmentation policies of torchvision.transforms.v2 (TrivialAugmentWide, RandAugment,
// AutoAugment, AugMix): their op tables, magnitude bins and random signs, drawn per sample from
// the sample's generator in the order torchvision's classes draw, each op given as the primitive
// op that torchvision's _apply_image_or_video_transform calls (so that Batch::applied_ops()
// replays in torchvision.transforms.v2.functional as it stands). AugMix's weights come from
// Dirichlet draws (SampleRng::dirichlet), rounded to float32 and multiplied as torchvision's are;
// its record (ImageOp::kAugMix) is mixed by augmix.hpp.
//
// Thread-safety: functions of their arguments.

#include <span>
#include <vector>

#include "plan/sample_rng.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {

// The ops of torchvision's policy tables, in _AUGMENTATION_SPACE's key order.
enum class PolicyOp : int {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
  kInvert,
};

// One drawn policy op before it becomes a primitive: which, its bin (-1 for ops without
// magnitudes) and its sign.
struct PolicyDraw {
  PolicyOp op = PolicyOp::kIdentity;
  int bin = -1;
  bool negative = false;
};

// Each policy step's draws for one sample of height x width (its record's draw:
// augment/steps/policy_steps.cpp): its ops in order (none for an Identity or an AutoAugment
// sub-policy op whose coin says no), appended to `draws` when it is not null, and their
// primitive ops appended to `out` (for AugMix, within its record: a kAugMix, then each chain's
// kAugMixChain and ops). REQUIRES: s.kind is the policy of the function's name.
void draw_trivial_augment_wide(const Step& s, SampleRng& rng, int height, int width,
                               std::vector<AppliedOp>& out,
                               std::vector<PolicyDraw>* draws = nullptr);
void draw_rand_augment(const Step& s, SampleRng& rng, int height, int width,
                       std::vector<AppliedOp>& out, std::vector<PolicyDraw>* draws = nullptr);
void draw_auto_augment(const Step& s, SampleRng& rng, int height, int width,
                       std::vector<AppliedOp>& out, std::vector<PolicyDraw>* draws = nullptr);
void draw_augmix(const Step& s, SampleRng& rng, int height, int width, std::vector<AppliedOp>& out,
                 std::vector<PolicyDraw>* draws = nullptr);

// The magnitude torchvision's table gives `op` at `bin` of `bins` for a height x width image
// (before its sign), for step kind `kind`; 0 for the ops without magnitudes.
double policy_magnitude(StepKind kind, PolicyOp op, int bin, int bins, int height, int width);

// Appends the primitive op that torchvision applies for `draw` of step `s` (`bins` magnitude
// bins) on a height x width image; nothing for Identity.
void append_policy_op(const Step& s, const PolicyDraw& draw, int bins, int height, int width,
                      std::vector<AppliedOp>& out);

// AugMix's ops in torchvision's order (_AUGMENTATION_SPACE with all_ops, else
// _PARTIAL_AUGMENTATION_SPACE, its first 9), and the bins of its magnitudes (_PARAMETER_MAX).
std::span<const PolicyOp> augmix_ops(bool all_ops);
inline constexpr int kAugMixBins = 10;

// The ops that open an AugMix record and each chain in it (ImageOp::kAugMix, kAugMixChain):
// the image's weight m0 and step `s`'s width, interpolation and fill; a chain's weight and the
// number of its ops.
AppliedOp augmix_head(const Step& s, float m0);
AppliedOp augmix_chain(float weight, int ops);

}  // namespace stoke::detail
