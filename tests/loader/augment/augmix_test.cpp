// AugMix: the mix against torchvision's AugMix handed the same draws (tests/data/augmix_golden.bin,
// written by tests/loader/make_augmix_golden.py; this test needs no torch), its magnitude table,
// the distribution of its draws over 100 k+ samples (op, depth, bin and sign frequencies, and the
// weights' marginals against Beta's CDF, chi-square p > 0.01), its record, its text and its
// errors, and the augmenter running it on the output.
#include "augment/augmix.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <numbers>
#include <string>
#include <vector>

#include "augment/augment.hpp"
#include "augment/op_sequence.hpp"
#include "augment/policies.hpp"
#include "golden_harness.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

using test::FieldReader;
using test::GoldenImage;

// The golden file.

struct MixChain {
  float weight = 0;  // the Dirichlet draw, before AugMix multiplies it by m1
  std::vector<PolicyDraw> ops;
};

struct MixCase {
  std::size_t image = 0;
  Interpolation interpolation = Interpolation::kBilinear;
  bool all_ops = true;
  int severity = 0;
  float alpha = 0, fill = 0, m0 = 0, m1 = 0;
  std::vector<MixChain> chains;
  std::string label;
  std::vector<std::uint8_t> expected;
};

bool read_case(FieldReader& in, const std::vector<GoldenImage>& images, MixCase& c) {
  c.image = in.u32();
  c.interpolation = in.u32() == 1 ? Interpolation::kBilinear : Interpolation::kNearest;
  c.all_ops = in.u32() == 1;
  c.severity = static_cast<int>(in.u32() & 0xff);
  c.alpha = in.f32();
  c.fill = in.f32();
  c.m0 = in.f32();
  c.m1 = in.f32();
  c.chains.resize(in.u32() & 0xff);
  const std::span<const PolicyOp> space = augmix_ops(true);
  for (MixChain& chain : c.chains) {
    chain.weight = in.f32();
    chain.ops.resize(in.u32() & 0xff);
    for (PolicyDraw& d : chain.ops) {
      d.op = space[in.u32() % space.size()];
      d.bin = static_cast<int>(in.u32());
      d.negative = in.u32() == 1;
    }
  }
  c.label = test::read_golden_label(in);
  return test::read_expected(in, images, c);
}

const test::ImageCases<MixCase>& golden() {
  static const auto g =
      test::load_image_cases<MixCase>("augmix_golden.bin", "STAM", "AugMix", read_case);
  return g;
}

Step step_of(const Pipeline& p) {
  return p.steps().back();
}

// The record draw_augmix would make for the case's draws: the head, then each chain's weight
// (its Dirichlet draw times m1 in float32, as draw_augmix and torchvision compute it) and ops.
std::vector<AppliedOp> record_of(const MixCase& c, int height, int width) {
  Pipeline p(height, width, 3);
  p.augmix(c.severity, static_cast<int>(c.chains.size()), -1, c.alpha, c.all_ops, c.interpolation,
           c.fill);
  const Step s = step_of(p);
  std::vector<AppliedOp> record = {augmix_head(s, c.m0)};
  for (const MixChain& chain : c.chains) {
    record.push_back(augmix_chain(chain.weight * c.m1, static_cast<int>(chain.ops.size())));
    for (const PolicyDraw& d : chain.ops)
      append_policy_op(s, d, kAugMixBins, height, width, record);
  }
  return record;
}

TEST(AugMix, MixesAsTorchvisionDoesGivenTheSameDraws) {
  ASSERT_TRUE(golden().error.empty()) << golden().error;
  PhotometricScratch scratch;  // shared by every case, as a worker shares it
  const test::ImageOpGolden<MixCase> mixes(
      golden(), "torchvision",
      [&scratch](const MixCase& c, const Pixels& px) {
        const std::vector<AppliedOp> record = record_of(c, px.height, px.width);
        EXPECT_EQ(augmix(record, px, scratch), record.size()) << c.label;
      },
      [](const MixCase& c) { return c.label; });
  const test::GoldenTally t = mixes.expect_matches(test::kEveryCase);
  EXPECT_GT(t.cases, 100);
  std::cout << t << "\n";
}

TEST(AugMix, GoldenFileCoversBothInterpolationsEveryFillEveryOpAndEverySeverity) {
  const test::ImageCases<MixCase>& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  bool nearest = false, bilinear = false, no_fill = false, fill_0 = false, fill_128 = false;
  bool partial = false, gray = false, rgb = false;
  std::vector<int> ops(16, 0), severities(11, 0), widths(5, 0);
  for (const MixCase& c : g.cases) {
    nearest |= c.interpolation == Interpolation::kNearest;
    bilinear |= c.interpolation == Interpolation::kBilinear;
    no_fill |= c.fill == kNoFill;
    fill_0 |= c.fill == 0.f;
    fill_128 |= c.fill == 128.f;
    partial |= !c.all_ops;
    gray |= g.images[c.image].channels == 1;
    rgb |= g.images[c.image].channels == 3;
    ++severities[static_cast<std::size_t>(c.severity)];
    ++widths[std::min<std::size_t>(c.chains.size(), 4)];
    for (const MixChain& chain : c.chains)
      for (const PolicyDraw& d : chain.ops) ++ops[static_cast<std::size_t>(d.op)];
  }
  EXPECT_TRUE(nearest && bilinear && no_fill && fill_0 && fill_128 && partial && gray && rgb);
  for (const PolicyOp op : augmix_ops(true))
    EXPECT_GT(ops[static_cast<std::size_t>(op)], 0) << static_cast<int>(op);
  for (int s = 1; s <= 10; ++s) EXPECT_GT(severities[static_cast<std::size_t>(s)], 0) << s;
  for (int w = 1; w <= 4; ++w) EXPECT_GT(widths[static_cast<std::size_t>(w)], 0) << w;
}

// The mix is float32 and truncated: equal bytes everywhere, mixed with weights whose float32 sum
// falls short of 1, come out one lower (torchvision's bytes in the golden file show it too).
TEST(AugMix, TruncatesTheFloatMix) {
  std::vector<std::uint8_t> bytes(4 * 4 * 3, 77);
  PhotometricScratch scratch;
  // 77 * 0.1f + 77 * 0.9f is 76.99999 in float32, truncated to 76.
  const std::vector<AppliedOp> record = {{ImageOp::kAugMix, {0.1f, 1, 1, kNoFill}},
                                         {ImageOp::kAugMixChain, {0.9f, 0}}};
  augmix(record, Pixels{bytes.data(), 4, 4, 3, 12}, scratch);
  EXPECT_EQ(bytes, std::vector<std::uint8_t>(bytes.size(), 76));
}

// A record says how many ops it spans, and apply_ops runs the ops before and after it.
TEST(AugMix, ApplyPixelOpsRunsARecordAsOneMixBetweenOtherOps) {
  std::vector<std::uint8_t> bytes = {10, 20, 30, 40};
  PhotometricScratch scratch;
  const std::vector<AppliedOp> ops = {{ImageOp::kInvert},  // 245 235 225 215
                                      {ImageOp::kAugMix, {0.5f, 2, 1, kNoFill}},
                                      {ImageOp::kAugMixChain, {0.25f, 1}},
                                      {ImageOp::kInvert},  // chain 1: 10 20 30 40
                                      {ImageOp::kAugMixChain, {0.25f, 0}},
                                      {ImageOp::kPosterize, {4}}};  // after the mix
  apply_ops(ops, Pixels{bytes.data(), 1, 4, 1, 4}, scratch);
  // 0.5 v + 0.25 (255 - v) + 0.25 v = 0.5 v + 63.75 for v = 245, 235, 225, 215: 186.25, 181.25,
  // 176.25, 171.25; truncated, then their 4 high bits.
  EXPECT_EQ(bytes, (std::vector<std::uint8_t>{176, 176, 176, 160}));
}

// The magnitudes are torchvision's AugMix table (_AUGMENTATION_SPACE at 10 bins).
TEST(AugMix, MagnitudesAreTorchvisionsTable) {
  using enum PolicyOp;
  const auto m = [](PolicyOp op, int k, int height, int width) {
    return policy_magnitude(StepKind::kAugMix, op, k, kAugMixBins, height, width);
  };
  // torch.linspace(0, 0.3, 10), (0, 30, 10), (0, 0.9, 10), (0, 224 / 3, 10), (1, 0, 10)
  EXPECT_EQ(m(kShearX, 1, 1, 1), 0.03333333507180214);
  EXPECT_EQ(m(kShearY, 9, 1, 1), 0.30000001192092896);
  EXPECT_EQ(m(kRotate, 2, 1, 1), 6.666666507720947);
  EXPECT_EQ(m(kBrightness, 5, 1, 1), 0.5);
  EXPECT_EQ(m(kSharpness, 7, 1, 1), 0.699999988079071);
  EXPECT_EQ(m(kTranslateX, 2, 100, 224), 16.592592239379883);
  EXPECT_EQ(m(kTranslateY, 9, 100, 224), 33.33333206176758);
  EXPECT_EQ(m(kSolarize, 3, 1, 1), 0.6666666865348816);
  // (4 - arange(10) / (9 / 4)).round().int()
  const int bits[] = {4, 4, 3, 3, 2, 2, 1, 1, 0, 0};
  for (int k = 0; k < 10; ++k) EXPECT_EQ(m(kPosterize, k, 1, 1), bits[k]) << k;
  ASSERT_EQ(augmix_ops(true).size(), 13u);
  ASSERT_EQ(augmix_ops(false).size(), 9u);
  EXPECT_EQ(augmix_ops(true)[0], kShearX);
  EXPECT_EQ(augmix_ops(true)[8], kEqualize);
  EXPECT_EQ(augmix_ops(true)[12], kSharpness);
}

// The draws.

double chi_square(const std::vector<long>& counts, const std::vector<double>& expected) {
  double chi2 = 0;
  for (std::size_t i = 0; i < counts.size(); ++i)
    chi2 += (counts[i] - expected[i]) * (counts[i] - expected[i]) / expected[i];
  return chi2;
}

double chi_square_uniform(const std::vector<long>& counts) {
  long total = 0;
  for (const long n : counts) total += n;
  return chi_square(counts,
                    std::vector<double>(counts.size(), static_cast<double>(total) / counts.size()));
}

// Beta(a, b)'s CDF: for whole a and b the binomial sum; for a = b = 1/2 the arcsine law.
double beta_cdf(double a, double b, double x) {
  if (a == 0.5 && b == 0.5) return 2.0 / std::numbers::pi * std::asin(std::sqrt(x));
  const int n = static_cast<int>(a + b) - 1;
  double cdf = 0, choose = 1;  // C(n, j), from j = 0
  for (int j = 0; j <= n; ++j) {
    if (j >= static_cast<int>(a)) cdf += choose * std::pow(x, j) * std::pow(1 - x, n - j);
    choose = choose * (n - j) / (j + 1);
  }
  return cdf;
}

// The counts of `values` in 20 equal bins of [0, 1], against the counts Beta(a, b) expects.
double beta_chi_square(const std::vector<double>& values, double a, double b) {
  constexpr int kBins = 20;
  std::vector<long> counts(kBins, 0);
  for (const double v : values)
    ++counts[std::min(static_cast<std::size_t>(v * kBins), kBins - 1ul)];
  std::vector<double> expected(kBins);
  for (int i = 0; i < kBins; ++i)
    expected[static_cast<std::size_t>(i)] =
        values.size() * (beta_cdf(a, b, (i + 1.0) / kBins) - beta_cdf(a, b, i / 1.0 / kBins));
  return chi_square(counts, expected);
}

struct AugMixTally {
  std::vector<long> ops = std::vector<long>(15, 0);
  std::vector<long> depths = std::vector<long>(4, 0);
  std::vector<long> bins = std::vector<long>(10, 0);
  long signed_draws = 0, negative = 0, samples = 0;
  std::vector<double> m0, first_share;  // m[0]; the first chain's share of the chains' weight
  double worst_sum_error = 0;           // |m0 + sum of the weights - 1|
};

AugMixTally tally(const Pipeline& p, int samples) {
  const Step s = step_of(p);
  AugMixTally t;
  std::vector<AppliedOp> out;
  std::vector<PolicyDraw> draws;
  for (int i = 0; i < samples; ++i) {
    SampleRng rng(17, kSampleStream, 0, i);
    out.clear();
    draws.clear();
    draw_augmix(s, rng, 64, 64, out, &draws);
    ++t.samples;
    EXPECT_EQ(out[0].op, ImageOp::kAugMix);
    EXPECT_EQ(out[0].args[1], static_cast<float>(s.mixture_width));
    double weights = 0, first = -1;
    for (std::size_t j = 1; j < out.size(); j += 1 + static_cast<std::size_t>(out[j].args[1])) {
      EXPECT_EQ(out[j].op, ImageOp::kAugMixChain);
      ++t.depths[std::min<std::size_t>(static_cast<std::size_t>(out[j].args[1]), 3)];
      weights += out[j].args[0];
      if (first < 0) first = out[j].args[0];
    }
    t.m0.push_back(out[0].args[0]);
    t.first_share.push_back(first / weights);
    t.worst_sum_error = std::max(t.worst_sum_error, std::abs(out[0].args[0] + weights - 1.0));
    for (const PolicyDraw& d : draws) {
      ++t.ops[static_cast<std::size_t>(d.op)];
      if (d.bin >= 0) ++t.bins[static_cast<std::size_t>(d.bin)];
      const bool is_signed =
          d.bin >= 0 && d.op != PolicyOp::kPosterize && d.op != PolicyOp::kSolarize;
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

std::vector<long> ops_of(const AugMixTally& t, bool all_ops) {
  std::vector<long> counts;
  for (const PolicyOp op : augmix_ops(all_ops))
    counts.push_back(t.ops[static_cast<std::size_t>(op)]);
  return counts;
}

// AugMix's defaults: ops uniform over its 13 (chi-square at p = 0.01: 26.22 for 12 degrees of
// freedom), depths 1 to 3 uniform (9.21 for 2), bins below severity 3 uniform (9.21), fair signs;
// m0 ~ Beta(1, 1) and the first chain's share ~ Beta(1, 2), Dirichlet([1, 1, 1])'s marginal
// (36.19 for 19 degrees of freedom).
TEST(AugMix, DrawsTorchvisionsDistributionsWithItsDefaults) {
  Pipeline p(64, 64, 3);
  p.augmix();
  constexpr int kSamples = 100000;
  const AugMixTally t = tally(p, kSamples);
  EXPECT_EQ(t.ops[static_cast<std::size_t>(PolicyOp::kIdentity)], 0);
  EXPECT_EQ(t.ops[static_cast<std::size_t>(PolicyOp::kInvert)], 0);
  EXPECT_LT(chi_square_uniform(ops_of(t, true)), 26.22);
  EXPECT_EQ(t.depths[0], 0);
  EXPECT_EQ(t.depths[1] + t.depths[2] + t.depths[3], 3L * kSamples);
  EXPECT_LT(chi_square_uniform({t.depths[1], t.depths[2], t.depths[3]}), 9.21);
  EXPECT_EQ(t.bins[3] + t.bins[9], 0);
  EXPECT_LT(chi_square_uniform({t.bins[0], t.bins[1], t.bins[2]}), 9.21);
  EXPECT_NEAR(static_cast<double>(t.negative) / t.signed_draws, 0.5, 0.005);
  EXPECT_LT(beta_chi_square(t.m0, 1, 1), 36.19);
  EXPECT_LT(beta_chi_square(t.first_share, 1, 2), 36.19);
  EXPECT_LT(t.worst_sum_error, 1e-6);
}

// alpha below 1 (the Gamma draws' boosted branch), a fixed depth, the partial op space and
// every bin: ops uniform over 9 (20.09 for 8), bins over 10 (21.67 for 9); m0 and the first of
// two chains' shares ~ Beta(1/2, 1/2).
TEST(AugMix, DrawsSmallAlphasFixedDepthsAndThePartialSpace) {
  Pipeline p(64, 64, 3);
  p.augmix(10, 2, 2, 0.5f, false);
  constexpr int kSamples = 100000;
  const AugMixTally t = tally(p, kSamples);
  EXPECT_EQ(t.depths[2], 2L * kSamples);
  const std::vector<long> ops = ops_of(t, false);
  long partial = 0;
  for (const long n : ops) partial += n;
  EXPECT_EQ(partial, 4L * kSamples);  // none of brightness, color, contrast, sharpness
  EXPECT_LT(chi_square_uniform(ops), 20.09);
  EXPECT_LT(chi_square_uniform(t.bins), 21.67);
  EXPECT_LT(beta_chi_square(t.m0, 0.5, 0.5), 36.19);
  EXPECT_LT(beta_chi_square(t.first_share, 0.5, 0.5), 36.19);
  EXPECT_LT(t.worst_sum_error, 1e-6);
}

// alpha 2 with 3 chains: m0 ~ Beta(2, 2), the first share ~ Beta(2, 4).
TEST(AugMix, DrawsLargeAlphas) {
  Pipeline p(64, 64, 3);
  p.augmix(3, 3, 1, 2.f);
  const AugMixTally t = tally(p, 100000);
  EXPECT_LT(beta_chi_square(t.m0, 2, 2), 36.19);
  EXPECT_LT(beta_chi_square(t.first_share, 2, 4), 36.19);
}

// The record: the head's width, interpolation and fill, each chain's count, the primitives with
// the step's fill, and no more ops than max_applied_ops() allows.
TEST(AugMix, RecordsItsSettingsChainsAndPrimitives) {
  Pipeline p(64, 64, 3);
  p.augmix(3, 4, -1, 1.f, true, Interpolation::kNearest, 128.f);
  EXPECT_EQ(p.max_applied_ops(), 1 + 4 * (1 + 3));
  const Step s = step_of(p);
  std::size_t longest = 0;
  for (int i = 0; i < 2000; ++i) {
    SampleRng rng(5, kSampleStream, 0, i);
    std::vector<AppliedOp> out;
    draw_augmix(s, rng, 64, 64, out);
    longest = std::max(longest, out.size());
    ASSERT_LE(out.size(), static_cast<std::size_t>(p.max_applied_ops()));
    EXPECT_EQ(out[0].args[2], 0.f);    // nearest
    EXPECT_EQ(out[0].args[3], 128.f);  // fill
    for (const AppliedOp& op : out) {
      const float fill = op.op == ImageOp::kRotate   ? op.args[1]
                         : op.op == ImageOp::kShear  ? op.args[2]
                         : op.op == ImageOp::kAffine ? op.args[6]
                                                     : 128.f;
      EXPECT_EQ(fill, 128.f) << image_op_name(op.op);
    }
  }
  EXPECT_EQ(longest, static_cast<std::size_t>(p.max_applied_ops()));
  Pipeline q(64, 64, 3);
  q.augmix();
  EXPECT_EQ(q.max_applied_ops(), 13);
  q.augmix(3, 2, 5);
  EXPECT_EQ(q.max_applied_ops(), 13 + 1 + 2 * 6);
}

// The text.

std::string error_of(const std::string& text) {
  try {
    make_pipeline(64, 64, 3, parse_steps(text)).validate(0, 0);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(AugMix, TextBuildsWhatTheMethodBuilds) {
  const Pipeline p = make_pipeline(
      64, 64, 3,
      parse_steps("resize 64 64 | augmix | augmix severity=5 width=2 depth=3 alpha=0.5 all_ops=0 "
                  "interpolation=nearest fill=128 | augmix interpolation=bilinear depth=1"));
  Pipeline q(64, 64, 3);
  q.resize(64, 64).augmix().augmix(5, 2, 3, 0.5f, false, Interpolation::kNearest, 128.f);
  q.augmix(3, 3, 1);
  EXPECT_EQ(p.describe(), q.describe());
  EXPECT_NE(p.describe().find("augmix severity 3 width 3 depth -1 alpha 1 all_ops 1 bilinear\n"
                              "augmix severity 5 width 2 depth 3 alpha 0.5 all_ops 0 nearest "
                              "fill 128\n"),
            std::string::npos)
      << p.describe();
  const Step& s = p.steps()[1];
  EXPECT_EQ(s.kind, StepKind::kAugMix);
  EXPECT_EQ(s.fill, kNoFill);
  EXPECT_EQ(s.interpolation, Interpolation::kBilinear);
  EXPECT_TRUE(s.all_ops);
  EXPECT_EQ(static_cast<int>(StepKind::kAugMix), 24);
  EXPECT_EQ(static_cast<int>(ImageOp::kAugMix), 50);  // the numbers are a public record
  EXPECT_EQ(static_cast<int>(ImageOp::kAugMixChain), 51);
  EXPECT_EQ(image_op_name(ImageOp::kAugMix), "augmix");
  EXPECT_EQ(image_op_name(ImageOp::kAugMixChain), "augmix_chain");
}

TEST(AugMix, BadSettingsAreNamed) {
  const std::string settings =
      "(augmix [severity=S] [width=W] [depth=D] [alpha=A] [all_ops=0|1] "
      "[interpolation=nearest|bilinear] [fill=V])";
  EXPECT_EQ(error_of("augmix severity=0"), "augmix: severity must be in 1..10, got 0");
  EXPECT_EQ(error_of("augmix severity=11"), "augmix: severity must be in 1..10, got 11");
  EXPECT_EQ(error_of("augmix width=0"), "augmix: width (chains) must be in 1..16, got 0");
  EXPECT_EQ(error_of("augmix depth=0"),
            "augmix: depth must be -1 (1 to 3 ops drawn per chain) or in 1..16, got 0");
  EXPECT_EQ(error_of("augmix alpha=0"), "augmix: alpha must be in (0, 100], got 0");
  EXPECT_EQ(error_of("augmix fill=300"), "augmix: fill must be a level in [0, 255], got 300");
  EXPECT_EQ(error_of("augmix fill=-1"),
            "pipeline step augmix: fill must be a level in [0, 255], got -1");
  EXPECT_EQ(error_of("augmix all_ops=2"), "pipeline step augmix: all_ops must be 0 or 1, got 2");
  EXPECT_EQ(error_of("augmix severity=2.5"),
            "pipeline step augmix: severity must be a whole number, got 2.5");
  EXPECT_EQ(error_of("augmix severity=x"),
            "pipeline step augmix: 'severity=x': 'x' is not a number");
  EXPECT_EQ(error_of("augmix interpolation=bicubic"),
            "pipeline step augmix: interpolation must be nearest or bilinear, got 'bicubic'");
  EXPECT_EQ(error_of("augmix interpolation=nearest interpolation=bilinear"),
            "pipeline step augmix: interpolation is given twice");
  EXPECT_EQ(error_of("augmix width=2 width=3"), "pipeline step augmix: width is given twice");
  EXPECT_EQ(error_of("augmix severity"),
            "pipeline step augmix: 'severity' is not one of its settings " + settings);
  EXPECT_EQ(error_of("augmix bicubic=1"),
            "pipeline step augmix: 'bicubic=1' is not one of its settings " + settings);
  EXPECT_EQ(error_of("augmix 3 3"), "pipeline step augmix takes its settings as key=value words " +
                                        settings + ", got 2 number(s)");
  // A word where another step wants a number is still that: not a number.
  EXPECT_EQ(error_of("resize 64 x"), "pipeline step resize: 'x' is not a number");
  EXPECT_EQ(error_of("horizontal_flip bilinear"),
            "pipeline step horizontal_flip: 'bilinear' is not a number");
  // Like the other policies, after every crop, resize and flip.
  EXPECT_EQ(error_of("augmix | resize 64 64"),
            "pipeline: augmix must come after every crop, resize and flip (where torchvision's "
            "recipes put it), but resize follows it");
  EXPECT_EQ(error_of("resize 64 64 | augmix | color_jitter 0.4"), "no error");
}

// Through the augmenter: after the last resize AugMix runs on the written output, and the
// output is the mix of its record's chains (applied_ops() replays to the same bytes).
TEST(AugMix, TheAugmenterMixesTheOutputAsItsRecordSays) {
  constexpr int kH = 24, kW = 20;
  std::vector<std::uint8_t> src(40 * 32 * 3);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 37 + i / 7);
  Pipeline plain(kH, kW, 3), mixed(kH, kW, 3);
  plain.resize(kH, kW);
  mixed.resize(kH, kW).augmix();
  const std::vector<Step> a = plain.steps(), b = mixed.steps();
  Augmenter augmenter;
  PhotometricScratch scratch;
  int changed = 0;
  for (int position = 0; position < 20; ++position) {
    std::vector<std::uint8_t> base(kH * kW * 3), out(kH * kW * 3);
    SampleRng r1(3, kSampleStream, 0, position), r2(3, kSampleStream, 0, position);
    const ImageRef image{src.data(), 40, 32, 3, 32 * 3, false};
    augmenter.run(a.data(), 1, image, r1, base.data(), kH, kW, 3);
    augmenter.run(b.data(), 2, image, r2, out.data(), kH, kW, 3);
    const std::vector<AppliedOp> ops(augmenter.applied_ops().begin(),
                                     augmenter.applied_ops().end());
    ASSERT_FALSE(ops.empty());
    EXPECT_EQ(ops[0].op, ImageOp::kAugMix);
    const std::vector<std::uint8_t> unmixed = base;
    apply_ops(ops, Pixels{base.data(), kH, kW, 3, kW * 3}, scratch);
    EXPECT_EQ(base, out) << "position " << position;
    changed += out != unmixed ? 1 : 0;
  }
  EXPECT_EQ(changed, 20);
}

}  // namespace
}  // namespace stoke::detail
