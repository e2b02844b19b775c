#include "augment/policies.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

namespace stoke::detail {
namespace {

using enum PolicyOp;

// TrivialAugmentWide's and RandAugment's tables hold the same ops in the same order.
constexpr std::array<PolicyOp, 14> kWideOps = {
    kIdentity, kShearX,   kShearY,    kTranslateX, kTranslateY, kRotate,       kBrightness,
    kColor,    kContrast, kSharpness, kPosterize,  kSolarize,   kAutoContrast, kEqualize};

struct SubPolicy {
  PolicyOp op;
  double probability;
  int bin;  // -1: the op has no magnitude
};
using Policy = std::array<SubPolicy, 2>;

// torchvision's AutoAugment._get_policies, in its order.
constexpr std::array<Policy, 25> kImageNet = {{
    {{{kPosterize, 0.4, 8}, {kRotate, 0.6, 9}}},
    {{{kSolarize, 0.6, 5}, {kAutoContrast, 0.6, -1}}},
    {{{kEqualize, 0.8, -1}, {kEqualize, 0.6, -1}}},
    {{{kPosterize, 0.6, 7}, {kPosterize, 0.6, 6}}},
    {{{kEqualize, 0.4, -1}, {kSolarize, 0.2, 4}}},
    {{{kEqualize, 0.4, -1}, {kRotate, 0.8, 8}}},
    {{{kSolarize, 0.6, 3}, {kEqualize, 0.6, -1}}},
    {{{kPosterize, 0.8, 5}, {kEqualize, 1.0, -1}}},
    {{{kRotate, 0.2, 3}, {kSolarize, 0.6, 8}}},
    {{{kEqualize, 0.6, -1}, {kPosterize, 0.4, 6}}},
    {{{kRotate, 0.8, 8}, {kColor, 0.4, 0}}},
    {{{kRotate, 0.4, 9}, {kEqualize, 0.6, -1}}},
    {{{kEqualize, 0.0, -1}, {kEqualize, 0.8, -1}}},
    {{{kInvert, 0.6, -1}, {kEqualize, 1.0, -1}}},
    {{{kColor, 0.6, 4}, {kContrast, 1.0, 8}}},
    {{{kRotate, 0.8, 8}, {kColor, 1.0, 2}}},
    {{{kColor, 0.8, 8}, {kSolarize, 0.8, 7}}},
    {{{kSharpness, 0.4, 7}, {kInvert, 0.6, -1}}},
    {{{kShearX, 0.6, 5}, {kEqualize, 1.0, -1}}},
    {{{kColor, 0.4, 0}, {kEqualize, 0.6, -1}}},
    {{{kEqualize, 0.4, -1}, {kSolarize, 0.2, 4}}},
    {{{kSolarize, 0.6, 5}, {kAutoContrast, 0.6, -1}}},
    {{{kInvert, 0.6, -1}, {kEqualize, 1.0, -1}}},
    {{{kColor, 0.6, 4}, {kContrast, 1.0, 8}}},
    {{{kEqualize, 0.8, -1}, {kEqualize, 0.6, -1}}},
}};

constexpr std::array<Policy, 25> kCifar10 = {{
    {{{kInvert, 0.1, -1}, {kContrast, 0.2, 6}}},
    {{{kRotate, 0.7, 2}, {kTranslateX, 0.3, 9}}},
    {{{kSharpness, 0.8, 1}, {kSharpness, 0.9, 3}}},
    {{{kShearY, 0.5, 8}, {kTranslateY, 0.7, 9}}},
    {{{kAutoContrast, 0.5, -1}, {kEqualize, 0.9, -1}}},
    {{{kShearY, 0.2, 7}, {kPosterize, 0.3, 7}}},
    {{{kColor, 0.4, 3}, {kBrightness, 0.6, 7}}},
    {{{kSharpness, 0.3, 9}, {kBrightness, 0.7, 9}}},
    {{{kEqualize, 0.6, -1}, {kEqualize, 0.5, -1}}},
    {{{kContrast, 0.6, 7}, {kSharpness, 0.6, 5}}},
    {{{kColor, 0.7, 7}, {kTranslateX, 0.5, 8}}},
    {{{kEqualize, 0.3, -1}, {kAutoContrast, 0.4, -1}}},
    {{{kTranslateY, 0.4, 3}, {kSharpness, 0.2, 6}}},
    {{{kBrightness, 0.9, 6}, {kColor, 0.2, 8}}},
    {{{kSolarize, 0.5, 2}, {kInvert, 0.0, -1}}},
    {{{kEqualize, 0.2, -1}, {kAutoContrast, 0.6, -1}}},
    {{{kEqualize, 0.2, -1}, {kEqualize, 0.6, -1}}},
    {{{kColor, 0.9, 9}, {kEqualize, 0.6, -1}}},
    {{{kAutoContrast, 0.8, -1}, {kSolarize, 0.2, 8}}},
    {{{kBrightness, 0.1, 3}, {kColor, 0.7, 0}}},
    {{{kSolarize, 0.4, 5}, {kAutoContrast, 0.9, -1}}},
    {{{kTranslateY, 0.9, 9}, {kTranslateY, 0.7, 9}}},
    {{{kAutoContrast, 0.9, -1}, {kSolarize, 0.8, 3}}},
    {{{kEqualize, 0.8, -1}, {kInvert, 0.1, -1}}},
    {{{kTranslateY, 0.7, 9}, {kAutoContrast, 0.9, -1}}},
}};

constexpr std::array<Policy, 25> kSvhn = {{
    {{{kShearX, 0.9, 4}, {kInvert, 0.2, -1}}},
    {{{kShearY, 0.9, 8}, {kInvert, 0.7, -1}}},
    {{{kEqualize, 0.6, -1}, {kSolarize, 0.6, 6}}},
    {{{kInvert, 0.9, -1}, {kEqualize, 0.6, -1}}},
    {{{kEqualize, 0.6, -1}, {kRotate, 0.9, 3}}},
    {{{kShearX, 0.9, 4}, {kAutoContrast, 0.8, -1}}},
    {{{kShearY, 0.9, 8}, {kInvert, 0.4, -1}}},
    {{{kShearY, 0.9, 5}, {kSolarize, 0.2, 6}}},
    {{{kInvert, 0.9, -1}, {kAutoContrast, 0.8, -1}}},
    {{{kEqualize, 0.6, -1}, {kRotate, 0.9, 3}}},
    {{{kShearX, 0.9, 4}, {kSolarize, 0.3, 3}}},
    {{{kShearY, 0.8, 8}, {kInvert, 0.7, -1}}},
    {{{kEqualize, 0.9, -1}, {kTranslateY, 0.6, 6}}},
    {{{kInvert, 0.9, -1}, {kEqualize, 0.6, -1}}},
    {{{kContrast, 0.3, 3}, {kRotate, 0.8, 4}}},
    {{{kInvert, 0.8, -1}, {kTranslateY, 0.0, 2}}},
    {{{kShearY, 0.7, 6}, {kSolarize, 0.4, 8}}},
    {{{kInvert, 0.6, -1}, {kRotate, 0.8, 4}}},
    {{{kShearY, 0.3, 7}, {kTranslateX, 0.9, 3}}},
    {{{kShearX, 0.1, 6}, {kInvert, 0.6, -1}}},
    {{{kSolarize, 0.7, 2}, {kTranslateY, 0.6, 7}}},
    {{{kShearY, 0.8, 4}, {kInvert, 0.8, -1}}},
    {{{kShearX, 0.7, 9}, {kTranslateY, 0.8, 3}}},
    {{{kShearY, 0.8, 5}, {kAutoContrast, 0.7, -1}}},
    {{{kShearX, 0.7, 2}, {kInvert, 0.1, -1}}},
}};

constexpr int kAutoAugmentBins = 10;

// AugMix's _AUGMENTATION_SPACE, in its key order; _PARTIAL_AUGMENTATION_SPACE is the first 9.
constexpr std::array<PolicyOp, 13> kAugMixOps = {
    kShearX,       kShearY,   kTranslateX, kTranslateY, kRotate,   kPosterize, kSolarize,
    kAutoContrast, kEqualize, kBrightness, kColor,      kContrast, kSharpness};
constexpr std::size_t kAugMixPartialOps = 9;
// The most chains a record holds (the pipeline allows 16).
constexpr std::size_t kMaxAugMixChains = 16;

// torch.linspace(lo, hi, n)[k] in float32, as torch computes it: from the start for the first
// half, from the end for the rest.
double linspace(double lo, double hi, int n, int k) {
  const float start = static_cast<float>(lo), end = static_cast<float>(hi);
  const float step = (end - start) / static_cast<float>(n - 1);
  const float v = k < n / 2 ? std::fma(step, static_cast<float>(k), start)
                            : std::fma(-step, static_cast<float>(n - 1 - k), end);
  return static_cast<double>(v);
}

// (top - (torch.arange(n) / ((n - 1) / divisor))).round().int()
double posterize_bits(int top, double divisor, int n, int k) {
  const float q = static_cast<float>(k) / static_cast<float>((n - 1) / divisor);
  return std::nearbyint(static_cast<float>(top) - q);
}

bool has_magnitude(PolicyOp op) {
  return op != kIdentity && op != kAutoContrast && op != kEqualize && op != kInvert;
}

bool is_signed(PolicyOp op) {
  return has_magnitude(op) && op != kPosterize && op != kSolarize;
}

// torchvision's _apply_image_or_video_transform: the primitive op for a drawn magnitude.
void append_primitive(PolicyOp op, double m, float fill, std::vector<AppliedOp>& out) {
  const auto f = [](double v) { return static_cast<float>(v); };
  switch (op) {
    case kIdentity:
      return;
    case kShearX:  // m is a float32 of the table, negated or not: exact
      out.push_back({ImageOp::kShear, {f(m), 0.f, fill}});
      return;
    case kShearY:
      out.push_back({ImageOp::kShear, {f(m), 1.f, fill}});
      return;
    case kTranslateX:  // int(magnitude): toward zero
      out.push_back({ImageOp::kAffine, {0.f, f(std::trunc(m)), 0.f, 1.f, 0.f, 0.f, fill}});
      return;
    case kTranslateY:
      out.push_back({ImageOp::kAffine, {0.f, 0.f, f(std::trunc(m)), 1.f, 0.f, 0.f, fill}});
      return;
    case kRotate:
      out.push_back({ImageOp::kRotate, {f(m), fill}});
      return;
    case kBrightness:
      out.push_back({ImageOp::kBrightness, {f(1.0 + m)}});
      return;
    // The blends take 1 - factor from the double 1 + m: -m, which the float factor cannot give
    // (ImageOp::kSharpness's args[1]).
    case kColor:
      out.push_back({ImageOp::kSaturation, {f(1.0 + m), f(-m)}});
      return;
    case kContrast:
      out.push_back({ImageOp::kContrast, {f(1.0 + m), f(-m)}});
      return;
    case kSharpness:
      out.push_back({ImageOp::kSharpness, {f(1.0 + m), f(-m)}});
      return;
    case kPosterize:
      out.push_back({ImageOp::kPosterize, {f(m)}});
      return;
    case kSolarize:
      // F.solarize(threshold = 255 * m) inverts v >= threshold, compared in float32 (the
      // threshold rounded: 255 * 0.6666667f = 170.000005 becomes 170); recorded as the smallest
      // level it inverts, which F.solarize takes to the same bytes.
      out.push_back({ImageOp::kSolarize, {std::ceil(f(255.0 * m))}});
      return;
    case kAutoContrast:
      out.push_back({ImageOp::kAutocontrast});
      return;
    case kEqualize:
      out.push_back({ImageOp::kEqualize});
      return;
    case kInvert:
      out.push_back({ImageOp::kInvert});
      return;
  }
}

void take(PolicyOp op, int bin, bool negative, const Step& s, int bins, int height, int width,
          std::vector<AppliedOp>& out, std::vector<PolicyDraw>* draws) {
  if (draws != nullptr) draws->push_back({op, bin, negative});
  append_policy_op(s, {op, bin, negative}, bins, height, width, out);
}

// One op of the wide table: its index, then (when it has magnitudes) its bin, then (when
// signed) its sign: `rand() <= 0.5` negates, as torchvision's `torch.rand(()) <= 0.5`.
void draw_wide(const Step& s, SampleRng& rng, int fixed_bin, int height, int width,
               std::vector<AppliedOp>& out, std::vector<PolicyDraw>* draws) {
  const PolicyOp op = kWideOps[rng.below(kWideOps.size())];
  int bin = -1;
  bool negative = false;
  if (has_magnitude(op)) {
    bin = fixed_bin >= 0 ? fixed_bin : static_cast<int>(rng.below(s.magnitude_bins));
    if (is_signed(op)) negative = rng.uniform() <= 0.5;
  }
  take(op, bin, negative, s, s.magnitude_bins, height, width, out, draws);
}

const std::array<Policy, 25>& policies(const Step& s) {
  switch (static_cast<AutoAugmentPolicy>(s.policy)) {
    case AutoAugmentPolicy::kCifar10:
      return kCifar10;
    case AutoAugmentPolicy::kSvhn:
      return kSvhn;
    case AutoAugmentPolicy::kImageNet:
      break;
  }
  return kImageNet;
}

}  // namespace

double policy_magnitude(StepKind kind, PolicyOp op, int bin, int bins, int height, int width) {
  const bool wide = kind == StepKind::kTrivialAugmentWide;
  const bool augmix = kind == StepKind::kAugMix;
  const double shear = wide ? 0.99 : 0.3;
  const double photo = wide ? 0.99 : 0.9;
  // AugMix translates by up to a third of the side, the others by 32 pixels or 150/331 of it.
  const auto translate = [&](int side) {
    return wide ? 32.0 : augmix ? side / 3.0 : 150.0 / 331.0 * side;
  };
  switch (op) {
    case kShearX:
    case kShearY:
      return linspace(0.0, shear, bins, bin);
    case kTranslateX:
      return linspace(0.0, translate(width), bins, bin);
    case kTranslateY:
      return linspace(0.0, translate(height), bins, bin);
    case kRotate:
      return linspace(0.0, wide ? 135.0 : 30.0, bins, bin);
    case kBrightness:
    case kColor:
    case kContrast:
    case kSharpness:
      return linspace(0.0, photo, bins, bin);
    case kPosterize:  // AugMix: (4 - arange / ((bins - 1) / 4)); the others from 8
      return posterize_bits(augmix ? 4 : 8, wide ? 6.0 : 4.0, bins, bin);
    case kSolarize:
      return linspace(1.0, 0.0, bins, bin);
    default:
      return 0.0;
  }
}

void append_policy_op(const Step& s, const PolicyDraw& draw, int bins, int height, int width,
                      std::vector<AppliedOp>& out) {
  double m = draw.bin >= 0 ? policy_magnitude(s.kind, draw.op, draw.bin, bins, height, width) : 0.0;
  if (draw.negative) m = -m;
  append_primitive(draw.op, m, s.fill, out);
}

std::span<const PolicyOp> augmix_ops(bool all_ops) {
  return {kAugMixOps.data(), all_ops ? kAugMixOps.size() : kAugMixPartialOps};
}

AppliedOp augmix_head(const Step& s, float m0) {
  return {ImageOp::kAugMix,
          {m0, static_cast<float>(s.mixture_width), static_cast<float>(s.interpolation), s.fill}};
}

AppliedOp augmix_chain(float weight, int ops) {
  return {ImageOp::kAugMixChain, {weight, static_cast<float>(ops)}};
}

// AugMix._forward's draws: m ~ Dirichlet([alpha, alpha]), the chains' weights
// Dirichlet([alpha] * width) * m[1] (float32, as torch multiplies them), then per chain its depth
// (chain_depth, or torch.randint(1, 4)) and per op: one of the space, a bin below severity
// (torch.randint(severity)) when it has magnitudes, a sign when signed (`rand() <= 0.5`).
void draw_augmix(const Step& s, SampleRng& rng, int height, int width, std::vector<AppliedOp>& out,
                 std::vector<PolicyDraw>* draws) {
  std::array<double, 2> m{};
  rng.dirichlet(s.alpha, m);
  std::array<double, kMaxAugMixChains> mix{};
  const std::span<double> weights(
      mix.data(),
      std::clamp<std::size_t>(static_cast<std::size_t>(s.mixture_width), 1, mix.size()));
  rng.dirichlet(s.alpha, weights);
  out.push_back(augmix_head(s, static_cast<float>(m[0])));
  const float m1 = static_cast<float>(m[1]);
  const std::span<const PolicyOp> space = augmix_ops(s.all_ops != 0);
  for (const double d : weights) {
    const int depth = s.chain_depth > 0 ? s.chain_depth : 1 + static_cast<int>(rng.below(3));
    const std::size_t head = out.size();
    out.push_back(augmix_chain(static_cast<float>(d) * m1, 0));
    for (int i = 0; i < depth; ++i) {
      const PolicyOp op = space[rng.below(space.size())];
      const int bin = has_magnitude(op) ? static_cast<int>(rng.below(s.severity)) : -1;
      const bool negative = is_signed(op) && rng.uniform() <= 0.5;
      take(op, bin, negative, s, kAugMixBins, height, width, out, draws);
    }
    out[head].args[1] = static_cast<float>(out.size() - head - 1);
  }
}

void draw_trivial_augment_wide(const Step& s, SampleRng& rng, int height, int width,
                               std::vector<AppliedOp>& out, std::vector<PolicyDraw>* draws) {
  draw_wide(s, rng, -1, height, width, out, draws);
}

void draw_rand_augment(const Step& s, SampleRng& rng, int height, int width,
                       std::vector<AppliedOp>& out, std::vector<PolicyDraw>* draws) {
  for (int i = 0; i < s.num_ops; ++i) draw_wide(s, rng, s.magnitude, height, width, out, draws);
}

void draw_auto_augment(const Step& s, SampleRng& rng, int height, int width,
                       std::vector<AppliedOp>& out, std::vector<PolicyDraw>* draws) {
  const auto& table = policies(s);
  const Policy& chosen = table[rng.below(table.size())];
  for (const SubPolicy& sub : chosen) {
    if (!(rng.uniform() <= sub.probability)) continue;
    const bool negative = is_signed(sub.op) && rng.uniform() <= 0.5;
    take(sub.op, has_magnitude(sub.op) ? sub.bin : -1, negative, s, kAutoAugmentBins, height, width,
         out, draws);
  }
}

}  // namespace stoke::detail
