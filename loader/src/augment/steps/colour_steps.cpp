// torchvision's photometric steps on uint8 pixels: ColorJitter, the plain functional ops and
// their Random* classes. Each kind's builder, text forms, description and draws are together
// below; the ops themselves are augment/photometric.hpp's.

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "augment/steps/step_def.hpp"
#include "stoke/error.hpp"

namespace stoke {

using detail::checked_probability;
using detail::fmt;
using detail::kMaxFactor;

namespace {
constexpr int kMaxKernel = 255;  // keeps a blur's cost sane
}  // namespace

Pipeline& Pipeline::color_jitter(float brightness, float contrast, float saturation, float hue) {
  for (const auto& [what, v] :
       {std::pair{"brightness", brightness}, std::pair{"contrast", contrast},
        std::pair{"saturation", saturation}})
    if (!(v >= 0 && v <= kMaxFactor))
      throw ConfigError(std::string("color_jitter: ") + what + " must be in [0, " +
                        fmt(kMaxFactor) + "], got " + fmt(v));
  if (!(hue >= 0 && hue <= 0.5f))
    throw ConfigError("color_jitter: hue must be in [0, 0.5], got " + fmt(hue));
  Step s{.kind = StepKind::kColorJitter, .brightness = brightness, .contrast = contrast};
  s.saturation = saturation;
  s.hue = hue;
  return add(s);
}

Pipeline& Pipeline::grayscale(float probability) {
  return add(
      {.kind = StepKind::kGrayscale, .probability = checked_probability("grayscale", probability)});
}

Pipeline& Pipeline::gaussian_blur(int kernel_width, int kernel_height, float sigma_min,
                                  float sigma_max) {
  for (const int k : {kernel_width, kernel_height})
    if (k <= 0 || k % 2 == 0 || k > kMaxKernel)
      throw ConfigError("gaussian_blur: kernel sides must be odd, in 1.." +
                        std::to_string(kMaxKernel) + ", got " + std::to_string(kernel_width) + "x" +
                        std::to_string(kernel_height));
  if (!(sigma_min > 0 && sigma_min <= sigma_max && sigma_max <= kMaxFactor))
    throw ConfigError("gaussian_blur: sigma must satisfy 0 < min <= max <= " + fmt(kMaxFactor) +
                      ", got [" + fmt(sigma_min) + ", " + fmt(sigma_max) + "]");
  Step s{.kind = StepKind::kGaussianBlur};
  s.kernel_width = kernel_width;
  s.kernel_height = kernel_height;
  s.sigma_min = sigma_min;
  s.sigma_max = sigma_max;
  return add(s);
}

Pipeline& Pipeline::solarize(float threshold, float probability) {
  if (!(threshold >= 0 && threshold <= 255))
    throw ConfigError("solarize: threshold must be in [0, 255], got " + fmt(threshold));
  Step s{.kind = StepKind::kSolarize, .probability = checked_probability("solarize", probability)};
  s.threshold = threshold;
  return add(s);
}

Pipeline& Pipeline::posterize(int bits, float probability) {
  if (bits < 0 || bits > 8)
    throw ConfigError("posterize: bits must be in 0..8, got " + std::to_string(bits));
  Step s{.kind = StepKind::kPosterize,
         .probability = checked_probability("posterize", probability)};
  s.bits = bits;
  return add(s);
}

Pipeline& Pipeline::equalize(float probability) {
  return add(
      {.kind = StepKind::kEqualize, .probability = checked_probability("equalize", probability)});
}

Pipeline& Pipeline::autocontrast(float probability) {
  return add({.kind = StepKind::kAutocontrast,
              .probability = checked_probability("autocontrast", probability)});
}

Pipeline& Pipeline::adjust_sharpness(float factor, float probability) {
  if (!(factor >= 0 && factor <= kMaxFactor))
    throw ConfigError("adjust_sharpness: factor must be in [0, " + fmt(kMaxFactor) + "], got " +
                      fmt(factor));
  Step s{.kind = StepKind::kAdjustSharpness,
         .probability = checked_probability("adjust_sharpness", probability)};
  s.factor = factor;
  return add(s);
}

Pipeline& Pipeline::invert(float probability) {
  return add(
      {.kind = StepKind::kInvert, .probability = checked_probability("invert", probability)});
}

}  // namespace stoke

namespace stoke::detail {
namespace {

// torchvision's _RandomApplyTransform: the step applies when a uniform draw is below p. A step
// that always applies (p = 1, the plain functional op) draws nothing.
bool applies(float probability, SampleRng& rng) {
  return probability >= 1.f || rng.bernoulli(probability);
}

// ColorJitter: a random order of the four (torch.randperm(4)), then a factor for each that is
// set, drawn in the fixed order brightness, contrast, saturation, hue.
void draw_color_jitter(const Step& s, SampleRng& rng, int, int, std::vector<AppliedOp>& out) {
  std::array<int, 4> order{0, 1, 2, 3};
  for (int i = 3; i > 0; --i)  // Fisher-Yates: every order equally likely
    std::swap(order[static_cast<std::size_t>(i)],
              order[static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(i) + 1))]);
  const auto factor = [&](float v) {
    return static_cast<float>(rng.uniform(std::max(0.0, 1.0 - v), 1.0 + v));
  };
  std::array<AppliedOp, 4> ops{};
  if (s.brightness > 0) ops[0] = {ImageOp::kBrightness, {factor(s.brightness)}};
  if (s.contrast > 0) ops[1] = {ImageOp::kContrast, {factor(s.contrast)}};
  if (s.saturation > 0) ops[2] = {ImageOp::kSaturation, {factor(s.saturation)}};
  if (s.hue > 0) ops[3] = {ImageOp::kHue, {static_cast<float>(rng.uniform(-s.hue, s.hue))}};
  for (const int i : order)
    if (ops[static_cast<std::size_t>(i)].op != ImageOp::kNone)
      out.push_back(ops[static_cast<std::size_t>(i)]);
}

// GaussianBlur: one sigma for both directions, always applied.
void draw_gaussian_blur(const Step& s, SampleRng& rng, int, int, std::vector<AppliedOp>& out) {
  const float sigma = static_cast<float>(rng.uniform(s.sigma_min, s.sigma_max));
  out.push_back({ImageOp::kGaussianBlur,
                 {static_cast<float>(s.kernel_width), static_cast<float>(s.kernel_height), sigma}});
}

// The ops of one number or none, behind the step's coin.
template <ImageOp kOp>
void draw_plain(const Step& s, SampleRng& rng, int, int, std::vector<AppliedOp>& out) {
  if (!applies(s.probability, rng)) return;
  AppliedOp op{kOp, {}};
  if constexpr (kOp == ImageOp::kSolarize) op.args[0] = s.threshold;
  if constexpr (kOp == ImageOp::kPosterize) op.args[0] = static_cast<float>(s.bits);
  if constexpr (kOp == ImageOp::kSharpness) op.args[0] = s.factor;
  out.push_back(op);
}

// A step of probability alone: "NAME" takes no numbers and always applies; "random_NAME" takes
// its probability, torchvision's Random* default when left out.
#define STOKE_PROBABILITY_FORMS(name, random_default)                                    \
  {                                                                                      \
    {#name, "no numbers", 0, 0, false, [](Pipeline& p, const StepNumbers&) { p.name(1.f); }}, {       \
      "random_" #name, "([probability])", 0, 1, false,                                   \
          [](Pipeline& p, const StepNumbers& n) { p.name(n.number(0, random_default)); } \
    }                                                                                    \
  }

constexpr StepForm kGrayscaleForms[] = STOKE_PROBABILITY_FORMS(grayscale, 0.1f);
constexpr StepForm kEqualizeForms[] = STOKE_PROBABILITY_FORMS(equalize, 0.5f);
constexpr StepForm kAutocontrastForms[] = STOKE_PROBABILITY_FORMS(autocontrast, 0.5f);
constexpr StepForm kInvertForms[] = STOKE_PROBABILITY_FORMS(invert, 0.5f);
#undef STOKE_PROBABILITY_FORMS

constexpr StepForm kColorJitterForms[] = {
    {"color_jitter", "(brightness[, contrast, saturation, hue])", 1, 4, false,
     [](Pipeline& p, const StepNumbers& n) {
       p.color_jitter(n.number(0, 0), n.number(1, 0), n.number(2, 0), n.number(3, 0));
     }}};
constexpr StepForm kGaussianBlurForms[] = {
    {"gaussian_blur", "(kernel[, sigma_min, sigma_max])", 1, 3, false,
     [](Pipeline& p, const StepNumbers& n) {
       const float lo = n.number(1, 0.1f);  // one sigma alone is the range [sigma, sigma]
       p.gaussian_blur(n.whole(0), n.whole(0), lo, n.number(2, n.size() == 2 ? lo : 2.0f));
     }}};
constexpr StepForm kSolarizeForms[] = {
    {"solarize", "(threshold)", 1, 1, false,
     [](Pipeline& p, const StepNumbers& n) { p.solarize(n.number(0, 0), 1.f); }},
    {"random_solarize", "(threshold[, probability])", 1, 2, false,
     [](Pipeline& p, const StepNumbers& n) { p.solarize(n.number(0, 0), n.number(1, 0.5f)); }}};
constexpr StepForm kPosterizeForms[] = {
    {"posterize", "(bits)", 1, 1, false,
     [](Pipeline& p, const StepNumbers& n) { p.posterize(n.whole(0), 1.f); }},
    {"random_posterize", "(bits[, probability])", 1, 2, false,
     [](Pipeline& p, const StepNumbers& n) { p.posterize(n.whole(0), n.number(1, 0.5f)); }}};
constexpr StepForm kAdjustSharpnessForms[] = {
    {"adjust_sharpness", "(factor)", 1, 1, false,
     [](Pipeline& p, const StepNumbers& n) { p.adjust_sharpness(n.number(0, 0), 1.f); }},
    {"random_adjust_sharpness", "(factor[, probability])", 1, 2, false,
     [](Pipeline& p, const StepNumbers& n) {
       p.adjust_sharpness(n.number(0, 0), n.number(1, 0.5f));
     }}};

void describe_probability(std::ostream& out, const Step& s) {
  out << " p=" << fmt(s.probability);
}

// A photometric step's record: in place, one op unless it says otherwise.
constexpr StepDef colour_step(StepKind kind, std::string_view name, std::span<const StepForm> forms,
                              void (*describe)(std::ostream&, const Step&), DrawOps draw) {
  return {.kind = kind,
          .name = name,
          .shape = StepShape::kInPlace,
          .forms = forms,
          .describe = describe,
          .max_ops = one_op,
          .draw = draw,
          .apply = &Augmenter::apply_in_place};
}

const StepDef kColourSteps[] = {
    {.kind = StepKind::kColorJitter,
     .name = "color_jitter",
     .shape = StepShape::kInPlace,
     .forms = kColorJitterForms,
     .describe =
         [](std::ostream& out, const Step& s) {
           out << "color_jitter brightness " << fmt(s.brightness) << " contrast " << fmt(s.contrast)
               << " saturation " << fmt(s.saturation) << " hue " << fmt(s.hue) << " (random order)";
         },
     .max_ops = [](const Step&) { return 4; },
     .draw = draw_color_jitter,
     .apply = &Augmenter::apply_in_place},
    colour_step(
        StepKind::kGrayscale, "grayscale", kGrayscaleForms,
        [](std::ostream& out, const Step& s) {
          out << "grayscale";
          describe_probability(out, s);
        },
        draw_plain<ImageOp::kGrayscale>),
    colour_step(
        StepKind::kGaussianBlur, "gaussian_blur", kGaussianBlurForms,
        [](std::ostream& out, const Step& s) {
          out << "gaussian_blur " << s.kernel_width << "x" << s.kernel_height << " sigma ["
              << fmt(s.sigma_min) << ", " << fmt(s.sigma_max) << "]";
        },
        draw_gaussian_blur),
    colour_step(
        StepKind::kSolarize, "solarize", kSolarizeForms,
        [](std::ostream& out, const Step& s) {
          out << "solarize threshold " << fmt(s.threshold);
          describe_probability(out, s);
        },
        draw_plain<ImageOp::kSolarize>),
    colour_step(
        StepKind::kPosterize, "posterize", kPosterizeForms,
        [](std::ostream& out, const Step& s) {
          out << "posterize bits " << s.bits;
          describe_probability(out, s);
        },
        draw_plain<ImageOp::kPosterize>),
    colour_step(
        StepKind::kEqualize, "equalize", kEqualizeForms,
        [](std::ostream& out, const Step& s) {
          out << "equalize";
          describe_probability(out, s);
        },
        draw_plain<ImageOp::kEqualize>),
    colour_step(
        StepKind::kAutocontrast, "autocontrast", kAutocontrastForms,
        [](std::ostream& out, const Step& s) {
          out << "autocontrast";
          describe_probability(out, s);
        },
        draw_plain<ImageOp::kAutocontrast>),
    colour_step(
        StepKind::kAdjustSharpness, "adjust_sharpness", kAdjustSharpnessForms,
        [](std::ostream& out, const Step& s) {
          out << "adjust_sharpness factor " << fmt(s.factor);
          describe_probability(out, s);
        },
        draw_plain<ImageOp::kSharpness>),
    colour_step(
        StepKind::kInvert, "invert", kInvertForms,
        [](std::ostream& out, const Step& s) {
          out << "invert";
          describe_probability(out, s);
        },
        draw_plain<ImageOp::kInvert>),
};

}  // namespace

std::span<const StepDef> colour_steps() {
  return kColourSteps;
}

}  // namespace stoke::detail
