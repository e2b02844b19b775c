#include "augment/photometric_steps.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "augment/policies.hpp"
#include "augment/timm_augment.hpp"

namespace stoke::detail {
namespace {

// torchvision's _RandomApplyTransform: the step applies when a uniform draw is below p. A step
// that always applies (p = 1, the plain functional op) draws nothing.
bool applies(float probability, SampleRng& rng) {
  return probability >= 1.f || rng.bernoulli(probability);
}

// ColorJitter: a random order of the four (torch.randperm(4)), then a factor for each that is
// set, drawn in the fixed order brightness, contrast, saturation, hue.
void draw_color_jitter(const AugmentStep& s, SampleRng& rng, std::vector<ColorOpArgs>& out) {
  std::array<int, 4> order{0, 1, 2, 3};
  for (int i = 3; i > 0; --i)  // Fisher-Yates: every order equally likely
    std::swap(order[static_cast<std::size_t>(i)],
              order[static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(i) + 1))]);
  const auto factor = [&](float v) {
    return static_cast<float>(rng.uniform(std::max(0.0, 1.0 - v), 1.0 + v));
  };
  std::array<ColorOpArgs, 4> ops{};
  if (s.brightness > 0) ops[0] = {ColorOp::kBrightness, {factor(s.brightness)}};
  if (s.contrast > 0) ops[1] = {ColorOp::kContrast, {factor(s.contrast)}};
  if (s.saturation > 0) ops[2] = {ColorOp::kSaturation, {factor(s.saturation)}};
  if (s.hue > 0) ops[3] = {ColorOp::kHue, {static_cast<float>(rng.uniform(-s.hue, s.hue))}};
  for (const int i : order)
    if (ops[static_cast<std::size_t>(i)].op != ColorOp::kNone)
      out.push_back(ops[static_cast<std::size_t>(i)]);
}

// RandomAffine.make_params: the angle; the translation when one is given, int(round(u)) pixels
// (Python's round: half to even) of a u drawn within +-translate times the side; the scale and
// the shears when given (the y shear when its range is). Each is a torch float32 draw.
void draw_random_affine(const AugmentStep& s, SampleRng& rng, int height, int width,
                        std::vector<ColorOpArgs>& out) {
  const auto draw = [&](double lo, double hi) { return static_cast<float>(rng.uniform(lo, hi)); };
  const float angle = draw(s.degrees_min, s.degrees_max);
  float tx = 0.f, ty = 0.f;
  if (s.translate_x > 0 || s.translate_y > 0) {
    const double max_dx = static_cast<double>(s.translate_x) * width;
    const double max_dy = static_cast<double>(s.translate_y) * height;
    tx = std::nearbyint(draw(-max_dx, max_dx));
    ty = std::nearbyint(draw(-max_dy, max_dy));
  }
  const float scale =
      s.scale_min != 1.f || s.scale_max != 1.f ? draw(s.scale_min, s.scale_max) : 1.f;
  float shear_x = 0.f, shear_y = 0.f;
  const bool shear_y_given = s.shear_y_min != 0.f || s.shear_y_max != 0.f;
  if (s.shear_x_min != 0.f || s.shear_x_max != 0.f || shear_y_given) {
    shear_x = draw(s.shear_x_min, s.shear_x_max);
    if (shear_y_given) shear_y = draw(s.shear_y_min, s.shear_y_max);
  }
  const ColorOp op = s.interpolation == static_cast<std::int32_t>(Interpolation::kBilinear)
                         ? ColorOp::kAffineBilinear
                         : ColorOp::kAffine;
  out.push_back({op, {angle, tx, ty, scale, shear_x, shear_y, s.fill}});
}

}  // namespace

void draw_pixel_ops(const AugmentStep& s, SampleRng& rng, int height, int width,
                    std::vector<ColorOpArgs>& out) {
  if (is_timm_augment(s.step_kind())) {
    draw_timm(s, rng, out);
    return;
  }
  if (is_policy(s.step_kind())) {
    draw_policy(s, rng, height, width, out);
    return;
  }
  switch (s.step_kind()) {
    case StepKind::kColorJitter:
      draw_color_jitter(s, rng, out);
      return;
    case StepKind::kRandomAffine:
      draw_random_affine(s, rng, height, width, out);
      return;
    case StepKind::kGaussianBlur: {
      const float sigma = static_cast<float>(rng.uniform(s.sigma_min, s.sigma_max));
      out.push_back(
          {ColorOp::kGaussianBlur,
           {static_cast<float>(s.kernel_width), static_cast<float>(s.kernel_height), sigma}});
      return;
    }
    default:
      break;
  }
  if (!applies(s.probability, rng)) return;
  switch (s.step_kind()) {
    case StepKind::kGrayscale:
      out.push_back({ColorOp::kGrayscale});
      break;
    case StepKind::kSolarize:
      out.push_back({ColorOp::kSolarize, {s.threshold}});
      break;
    case StepKind::kPosterize:
      out.push_back({ColorOp::kPosterize, {static_cast<float>(s.bits)}});
      break;
    case StepKind::kEqualize:
      out.push_back({ColorOp::kEqualize});
      break;
    case StepKind::kAutocontrast:
      out.push_back({ColorOp::kAutocontrast});
      break;
    case StepKind::kAdjustSharpness:
      out.push_back({ColorOp::kSharpness, {s.factor}});
      break;
    case StepKind::kInvert:
      out.push_back({ColorOp::kInvert});
      break;
    default:
      break;
  }
}

}  // namespace stoke::detail
