#include "augment/timm_augment.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <span>

// timm's level arithmetic is Python's double arithmetic, and AugMix's blended weights numpy's
// float32: every operation rounded on its own (cmake/StokeExactFloat.cmake lists this file).

namespace stoke::detail {
namespace {

using enum TimmOp;

constexpr std::array<TimmOp, 15> kRandTransforms = {
    kAutoContrast, kEqualize,    kInvert, kRotate,        kPosterize,
    kSolarize,     kSolarizeAdd, kColor,  kContrast,      kBrightness,
    kSharpness,    kShearX,      kShearY, kTranslateXRel, kTranslateYRel};

constexpr std::array<TimmOp, 15> kRandIncreasingTransforms = {kAutoContrast,
                                                              kEqualize,
                                                              kInvert,
                                                              kRotate,
                                                              kPosterizeIncreasing,
                                                              kSolarizeIncreasing,
                                                              kSolarizeAdd,
                                                              kColorIncreasing,
                                                              kContrastIncreasing,
                                                              kBrightnessIncreasing,
                                                              kSharpnessIncreasing,
                                                              kShearX,
                                                              kShearY,
                                                              kTranslateXRel,
                                                              kTranslateYRel};

constexpr std::array<TimmOp, 13> kAugMixTransforms = {kAutoContrast,
                                                      kColorIncreasing,
                                                      kContrastIncreasing,
                                                      kBrightnessIncreasing,
                                                      kSharpnessIncreasing,
                                                      kEqualize,
                                                      kRotate,
                                                      kPosterizeIncreasing,
                                                      kSolarizeIncreasing,
                                                      kShearX,
                                                      kShearY,
                                                      kTranslateXRel,
                                                      kTranslateYRel};

constexpr double kLevelDenom = 10.0;  // timm's _LEVEL_DENOM

// The Pillow call of a level function's result.
AppliedOp pil_call(ImageOp op, double value) {
  return {op, {static_cast<float>(value)}};
}

AppliedOp warp(ImageOp op, double value, int filter, const TimmAugment& t) {
  return {op,
          {static_cast<float>(value), static_cast<float>(filter), static_cast<float>(t.fill[0]),
           static_cast<float>(t.fill[1]), static_cast<float>(t.fill[2])}};
}

// AugmentOp.__call__ after its coin: the magnitude, the level function, the op's arguments.
void apply_op(const TimmAugment& t, TimmOp op, SampleRng& rng, std::vector<AppliedOp>& out,
              std::vector<TimmDraw>* draws) {
  double m = t.magnitude;
  if (t.magnitude_std > 0) {
    if (std::isinf(t.magnitude_std))
      m = 0.0 + (m - 0.0) * rng.uniform();  // random.uniform(0, magnitude)
    else
      m = m + standard_normal(rng) * static_cast<double>(t.magnitude_std);  // random.gauss
  }
  const double upper = t.magnitude_max != 0 ? t.magnitude_max : kLevelDenom;
  m = std::max(0.0, std::min(m, upper));
  const double level = m / kLevelDenom;
  bool negative = false;
  const auto negate = [&](double v) {  // _randomly_negate: -v if random() > 0.5
    negative = rng.uniform() > 0.5;
    return negative ? -v : v;
  };
  int filter = 0;
  const auto pick_filter = [&] {  // _interpolation: random.choice of (BILINEAR, BICUBIC)
    filter = t.interpolation != TimmInterpolation::kRandom
                 ? static_cast<int>(t.interpolation)
                 : (rng.below(2) == 0 ? static_cast<int>(TimmInterpolation::kBilinear)
                                      : static_cast<int>(TimmInterpolation::kBicubic));
    return filter;
  };
  const auto bits = [&] { return static_cast<int>(level * 4); };
  const auto threshold = [&] { return std::min(256, static_cast<int>(level * 256)); };
  const auto enhance = [&] { return level * 1.8 + 0.1; };
  const auto increasing = [&] { return std::max(0.1, 1.0 + negate(level * 0.9)); };
  switch (op) {
    case kAutoContrast:
      out.push_back({ImageOp::kPilAutocontrast});
      break;
    case kEqualize:
      out.push_back({ImageOp::kPilEqualize});
      break;
    case kInvert:
      out.push_back({ImageOp::kPilInvert});
      break;
    case kRotate: {
      const double degrees = negate(level * 30.0);
      out.push_back(warp(ImageOp::kPilRotate, degrees, pick_filter(), t));
      break;
    }
    case kPosterize:
      out.push_back(pil_call(ImageOp::kPilPosterize, bits()));
      break;
    case kPosterizeIncreasing:
      out.push_back(pil_call(ImageOp::kPilPosterize, 4 - bits()));
      break;
    case kSolarize:
      out.push_back(pil_call(ImageOp::kPilSolarize, threshold()));
      break;
    case kSolarizeIncreasing:
      out.push_back(pil_call(ImageOp::kPilSolarize, 256 - threshold()));
      break;
    case kSolarizeAdd:
      out.push_back({ImageOp::kPilSolarizeAdd,
                     {static_cast<float>(std::min(128, static_cast<int>(level * 110))), 128.f}});
      break;
    case kColor:
      out.push_back(pil_call(ImageOp::kPilColor, enhance()));
      break;
    case kColorIncreasing:
      out.push_back(pil_call(ImageOp::kPilColor, increasing()));
      break;
    case kContrast:
      out.push_back(pil_call(ImageOp::kPilContrast, enhance()));
      break;
    case kContrastIncreasing:
      out.push_back(pil_call(ImageOp::kPilContrast, increasing()));
      break;
    case kBrightness:
      out.push_back(pil_call(ImageOp::kPilBrightness, enhance()));
      break;
    case kBrightnessIncreasing:
      out.push_back(pil_call(ImageOp::kPilBrightness, increasing()));
      break;
    case kSharpness:
      out.push_back(pil_call(ImageOp::kPilSharpness, enhance()));
      break;
    case kSharpnessIncreasing:
      out.push_back(pil_call(ImageOp::kPilSharpness, increasing()));
      break;
    case kShearX:
    case kShearY: {
      const double factor = negate(level * 0.3);
      out.push_back(warp(op == kShearX ? ImageOp::kPilShearX : ImageOp::kPilShearY, factor,
                         pick_filter(), t));
      break;
    }
    case kTranslateXRel:
    case kTranslateYRel: {
      const double pct = negate(level * static_cast<double>(t.translate_pct));
      out.push_back(
          warp(op == kTranslateXRel ? ImageOp::kPilTranslateXRel : ImageOp::kPilTranslateYRel, pct,
               pick_filter(), t));
      break;
    }
  }
  if (draws != nullptr) draws->push_back({op, m, negative, filter});
}

void draw_rand_augment(const Step& s, SampleRng& rng, std::vector<AppliedOp>& out,
                       std::vector<TimmDraw>* draws) {
  const std::vector<TimmOp> ops = timm_ops(s);
  // np.random.choice(ops, n, replace=True): every choice first, then the ops in turn.
  std::array<std::size_t, 16> chosen{};
  const int n = std::clamp(s.timm.num_ops, 0, static_cast<int>(chosen.size()));
  for (int i = 0; i < n; ++i) chosen[static_cast<std::size_t>(i)] = rng.below(ops.size());
  for (int i = 0; i < n; ++i) {
    const float p = s.timm.probability;
    if (p < 1.0f && rng.uniform() > static_cast<double>(p)) continue;  // AugmentOp's coin
    apply_op(s.timm, ops[chosen[static_cast<std::size_t>(i)]], rng, out, draws);
  }
}

// AugMixAugment.__call__: float32 Dirichlet weights and Beta m, then one chain per weight.
void draw_augmix(const Step& s, SampleRng& rng, std::vector<AppliedOp>& out,
                 std::vector<TimmDraw>* draws) {
  const TimmAugment& t = s.timm;
  const std::vector<TimmOp> ops = timm_ops(s);
  std::array<double, 16> g{};
  const std::size_t width = static_cast<std::size_t>(std::clamp(t.width, 1, 16));
  double total = 0;
  for (std::size_t i = 0; i < width; ++i) total += g[i] = gamma(rng, t.alpha);
  std::array<float, 16> weights{};
  for (std::size_t i = 0; i < width; ++i) weights[i] = static_cast<float>(g[i] / total);
  const double x = gamma(rng, t.alpha), y = gamma(rng, t.alpha);
  const auto m = static_cast<float>(x / (x + y));
  if (t.blended) blended_weights(std::span(weights).first(width), m);
  for (std::size_t i = 0; i < width; ++i) {
    const int depth = t.depth > 0 ? t.depth : 1 + static_cast<int>(rng.below(3));  // randint(1, 4)
    std::array<std::size_t, 16> chosen{};
    const int d = std::min(depth, static_cast<int>(chosen.size()));
    for (int k = 0; k < d; ++k) chosen[static_cast<std::size_t>(k)] = rng.below(ops.size());
    const std::size_t mark = out.size();
    out.push_back({ImageOp::kTimmAugMixChain,
                   {weights[i], 0.f, static_cast<float>(i), t.blended ? 1.f : 0.f}});
    for (int k = 0; k < d; ++k)
      apply_op(t, ops[chosen[static_cast<std::size_t>(k)]], rng, out, draws);
    out[mark].args[1] = static_cast<float>(out.size() - mark - 1);
  }
  if (!t.blended) out.push_back({ImageOp::kTimmAugMixBlend, {m}});
}

}  // namespace

void blended_weights(std::span<float> weights, float m) {
  float left = 1.0f;
  for (std::size_t i = weights.size(); i-- > 0;) {
    const float w = weights[i] * m;
    const float alpha = w / left;
    left *= (1.0f - alpha);
    weights[i] = alpha;
  }
}

std::vector<TimmOp> timm_ops(const Step& s) {
  if (s.kind == StepKind::kTimmAugMix) return {kAugMixTransforms.begin(), kAugMixTransforms.end()};
  if (s.timm.increasing != 0)
    return {kRandIncreasingTransforms.begin(), kRandIncreasingTransforms.end()};
  return {kRandTransforms.begin(), kRandTransforms.end()};
}

// Box-Muller on two uniforms; 1 - u keeps the logarithm's argument in (0, 1].
double standard_normal(SampleRng& rng) {
  const double u1 = 1.0 - rng.uniform();
  const double u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Marsaglia and Tsang's method; alpha < 1 through Gamma(alpha + 1) * U^(1 / alpha).
double gamma(SampleRng& rng, double alpha) {
  if (alpha < 1.0) {
    const double u = 1.0 - rng.uniform();
    return gamma(rng, alpha + 1.0) * std::pow(u, 1.0 / alpha);
  }
  const double d = alpha - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - rng.uniform();
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

void draw_timm(const Step& s, SampleRng& rng, std::vector<AppliedOp>& out,
               std::vector<TimmDraw>* draws) {
  if (s.kind == StepKind::kTimmAugMix)
    draw_augmix(s, rng, out, draws);
  else
    draw_rand_augment(s, rng, out, draws);
}

}  // namespace stoke::detail
