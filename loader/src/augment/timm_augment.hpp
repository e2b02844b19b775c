#pragma once
// timm's RandAugment and AugMix (timm.data.auto_augment: RandAugment, AugMixAugment,
// AugmentOp): their op tables (_RAND_TRANSFORMS, _RAND_INCREASING_TRANSFORMS,
// _AUGMIX_TRANSFORMS), drawn per sample from the sample's generator in the order timm's classes
// draw: RandAugment's n ops with replacement, then per op its coin (p), its magnitude (m, or a
// normal around it of deviation mstd, or uniform in [0, m] when mstd is infinite, clipped to
// [0, mmax or 10]), its level function's sign (_randomly_negate) and, for the warps, the filter
// when the interpolation is random. AugMix draws float32 Dirichlet weights and a float32 Beta m
// (np.float32 of float64 draws), then per chain its depth (1 to 3 unless d is set) and its ops
// with replacement, each always applied. Each drawn op is recorded as the Pillow call timm makes
// (ImageOp kPil*, pil_ops.hpp) with the level function's number rounded to float32, which is
// what the op then computes with (so Batch::applied_ops() replays in timm's op functions).
//
// Thread-safety: functions of their arguments.

#include <span>
#include <vector>

#include "plan/sample_rng.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {

// timm's op names (NAME_TO_OP's keys) that its RandAugment and AugMix tables hold.
enum class TimmOp : int {
  kAutoContrast,
  kEqualize,
  kInvert,
  kRotate,
  kPosterize,
  kPosterizeIncreasing,
  kSolarize,
  kSolarizeIncreasing,
  kSolarizeAdd,
  kColor,
  kColorIncreasing,
  kContrast,
  kContrastIncreasing,
  kBrightness,
  kBrightnessIncreasing,
  kSharpness,
  kSharpnessIncreasing,
  kShearX,
  kShearY,
  kTranslateXRel,
  kTranslateYRel,
};
inline constexpr int kTimmOpCount = 21;

// One drawn op as timm's AugmentOp sees it: which, its magnitude after noise and clipping, the
// sign its level function drew, the filter a warp drew (0: none drawn).
struct TimmDraw {
  TimmOp op = TimmOp::kAutoContrast;
  double magnitude = 0;
  bool negative = false;
  int filter = 0;
};

// Draws timm step `s` for one sample and appends its ops to `out` (and what was drawn to
// `draws`, when not null: the ops that applied, in order). The draws do not depend on the
// image's size: the Rel translations are fractions of it. REQUIRES:
// is_timm_augment(s.kind).
void draw_timm(const Step& s, SampleRng& rng, std::vector<AppliedOp>& out,
               std::vector<TimmDraw>* draws = nullptr);

// AugMixAugment._calc_blended_weights in numpy's float32, in place: each weight times m, then
// from the last chain back, each over what the later chains left.
void blended_weights(std::span<float> weights, float m);

// The op table of step `s` (timm's order).
std::vector<TimmOp> timm_ops(const Step& s);

// Samplers of the distributions timm draws from, on the sample's generator: a standard normal
// (random.gauss's), Gamma(alpha, 1), and from them Dirichlet and Beta (numpy's).
double standard_normal(SampleRng& rng);
double gamma(SampleRng& rng, double alpha);

}  // namespace stoke::detail
