// The augmentation policies' draws: torchvision's magnitude tables (the float32 values torch
// computes, taken from torch 2.15 itself), the frequencies of their ops, bins and signs over
// 100 k+ draws (chi-square against the classes' definitions, p > 0.01), and the primitive op
// each drawn op becomes.
#include "augment/policies.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numbers>
#include <vector>

namespace stoke::detail {
namespace {

Step step(const Pipeline& p) {
  return p.steps().back();
}

// The draws of torchvision's policy `s` for one sample, through the function its record names.
void draw_policy(const Step& s, SampleRng& rng, int height, int width, std::vector<AppliedOp>& out,
                 std::vector<PolicyDraw>* draws = nullptr) {
  if (s.kind == StepKind::kTrivialAugmentWide)
    draw_trivial_augment_wide(s, rng, height, width, out, draws);
  else if (s.kind == StepKind::kRandAugment)
    draw_rand_augment(s, rng, height, width, out, draws);
  else if (s.kind == StepKind::kAutoAugment)
    draw_auto_augment(s, rng, height, width, out, draws);
  else
    FAIL() << "not one of torchvision's policies: " << static_cast<int>(s.kind);
}

double chi_square(const std::vector<long>& counts, double expected_each) {
  double chi2 = 0;
  for (const long n : counts) chi2 += (n - expected_each) * (n - expected_each) / expected_each;
  return chi2;
}

TEST(Policies, MagnitudesAreTorchvisionsTablesToTheLastBit) {
  using enum PolicyOp;
  const auto ta = [](PolicyOp op, int k) {
    return policy_magnitude(StepKind::kTrivialAugmentWide, op, k, 31, 224, 224);
  };
  // torch.linspace(0.0, 0.99, 31), (0, 135, 31), (0, 32, 31), (1, 0, 31) at 1, 7, 15, 16, 29, 30
  const int ks[] = {1, 7, 15, 16, 29, 30};
  const double shear[] = {0.032999999821186066, 0.23100000619888306, 0.4950000047683716,
                          0.527999997138977,    0.9570000171661377,  0.9900000095367432};
  const double rotate[] = {4.5, 31.5, 67.5, 72.0, 130.5, 135.0};
  const double translate[] = {1.0666667222976685, 7.466667175292969,  15.999999046325684,
                              17.066665649414062, 30.933332443237305, 32.0};
  const double solarize[] = {0.9666666388511658,  0.7666666507720947,  0.5,
                             0.46666669845581055, 0.03333333507180214, 0.0};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(ta(kShearX, ks[i]), shear[i]) << ks[i];
    EXPECT_EQ(ta(kBrightness, ks[i]), shear[i]) << ks[i];
    EXPECT_EQ(ta(kRotate, ks[i]), rotate[i]) << ks[i];
    EXPECT_EQ(ta(kTranslateY, ks[i]), translate[i]) << ks[i];
    EXPECT_EQ(ta(kSolarize, ks[i]), solarize[i]) << ks[i];
  }
  // (8 - arange(31) / (30 / 6)).round().int() and RandAugment's (30 / 4), AutoAugment's (9 / 4)
  const int ta_bits[] = {8, 8, 8, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 5, 5, 5,
                         5, 5, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 2, 2, 2};
  const int ra_bits[] = {8, 8, 8, 8, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 6,
                         6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4};
  const int aa_bits[] = {8, 8, 7, 7, 6, 6, 5, 5, 4, 4};
  for (int k = 0; k < 31; ++k) {
    EXPECT_EQ(ta(kPosterize, k), ta_bits[k]) << k;
    EXPECT_EQ(policy_magnitude(StepKind::kRandAugment, kPosterize, k, 31, 1, 1), ra_bits[k]) << k;
  }
  for (int k = 0; k < 10; ++k)
    EXPECT_EQ(policy_magnitude(StepKind::kAutoAugment, kPosterize, k, 10, 1, 1), aa_bits[k]) << k;
  // RandAugment's translation is 150/331 of the side: linspace(0, 150 / 331 * 224, 31).
  EXPECT_EQ(policy_magnitude(StepKind::kRandAugment, kTranslateX, 1, 31, 100, 224),
            3.383685827255249);
  EXPECT_EQ(policy_magnitude(StepKind::kRandAugment, kTranslateX, 15, 31, 100, 224),
            50.755287170410156);
  EXPECT_EQ(policy_magnitude(StepKind::kRandAugment, kTranslateX, 30, 31, 100, 224),
            101.51057434082031);
  EXPECT_EQ(policy_magnitude(StepKind::kRandAugment, kShearX, 9, 31, 1, 1), 0.09000000357627869);
  // AutoAugment's 10 bins: linspace(0, 30, 10), linspace(0, 0.9, 10)
  EXPECT_EQ(policy_magnitude(StepKind::kAutoAugment, kRotate, 5, 10, 1, 1), 16.666667938232422);
  EXPECT_EQ(policy_magnitude(StepKind::kAutoAugment, kRotate, 7, 10, 1, 1), 23.33333396911621);
  EXPECT_EQ(policy_magnitude(StepKind::kAutoAugment, kColor, 8, 10, 1, 1), 0.7999999523162842);
  EXPECT_EQ(policy_magnitude(StepKind::kAutoAugment, kTranslateY, 9, 10, 176, 1),
            79.75830841064453);
}

struct Tally {
  std::vector<long> ops = std::vector<long>(15, 0);
  std::vector<long> bins = std::vector<long>(31, 0);
  long signed_draws = 0, negative = 0, total = 0;
};

Tally tally(const Step& s, int samples) {
  Tally t;
  std::vector<AppliedOp> out;
  std::vector<PolicyDraw> draws;
  for (int i = 0; i < samples; ++i) {
    SampleRng rng(9, kSampleStream, 0, i);
    out.clear();
    draws.clear();
    draw_policy(s, rng, 176, 176, out, &draws);
    for (const PolicyDraw& d : draws) {
      ++t.total;
      ++t.ops[static_cast<std::size_t>(d.op)];
      if (d.bin >= 0) ++t.bins[static_cast<std::size_t>(d.bin)];
      const bool is_signed =
          d.op != PolicyOp::kPosterize && d.op != PolicyOp::kSolarize && d.bin >= 0;
      if (is_signed) {
        ++t.signed_draws;
        t.negative += d.negative ? 1 : 0;
      } else {
        EXPECT_FALSE(d.negative);
      }
    }
  }
  return t;
}

// TrivialAugmentWide: one of 14 ops uniformly, a bin of 31 uniformly for the 11 with
// magnitudes, a fair sign for the 9 signed ones. (Chi-square at p = 0.01: 27.69 for 13 degrees
// of freedom, 50.89 for 30.)
TEST(Policies, TrivialAugmentWideDrawsItsTableUniformly) {
  Pipeline p(176, 176, 3);
  p.trivial_augment_wide();
  constexpr int kSamples = 140000;
  const Tally t = tally(step(p), kSamples);
  EXPECT_EQ(t.total, kSamples);
  std::vector<long> ops(t.ops.begin(), t.ops.begin() + 14);  // no Invert in its table
  EXPECT_EQ(t.ops[static_cast<std::size_t>(PolicyOp::kInvert)], 0);
  EXPECT_LT(chi_square(ops, kSamples / 14.0), 27.69);
  long with_bins = 0;
  for (const long n : t.bins) with_bins += n;
  EXPECT_EQ(with_bins, t.total - ops[0] - ops[12] - ops[13]);  // Identity, AutoContrast, Equalize
  EXPECT_LT(chi_square(t.bins, with_bins / 31.0), 50.89);
  EXPECT_NEAR(static_cast<double>(t.negative) / t.signed_draws, 0.5, 0.006);
}

// RandAugment(2, 9, 31): two independent ops, every one at bin 9.
TEST(Policies, RandAugmentDrawsNumOpsAtItsMagnitude) {
  Pipeline p(176, 176, 3);
  p.rand_augment(2, 9, 31);
  constexpr int kSamples = 70000;
  const Tally t = tally(step(p), kSamples);
  EXPECT_EQ(t.total, 2 * kSamples);
  std::vector<long> ops(t.ops.begin(), t.ops.begin() + 14);
  EXPECT_LT(chi_square(ops, 2.0 * kSamples / 14.0), 27.69);
  for (int b = 0; b < 31; ++b) {
    if (b != 9) {
      EXPECT_EQ(t.bins[static_cast<std::size_t>(b)], 0) << b;
    }
  }
  EXPECT_NEAR(static_cast<double>(t.negative) / t.signed_draws, 0.5, 0.006);
}

// AutoAugment(imagenet): a sub-policy of 25 uniformly, each of its two ops with its probability.
// The expected count of each op follows from the table: sum over sub-policies of p / 25.
TEST(Policies, AutoAugmentAppliesEachSubPolicyOpWithItsProbability) {
  Pipeline p(176, 176, 3);
  p.auto_augment(AutoAugmentPolicy::kImageNet);
  constexpr int kSamples = 100000;
  const Tally t = tally(step(p), kSamples);
  using enum PolicyOp;
  // Each op's probabilities summed over torchvision's imagenet sub-policies, / 25 (from
  // v2.AutoAugment(IMAGENET)._policies).
  const std::map<PolicyOp, double> expected = {{kAutoContrast, 1.2 / 25}, {kColor, 3.8 / 25},
                                               {kContrast, 2.0 / 25},     {kEqualize, 11.2 / 25},
                                               {kInvert, 1.8 / 25},       {kPosterize, 2.8 / 25},
                                               {kRotate, 3.6 / 25},       {kSharpness, 0.4 / 25},
                                               {kShearX, 0.6 / 25},       {kSolarize, 3.6 / 25}};
  double chi2 = 0;
  for (const auto& [op, share] : expected) {
    const double e = share * kSamples;
    const double n = static_cast<double>(t.ops[static_cast<std::size_t>(op)]);
    chi2 += (n - e) * (n - e) / e;
  }
  EXPECT_LT(chi2, 21.67);  // 9 degrees of freedom, p = 0.01
  EXPECT_EQ(t.ops[static_cast<std::size_t>(kTranslateX)], 0);
  EXPECT_NEAR(static_cast<double>(t.negative) / t.signed_draws, 0.5, 0.01);
}

// Each drawn op becomes the call torchvision makes: shears about the origin in degrees of
// atan(m), translations by int(m) pixels, 1 + m factors (with the blends' -m), the solarize
// threshold 255 m (in float32) as the smallest level it inverts, the fill in the warps.
TEST(Policies, EachDrawBecomesTorchvisionsPrimitive) {
  Pipeline p(176, 176, 3);
  p.trivial_augment_wide(31, 128.f);
  const Step s = step(p);
  std::map<PolicyOp, int> seen;
  for (int i = 0; i < 3000; ++i) {
    SampleRng rng(4, kSampleStream, 0, i);
    std::vector<AppliedOp> out;
    std::vector<PolicyDraw> draws;
    draw_policy(s, rng, 176, 176, out, &draws);
    ASSERT_EQ(draws.size(), 1u);
    const PolicyDraw& d = draws[0];
    ++seen[d.op];
    double m = d.bin >= 0
                   ? policy_magnitude(StepKind::kTrivialAugmentWide, d.op, d.bin, 31, 176, 176)
                   : 0.0;
    if (d.negative) m = -m;
    if (d.op == PolicyOp::kIdentity) {
      EXPECT_TRUE(out.empty());
      continue;
    }
    ASSERT_EQ(out.size(), 1u);
    const AppliedOp& op = out[0];
    switch (d.op) {
      case PolicyOp::kShearX:
        EXPECT_EQ(op.op, ImageOp::kShear);
        EXPECT_EQ(op.args[0], static_cast<float>(m));
        EXPECT_EQ(op.args[1], 0.f);
        EXPECT_EQ(op.args[2], 128.f);
        break;
      case PolicyOp::kShearY:
        EXPECT_EQ(op.op, ImageOp::kShear);
        EXPECT_EQ(op.args[1], 1.f);
        break;
      case PolicyOp::kTranslateY:
        EXPECT_EQ(op.op, ImageOp::kAffine);
        EXPECT_EQ(op.args[2], static_cast<float>(std::trunc(m)));
        EXPECT_EQ(op.args[1], 0.f);
        break;
      case PolicyOp::kRotate:
        EXPECT_EQ(op.op, ImageOp::kRotate);
        EXPECT_EQ(op.args[0], static_cast<float>(m));
        EXPECT_EQ(op.args[1], 128.f);
        break;
      case PolicyOp::kColor:
        EXPECT_EQ(op.op, ImageOp::kSaturation);
        EXPECT_EQ(op.args[0], static_cast<float>(1 + m));
        EXPECT_EQ(op.args[1], static_cast<float>(-m));  // 1.0 - (1 + m) in double
        break;
      case PolicyOp::kSolarize:
        EXPECT_EQ(op.op, ImageOp::kSolarize);
        EXPECT_EQ(op.args[0], std::ceil(static_cast<float>(255 * m)));  // compared in float32
        break;
      case PolicyOp::kPosterize:
        EXPECT_EQ(op.op, ImageOp::kPosterize);
        EXPECT_EQ(op.args[0], m);
        break;
      default:
        break;
    }
  }
  EXPECT_EQ(seen.size(), 14u);
}

}  // namespace
}  // namespace stoke::detail
