#pragma once
// The augmentation policies of torchvision.transforms.v2 (TrivialAugmentWide, RandAugment,
// AutoAugment): their op tables, magnitude bins and random signs, drawn per sample from the
// sample's generator in the order torchvision's classes draw, each op given as the primitive op
// that torchvision's _apply_image_or_video_transform calls (so that Batch::applied_ops() replays
// in torchvision.transforms.v2.functional as it stands).
//
// Thread-safety: functions of their arguments.

#include <vector>

#include "augment/augment_step.hpp"
#include "data/sample_rng.hpp"
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

// Draws policy step `s` for one sample of height x width: its ops in order (none for an
// Identity or an AutoAugment sub-policy op whose coin says no), appended to `draws` when it is
// not null, and their primitive ops appended to `out`. REQUIRES: is_policy(s.step_kind()).
void draw_policy(const AugmentStep& s, SampleRng& rng, int height, int width,
                 std::vector<AppliedOp>& out, std::vector<PolicyDraw>* draws = nullptr);

// The magnitude torchvision's table gives `op` at `bin` of `bins` for a height x width image
// (before its sign), for step kind `kind`; 0 for the ops without magnitudes.
double policy_magnitude(StepKind kind, PolicyOp op, int bin, int bins, int height, int width);

}  // namespace stoke::detail
