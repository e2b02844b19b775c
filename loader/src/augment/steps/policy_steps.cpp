// torchvision's augmentation policies: TrivialAugmentWide, RandAugment, AutoAugment and AugMix.
// Each kind's builder, text forms, description and draws are together below; the op tables and
// the draws themselves are augment/policies.hpp's.

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "augment/policies.hpp"
#include "augment/steps/step_def.hpp"
#include "stoke/error.hpp"

namespace stoke {

using detail::checked_fill;
using detail::fmt;
using detail::kMaxFactor;

namespace {

constexpr int kMaxPolicyOps = 16;
constexpr int kMaxMagnitudeBins = 1024;
constexpr int kMaxSeverity = 10;  // AugMix's _PARAMETER_MAX: its ops have 10 bins
constexpr int kMaxAugMixChains = 16;
constexpr int kMaxAugMixDepth = 16;

int checked_bins(const char* step, int bins) {
  if (bins < 2 || bins > kMaxMagnitudeBins)
    throw ConfigError(std::string(step) + ": magnitude bins must be in 2.." +
                      std::to_string(kMaxMagnitudeBins) + ", got " + std::to_string(bins));
  return bins;
}

}  // namespace

Pipeline& Pipeline::trivial_augment_wide(int magnitude_bins, float fill) {
  Step s{.kind = StepKind::kTrivialAugmentWide};
  s.magnitude_bins = checked_bins("trivial_augment_wide", magnitude_bins);
  s.fill = checked_fill("trivial_augment_wide", fill);
  return add(s);
}

Pipeline& Pipeline::rand_augment(int num_ops, int magnitude, int magnitude_bins, float fill) {
  Step s{.kind = StepKind::kRandAugment};
  if (num_ops < 0 || num_ops > kMaxPolicyOps)
    throw ConfigError("rand_augment: num_ops must be in 0.." + std::to_string(kMaxPolicyOps) +
                      ", got " + std::to_string(num_ops));
  s.magnitude_bins = checked_bins("rand_augment", magnitude_bins);
  if (magnitude < 0 || magnitude >= magnitude_bins)
    throw ConfigError("rand_augment: magnitude must be a bin in 0.." +
                      std::to_string(magnitude_bins - 1) + ", got " + std::to_string(magnitude));
  s.num_ops = num_ops;
  s.magnitude = magnitude;
  s.fill = checked_fill("rand_augment", fill);
  return add(s);
}

Pipeline& Pipeline::auto_augment(AutoAugmentPolicy policy, float fill) {
  if (policy != AutoAugmentPolicy::kImageNet && policy != AutoAugmentPolicy::kCifar10 &&
      policy != AutoAugmentPolicy::kSvhn)
    throw ConfigError("auto_augment: unknown policy " + std::to_string(static_cast<int>(policy)));
  Step s{.kind = StepKind::kAutoAugment};
  s.policy = policy;
  s.fill = checked_fill("auto_augment", fill);
  return add(s);
}

Pipeline& Pipeline::augmix(int severity, int mixture_width, int chain_depth, float alpha,
                           bool all_ops, Interpolation interpolation, float fill) {
  if (severity < 1 || severity > kMaxSeverity)
    throw ConfigError("augmix: severity must be in 1.." + std::to_string(kMaxSeverity) + ", got " +
                      std::to_string(severity));
  if (mixture_width < 1 || mixture_width > kMaxAugMixChains)
    throw ConfigError("augmix: width (chains) must be in 1.." + std::to_string(kMaxAugMixChains) +
                      ", got " + std::to_string(mixture_width));
  if (chain_depth != -1 && (chain_depth < 1 || chain_depth > kMaxAugMixDepth))
    throw ConfigError("augmix: depth must be -1 (1 to 3 ops drawn per chain) or in 1.." +
                      std::to_string(kMaxAugMixDepth) + ", got " + std::to_string(chain_depth));
  if (!(alpha > 0 && alpha <= kMaxFactor))
    throw ConfigError("augmix: alpha must be in (0, " + fmt(kMaxFactor) + "], got " + fmt(alpha));
  if (interpolation != Interpolation::kNearest && interpolation != Interpolation::kBilinear)
    throw ConfigError("augmix: interpolation must be nearest or bilinear, got " +
                      std::to_string(static_cast<int>(interpolation)));
  Step s{.kind = StepKind::kAugMix};
  s.fill = fill == kNoFill ? kNoFill : checked_fill("augmix", fill);
  s.severity = severity;
  s.mixture_width = mixture_width;
  s.chain_depth = chain_depth;
  s.alpha = alpha;
  s.all_ops = all_ops;
  s.interpolation = interpolation;
  return add(s);
}

}  // namespace stoke

namespace stoke::detail {
namespace {

constexpr int kAugMixDrawnDepth = 3;  // chain_depth -1: 1..3 ops per chain

constexpr const char* kAugMixText =
    "augmix [severity=S] [width=W] [depth=D] [alpha=A] [all_ops=0|1] "
    "[interpolation=nearest|bilinear] [fill=V]";
constexpr std::string_view kAugMixUsage =
    "([severity=S] [width=W] [depth=D] [alpha=A] [all_ops=0|1] "
    "[interpolation=nearest|bilinear] [fill=V])";

[[noreturn]] void augmix_word_error(const std::string& why) {
  word_error("augmix", why);
}

// A setting of "augmix" that is a whole number (severity, width, depth, all_ops).
int whole_setting(const std::string& key, double v) {
  if (!(std::abs(v) <= kMaxSide) || v != std::floor(v))
    augmix_word_error(key + " must be a whole number, got " + fmt(static_cast<float>(v)));
  return static_cast<int>(v);
}

// The augmix step of its words (kAugMixText), torchvision's defaults for those left out.
void add_augmix(Pipeline& p, const StepNumbers& n) {
  if (n.size() != 0)
    throw ConfigError(std::string("pipeline step augmix takes its settings as key=value words (") +
                      kAugMixText + "), got " + std::to_string(n.size()) + " number(s)");
  int severity = 3, width = 3, depth = -1;
  float alpha = 1.f, fill = kNoFill;
  bool all_ops = true;
  Interpolation interpolation = Interpolation::kBilinear;
  constexpr std::string_view kKeys[] = {"severity", "width",         "depth", "alpha",
                                        "all_ops",  "interpolation", "fill"};
  std::vector<std::string> seen;
  for (const std::string& w : n.words()) {
    const std::size_t eq = w.find('=');
    const std::string key = eq == std::string::npos ? w : w.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : w.substr(eq + 1);
    if (eq == std::string::npos ||
        std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
      augmix_word_error("'" + w + "' is not one of its settings (" + kAugMixText + ")");
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      augmix_word_error(key + " is given twice");
    seen.push_back(key);
    if (key == "interpolation") {
      if (value != "nearest" && value != "bilinear")
        augmix_word_error("interpolation must be nearest or bilinear, got '" + value + "'");
      interpolation = value == "nearest" ? Interpolation::kNearest : Interpolation::kBilinear;
      continue;
    }
    const double v = word_number("augmix", w, value);
    if (key == "severity") {
      severity = whole_setting(key, v);
    } else if (key == "width") {
      width = whole_setting(key, v);
    } else if (key == "depth") {
      depth = whole_setting(key, v);
    } else if (key == "alpha") {
      alpha = static_cast<float>(v);
    } else if (key == "all_ops") {
      const int b = whole_setting(key, v);
      if (b != 0 && b != 1) augmix_word_error("all_ops must be 0 or 1, got " + std::to_string(b));
      all_ops = b == 1;
    } else {  // fill; the sentinel for none is not a level a user can ask for
      fill = static_cast<float>(v);
      if (fill == kNoFill) augmix_word_error("fill must be a level in [0, 255], got -1");
    }
  }
  p.augmix(severity, width, depth, alpha, all_ops, interpolation, fill);
}

// AutoAugment's policies by their names in the text forms.
template <AutoAugmentPolicy kPolicy>
void add_auto_augment(Pipeline& p, const StepNumbers& n) {
  p.auto_augment(kPolicy, n.number(0, 0.f));
}

const char* policy_name(AutoAugmentPolicy p) {
  if (p == AutoAugmentPolicy::kCifar10) return "cifar10";
  if (p == AutoAugmentPolicy::kSvhn) return "svhn";
  return "imagenet";
}

constexpr StepForm kTrivialAugmentWideForms[] = {
    {"trivial_augment_wide", "([magnitude_bins, fill])", 0, 2, false,
     [](Pipeline& p, const StepNumbers& n) {
       p.trivial_augment_wide(n.size() == 0 ? 31 : n.whole(0), n.number(1, 0.f));
     }}};
constexpr StepForm kRandAugmentForms[] = {
    {"rand_augment", "([num_ops, magnitude, magnitude_bins, fill])", 0, 4, false,
     [](Pipeline& p, const StepNumbers& n) {
       p.rand_augment(n.size() > 0 ? n.whole(0) : 2, n.size() > 1 ? n.whole(1) : 9,
                      n.size() > 2 ? n.whole(2) : 31, n.number(3, 0.f));
     }}};
constexpr StepForm kAutoAugmentForms[] = {
    {"auto_augment", "([fill])", 0, 1, false, add_auto_augment<AutoAugmentPolicy::kImageNet>},
    {"auto_augment_imagenet", "([fill])", 0, 1, false,
     add_auto_augment<AutoAugmentPolicy::kImageNet>},
    {"auto_augment_cifar10", "([fill])", 0, 1, false,
     add_auto_augment<AutoAugmentPolicy::kCifar10>},
    {"auto_augment_svhn", "([fill])", 0, 1, false, add_auto_augment<AutoAugmentPolicy::kSvhn>}};
// Numbers are refused with the settings' usage (add_augmix), so the form takes any count.
constexpr StepForm kAugMixForms[] = {
    {"augmix", kAugMixUsage, 0, static_cast<std::size_t>(-1), true, add_augmix}};

template <void (*kDraw)(const Step&, SampleRng&, int, int, std::vector<AppliedOp>&,
                        std::vector<PolicyDraw>*)>
void draw_policy(const Step& s, SampleRng& rng, int height, int width,
                 std::vector<AppliedOp>& out) {
  kDraw(s, rng, height, width, out, nullptr);
}

// A policy's record: in place, its draws from augment/policies.hpp.
constexpr StepDef policy_step(StepKind kind, std::string_view name, std::span<const StepForm> forms,
                              void (*describe)(std::ostream&, const Step&),
                              int (*max_ops)(const Step&), DrawOps draw) {
  return {.kind = kind,
          .name = name,
          .shape = StepShape::kInPlace,
          .forms = forms,
          .describe = describe,
          .max_ops = max_ops,
          .draw = draw,
          .apply = &Augmenter::apply_in_place};
}

const StepDef kPolicySteps[] = {
    policy_step(
        StepKind::kTrivialAugmentWide, "trivial_augment_wide", kTrivialAugmentWideForms,
        [](std::ostream& out, const Step& s) {
          out << "trivial_augment_wide bins " << s.magnitude_bins << " fill " << fmt(s.fill);
        },
        one_op, draw_policy<draw_trivial_augment_wide>),
    policy_step(
        StepKind::kRandAugment, "rand_augment", kRandAugmentForms,
        [](std::ostream& out, const Step& s) {
          out << "rand_augment ops " << s.num_ops << " magnitude " << s.magnitude << " of "
              << s.magnitude_bins << " bins fill " << fmt(s.fill);
        },
        [](const Step& s) { return s.num_ops; }, draw_policy<draw_rand_augment>),
    policy_step(
        StepKind::kAutoAugment, "auto_augment", kAutoAugmentForms,
        [](std::ostream& out, const Step& s) {
          out << "auto_augment " << policy_name(s.policy) << " fill " << fmt(s.fill);
        },
        [](const Step&) { return 2; }, draw_policy<draw_auto_augment>),
    policy_step(
        StepKind::kAugMix, "augmix", kAugMixForms,
        [](std::ostream& out, const Step& s) {
          out << "augmix severity " << s.severity << " width " << s.mixture_width << " depth "
              << s.chain_depth << " alpha " << fmt(s.alpha) << " all_ops " << (s.all_ops ? 1 : 0)
              << (s.interpolation == Interpolation::kNearest ? " nearest" : " bilinear");
          if (s.fill != kNoFill) out << " fill " << fmt(s.fill);
        },
        // Its head, then a mark and its ops per chain (up to 3 ops each when drawn).
        [](const Step& s) {
          return 1 +
                 s.mixture_width * (1 + (s.chain_depth > 0 ? s.chain_depth : kAugMixDrawnDepth));
        },
        draw_policy<draw_augmix>),
};

}  // namespace

std::span<const StepDef> policy_steps() {
  return kPolicySteps;
}

}  // namespace stoke::detail
