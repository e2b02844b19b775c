// timm's RandAugment and AugMix steps: their config strings as timm reads them (and the ones
// stoke refuses, with the section named), the text and builder forms, the width of
// applied_ops(), each draw becoming the Pillow call timm makes, and the draws' distribution
// against timm's own classes: tests/data/timm_draws.txt counts what they drew over 200,000 calls
// per config (tests/loader/make_timm_draws.py), and stoke's draws over 200,000 samples must pass
// a two-sample chi-square at p > 0.01.
#include "augment/timm_augment.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "golden_file.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

Step step_of(const std::string& config,
             TimmInterpolation interpolation = TimmInterpolation::kRandom) {
  Pipeline p(32, 32, 3);
  p.timm_augment(config, interpolation);
  return p.steps().back();
}

std::string error_of(const std::string& text, int channels = 3) {
  try {
    make_pipeline(32, 32, channels, parse_steps(text));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TimmAugment, ReadsTimmsConfigStrings) {
  Pipeline p(224, 224, 3);
  p.timm_augment("rand-m9-mstd0.5-inc1", TimmInterpolation::kBicubic);
  const Step& deit = p.steps().back();
  EXPECT_EQ(deit.kind, StepKind::kTimmRandAugment);
  EXPECT_EQ(deit.timm.magnitude, 9);
  EXPECT_EQ(deit.timm.num_ops, 2);
  EXPECT_EQ(deit.timm.probability, 0.5f);
  EXPECT_EQ(deit.timm.magnitude_std, 0.5f);
  EXPECT_EQ(deit.timm.magnitude_max, 0);
  EXPECT_TRUE(deit.timm.increasing);
  EXPECT_EQ(deit.timm.interpolation, TimmInterpolation::kBicubic);
  EXPECT_EQ(deit.timm.fill, (std::array<std::uint8_t, 3>{124, 116, 104}));
  EXPECT_EQ(deit.timm.translate_pct, 0.45f);

  p.timm_augment("rand-n3-m15-p0.8-mstd101-mmax12");
  const Step& r = p.steps().back();
  EXPECT_EQ(r.timm.num_ops, 3);
  EXPECT_EQ(r.timm.magnitude, 15);
  EXPECT_EQ(r.timm.probability, 0.8f);
  EXPECT_TRUE(std::isinf(r.timm.magnitude_std));  // above 100: uniform in [0, m]
  EXPECT_EQ(r.timm.magnitude_max, 12);
  EXPECT_FALSE(r.timm.increasing);

  p.timm_augment("augmix-m5-w3");
  const Step& a = p.steps().back();
  EXPECT_EQ(a.kind, StepKind::kTimmAugMix);
  EXPECT_EQ(a.timm.magnitude, 5);
  EXPECT_EQ(a.timm.width, 3);
  EXPECT_EQ(a.timm.depth, -1);
  EXPECT_EQ(a.timm.alpha, 1.f);
  EXPECT_FALSE(a.timm.blended);
  EXPECT_EQ(a.timm.probability, 1.f);
  EXPECT_TRUE(std::isinf(a.timm.magnitude_std));  // AugMix's default
  EXPECT_EQ(a.timm.translate_pct, 0.3f);          // create_transform's for augmix

  p.timm_augment("augmix", TimmInterpolation::kBilinear, {0, 0, 0}, 0.1f);
  const Step& d = p.steps().back();
  EXPECT_EQ(d.timm.magnitude, 3);
  EXPECT_EQ(d.timm.translate_pct, 0.1f);
  EXPECT_EQ(d.timm.fill, (std::array<std::uint8_t, 3>{0, 0, 0}));
  p.timm_augment("augmix-m2-w4-d0-a0.5-b1-mstd0.25");
  const Step& e = p.steps().back();
  EXPECT_EQ(e.timm.depth, -1);  // d0: drawn per chain, as timm's `depth > 0` test gives
  EXPECT_EQ(e.timm.alpha, 0.5f);
  EXPECT_TRUE(e.timm.blended);
  EXPECT_EQ(e.timm.magnitude_std, 0.25f);  // augmix keeps mstd as given
}

TEST(TimmAugment, RefusesWhatTimmWouldNotTakeNamingTheSection) {
  const auto error = [](const std::string& config) {
    try {
      Pipeline(32, 32, 3).timm_augment(config);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("rand-m9-x3"),
            "timm_augment 'rand-m9-x3': section 'x3': unknown key 'x'; timm's rand takes m, n, p, "
            "mstd, mmax and inc");
  EXPECT_EQ(error("augmix-m5-n2"),
            "timm_augment 'augmix-m5-n2': section 'n2': unknown key 'n'; timm's augmix takes m, "
            "w, d, a, b and mstd");
  EXPECT_EQ(error("rand-m9.5"),
            "timm_augment 'rand-m9.5': section 'm9.5': m takes a whole number (timm reads it with "
            "int()), got '9.5'");
  EXPECT_EQ(error("rand-m9-inc"),
            "timm_augment 'rand-m9-inc': section 'inc' has no number (timm would ignore it)");
  EXPECT_EQ(error("rand-m9-m10"), "timm_augment 'rand-m9-m10': section 'm10': m is given twice");
  EXPECT_EQ(error("rand-m9-tweights"),
            "timm_augment 'rand-m9-tweights': section 'tweights': timm's other transform sets (the "
            "'t' key) are not supported");
  EXPECT_EQ(error("original-mstd0.5"),
            "timm_augment 'original-mstd0.5': the first section must be 'rand' (RandAugment) or "
            "'augmix' (AugMix), got 'original'; timm's AutoAugment policies (original, v0, ...) "
            "are not supported");
  EXPECT_EQ(error("rand--m9"),
            "timm_augment 'rand--m9': an empty section (two '-' in a row, or one at an end)");
  EXPECT_EQ(error("rand-p1.5"),
            "timm_augment 'rand-p1.5': section 'p1.5': p must be a probability in [0, 1], got 1.5");
  EXPECT_EQ(error("rand-mstd0.5x"),
            "timm_augment 'rand-mstd0.5x': section 'mstd0.5x': mstd takes a number (timm reads it "
            "with float()), got '0.5x'");
  EXPECT_EQ(error("augmix-w0"),
            "timm_augment 'augmix-w0': section 'w0': w must be in 1..16, got 0");
  EXPECT_EQ(error("rand-n17"),
            "timm_augment 'rand-n17': section 'n17': n must be in 0..16, got 17");
  EXPECT_EQ(error("augmix-a0"),
            "timm_augment 'augmix-a0': section 'a0': a must be in (0, 1000], got 0");
  EXPECT_EQ(error("rand-m101"),
            "timm_augment 'rand-m101': section 'm101': m must be in 0..100, got 101");
}

TEST(TimmAugment, TextStepsBuildWhatTheBuilderBuilds) {
  Pipeline q(32, 32, 3);
  q.timm_augment("rand-m9-mstd0.5-inc1", TimmInterpolation::kBicubic)
      .timm_augment("augmix-m5-w3", TimmInterpolation::kRandom, {128, 128, 128}, 0.25f);
  const Pipeline p = make_pipeline(
      32, 32, 3,
      parse_steps("timm_augment rand-m9-mstd0.5-inc1 interpolation=bicubic | timm_augment "
                  "augmix-m5-w3 fill=128 translate_pct=0.25"));
  EXPECT_EQ(p.describe(), q.describe());
  EXPECT_EQ(p.describe(),
            "timm_augment rand-m9-n2-p0.5-mstd0.5-mmax0-inc1 interpolation bicubic fill "
            "124,116,104 translate_pct 0.45\n"
            "timm_augment augmix-m5-w3-d0-a1-b0 interpolation random fill 128,128,128 "
            "translate_pct 0.25\noutput 32x32x3 uint8");
  EXPECT_EQ(make_pipeline(32, 32, 3, parse_steps("timm_augment augmix-m5-w3 fill=1,2,3"))
                .steps()
                .back()
                .timm.fill,
            (std::array<std::uint8_t, 3>{1, 2, 3}));
  EXPECT_EQ(error_of("timm_augment"),
            "pipeline step timm_augment takes timm's config string, e.g. 'rand-m9-mstd0.5-inc1' "
            "or 'augmix-m5-w3'");
  EXPECT_EQ(error_of("timm_augment rand-m9 3"),
            "pipeline step timm_augment takes its config string and key=value words, not "
            "numbers, got 1 number(s)");
  EXPECT_EQ(error_of("timm_augment rand-m9 interpolation=nearest"),
            "pipeline step timm_augment: interpolation must be random, bilinear or bicubic, got "
            "'nearest'");
  EXPECT_EQ(error_of("timm_augment rand-m9 fill=1,2"),
            "pipeline step timm_augment: fill takes one level or three (R,G,B), got '1,2'");
  EXPECT_EQ(error_of("timm_augment rand-m9 fill=1,2,256"),
            "pipeline step timm_augment: fill levels must be whole numbers in 0..255, got "
            "'1,2,256'");
  EXPECT_EQ(error_of("timm_augment rand-m9 mean=0.5"),
            "pipeline step timm_augment: 'mean=0.5' is not interpolation=..., fill=... or "
            "translate_pct=...");
  EXPECT_EQ(error_of("timm_augment rand-m9"), "no error");
  EXPECT_EQ(error_of("timm_augment rand-m9", 1),
            "timm_augment: timm's ops take RGB images (timm converts every image to RGB), but "
            "the output has 1 channel");
}

// A policy: after every crop, resize and flip; photometric steps may follow.
TEST(TimmAugment, ComesAfterEveryCropResizeAndFlip) {
  const auto validation = [](const std::string& text) {
    try {
      make_pipeline(32, 32, 3, parse_steps(text)).validate(32, 32);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(validation("timm_augment rand-m9 | horizontal_flip"),
            "pipeline: timm_augment must come after every crop, resize and flip (where "
            "torchvision's recipes put it), but horizontal_flip follows it");
  EXPECT_EQ(validation("center_crop 32 32 | horizontal_flip | timm_augment augmix-m5 | "
                       "color_jitter 0.4 | timm_augment rand-m9"),
            "no error");
}

TEST(TimmAugment, MaxAppliedOpsCoversEveryDraw) {
  Pipeline p(32, 32, 3);
  p.timm_augment("rand-m9-n3");
  EXPECT_EQ(p.max_applied_ops(), 3);
  p.timm_augment("augmix-m5-w3");  // 3 chains of a mark and up to 3 ops, then the blend
  EXPECT_EQ(p.max_applied_ops(), 3 + 13);
  Pipeline q(32, 32, 3);
  q.timm_augment("augmix-w4-d2-b1");  // no blend in blended mode
  EXPECT_EQ(q.max_applied_ops(), 12);
  // Every draw fits: 20,000 samples of each, the longest seen equal to the bound for AugMix.
  for (const char* config : {"rand-m9-n3", "augmix-m5-w3", "augmix-w4-d2-b1"}) {
    Pipeline one(32, 32, 3);
    one.timm_augment(config);
    const Step s = one.steps().back();
    std::size_t longest = 0;
    for (int i = 0; i < 20000; ++i) {
      SampleRng rng(3, kSampleStream, 0, i);
      std::vector<AppliedOp> out;
      draw_timm(s, rng, out);
      longest = std::max(longest, out.size());
    }
    EXPECT_LE(longest, static_cast<std::size_t>(one.max_applied_ops())) << config;
    if (std::string(config).starts_with("augmix")) {
      EXPECT_EQ(longest, static_cast<std::size_t>(one.max_applied_ops())) << config;
    }
  }
}

// AugMixAugment._calc_blended_weights, as timm computes it in numpy's float32 (printed by Python
// with repr for these inputs).
TEST(TimmAugment, BlendedWeightsAreTimmsFloat32) {
  std::vector<float> w = {0.2f, 0.5f, 0.3f};
  blended_weights(w, 0.7f);
  EXPECT_EQ(w,
            (std::vector<float>{0.3181818425655365f, 0.4430379867553711f, 0.21000000834465027f}));
  std::vector<float> v = {0.43494418263435364f, 0.16424037516117096f, 0.2849070727825165f,
                          0.11590836197137833f};
  blended_weights(v, 0.3140999972820282f);
  EXPECT_EQ(v, (std::vector<float>{0.16609519720077515f, 0.05901804193854332f, 0.09287042915821075f,
                                   0.03640681505203247f}));
}

// timm's level functions, written here from timm.data.auto_augment for the check below.
AppliedOp timm_call(TimmOp op, double m, bool negative, int filter, const Step& s) {
  const double level = m / 10.0;
  const double sign = negative ? -1.0 : 1.0;
  const auto f = [](double v) { return static_cast<float>(v); };
  const TimmAugment& t = s.timm;
  const auto warp = [&](ImageOp o, double v) {
    return AppliedOp{o, {f(v), f(filter), f(t.fill[0]), f(t.fill[1]), f(t.fill[2])}};
  };
  switch (op) {
    case TimmOp::kAutoContrast:
      return {ImageOp::kPilAutocontrast};
    case TimmOp::kEqualize:
      return {ImageOp::kPilEqualize};
    case TimmOp::kInvert:
      return {ImageOp::kPilInvert};
    case TimmOp::kRotate:
      return warp(ImageOp::kPilRotate, sign * (level * 30.0));
    case TimmOp::kPosterize:
      return {ImageOp::kPilPosterize, {f(std::trunc(level * 4))}};
    case TimmOp::kPosterizeIncreasing:
      return {ImageOp::kPilPosterize, {f(4 - std::trunc(level * 4))}};
    case TimmOp::kSolarize:
      return {ImageOp::kPilSolarize, {f(std::min(256.0, std::trunc(level * 256)))}};
    case TimmOp::kSolarizeIncreasing:
      return {ImageOp::kPilSolarize, {f(256 - std::min(256.0, std::trunc(level * 256)))}};
    case TimmOp::kSolarizeAdd:
      return {ImageOp::kPilSolarizeAdd, {f(std::min(128.0, std::trunc(level * 110))), 128.f}};
    case TimmOp::kColor:
      return {ImageOp::kPilColor, {f(level * 1.8 + 0.1)}};
    case TimmOp::kContrast:
      return {ImageOp::kPilContrast, {f(level * 1.8 + 0.1)}};
    case TimmOp::kBrightness:
      return {ImageOp::kPilBrightness, {f(level * 1.8 + 0.1)}};
    case TimmOp::kSharpness:
      return {ImageOp::kPilSharpness, {f(level * 1.8 + 0.1)}};
    case TimmOp::kColorIncreasing:
      return {ImageOp::kPilColor, {f(std::max(0.1, 1.0 + sign * (level * 0.9)))}};
    case TimmOp::kContrastIncreasing:
      return {ImageOp::kPilContrast, {f(std::max(0.1, 1.0 + sign * (level * 0.9)))}};
    case TimmOp::kBrightnessIncreasing:
      return {ImageOp::kPilBrightness, {f(std::max(0.1, 1.0 + sign * (level * 0.9)))}};
    case TimmOp::kSharpnessIncreasing:
      return {ImageOp::kPilSharpness, {f(std::max(0.1, 1.0 + sign * (level * 0.9)))}};
    case TimmOp::kShearX:
      return warp(ImageOp::kPilShearX, sign * (level * 0.3));
    case TimmOp::kShearY:
      return warp(ImageOp::kPilShearY, sign * (level * 0.3));
    case TimmOp::kTranslateXRel:
      return warp(ImageOp::kPilTranslateXRel, sign * (level * t.translate_pct));
    case TimmOp::kTranslateYRel:
      return warp(ImageOp::kPilTranslateYRel, sign * (level * t.translate_pct));
  }
  return {};
}

bool is_warp(TimmOp op) {
  return op == TimmOp::kRotate || op == TimmOp::kShearX || op == TimmOp::kShearY ||
         op == TimmOp::kTranslateXRel || op == TimmOp::kTranslateYRel;
}

bool has_sign(TimmOp op) {
  return is_warp(op) || op == TimmOp::kColorIncreasing || op == TimmOp::kContrastIncreasing ||
         op == TimmOp::kBrightnessIncreasing || op == TimmOp::kSharpnessIncreasing;
}

// Each drawn op is the call timm's AugmentOp makes for its magnitude and sign, with the step's
// fill and the drawn (or fixed) filter; AugMix's chains mark their ops and the blend ends them.
TEST(TimmAugment, EachDrawBecomesTimmsCall) {
  for (const char* config : {"rand-m9-mstd0.5-inc1", "rand-m7-mstd101", "augmix-m5-w3"}) {
    Pipeline p(32, 32, 3);
    p.timm_augment(config, TimmInterpolation::kRandom, {7, 8, 9});
    const Step s = p.steps().back();
    std::map<TimmOp, int> seen;
    for (int i = 0; i < 5000; ++i) {
      SampleRng rng(11, kSampleStream, 0, i);
      std::vector<AppliedOp> out;
      std::vector<TimmDraw> draws;
      draw_timm(s, rng, out, &draws);
      std::size_t k = 0;
      for (const AppliedOp& op : out) {
        if (op.op == ImageOp::kTimmAugMixChain || op.op == ImageOp::kTimmAugMixBlend) continue;
        ASSERT_LT(k, draws.size());
        const TimmDraw& d = draws[k++];
        ++seen[d.op];
        EXPECT_GE(d.magnitude, 0.0);
        EXPECT_LE(d.magnitude, 10.0);
        EXPECT_EQ(d.filter != 0, is_warp(d.op));
        if (!has_sign(d.op)) {
          EXPECT_FALSE(d.negative);
        }
        const AppliedOp want = timm_call(d.op, d.magnitude, d.negative, d.filter, s);
        EXPECT_EQ(op.op, want.op) << config;
        for (int a = 0; a < 7; ++a) EXPECT_EQ(op.args[a], want.args[a]) << config << " arg " << a;
      }
      EXPECT_EQ(k, draws.size());
    }
    EXPECT_EQ(seen.size(), timm_ops(s).size()) << config;
  }
}

// --- The draws' distribution against timm's classes -------------------------------------------

// The categories make_timm_draws.py counts, from stoke's draws.
const char* timm_name(TimmOp op) {
  static const char* const kNames[kTimmOpCount] = {"AutoContrast",
                                                   "Equalize",
                                                   "Invert",
                                                   "Rotate",
                                                   "Posterize",
                                                   "PosterizeIncreasing",
                                                   "Solarize",
                                                   "SolarizeIncreasing",
                                                   "SolarizeAdd",
                                                   "Color",
                                                   "ColorIncreasing",
                                                   "Contrast",
                                                   "ContrastIncreasing",
                                                   "Brightness",
                                                   "BrightnessIncreasing",
                                                   "Sharpness",
                                                   "SharpnessIncreasing",
                                                   "ShearX",
                                                   "ShearY",
                                                   "TranslateXRel",
                                                   "TranslateYRel"};
  return kNames[static_cast<int>(op)];
}

using Counts = std::map<std::string, double>;

Counts stoke_counts(const Step& s, int samples) {
  Counts c;
  for (int i = 0; i < samples; ++i) {
    SampleRng rng(2026, kSampleStream, 1, i);
    std::vector<AppliedOp> out;
    std::vector<TimmDraw> draws;
    draw_timm(s, rng, out, &draws);
    for (const TimmDraw& d : draws) {
      const char* sign = !has_sign(d.op) ? "." : d.negative ? "-" : "+";
      c["op " + std::string(timm_name(d.op)) + " " + sign + " " + std::to_string(d.filter) + " " +
        std::to_string(static_cast<int>(std::floor(4 * d.magnitude)))] += 1;
    }
    if (s.kind == StepKind::kTimmRandAugment) {
      c["applied " + std::to_string(draws.size())] += 1;
      continue;
    }
    bool first = true;
    for (const AppliedOp& op : out) {
      if (op.op == ImageOp::kTimmAugMixChain) {
        c["depth " + std::to_string(static_cast<int>(op.args[1]))] += 1;
        if (first) c["w0 " + std::to_string(static_cast<int>(op.args[0] * 10))] += 1;
        first = false;
      } else if (op.op == ImageOp::kTimmAugMixBlend) {
        c["m " + std::to_string(static_cast<int>(op.args[0] * 10))] += 1;
      }
    }
  }
  return c;
}

// Q(a, x), the regularized upper incomplete gamma: the chi-square's p-value is Q(df / 2, x / 2).
double upper_gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double log_front = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1) {  // series for P
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (std::abs(term) < std::abs(sum) * 1e-15) break;
    }
    return 1.0 - sum * std::exp(log_front);
  }
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;  // Lentz's continued fraction for Q
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    d = std::abs(d) < 1e-300 ? 1e-300 : d;
    c = b + an / c;
    c = std::abs(c) < 1e-300 ? 1e-300 : c;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-15) break;
  }
  return std::exp(log_front) * h;
}

struct ChiSquare {
  double chi2 = 0;
  int df = 0;
  double p = 0;
};

// Two samples from one distribution? Cells with fewer than 10 counts together are pooled (as
// bench/parity_ops.py's two_sample_chi_square).
ChiSquare two_sample(const Counts& a, const Counts& b) {
  double na = 0, nb = 0;
  for (const auto& [k, v] : a) na += v;
  for (const auto& [k, v] : b) nb += v;
  const double ka = std::sqrt(nb / na), kb = std::sqrt(na / nb);
  Counts all = a;
  for (const auto& [k, v] : b) all[k] += 0;
  ChiSquare r;
  int cells = 0;
  double pa = 0, pb = 0;
  for (const auto& [k, unused] : all) {
    const double x = a.count(k) ? a.at(k) : 0, y = b.count(k) ? b.at(k) : 0;
    if (x + y < 10) {
      pa += x;
      pb += y;
      continue;
    }
    r.chi2 += (ka * x - kb * y) * (ka * x - kb * y) / (x + y);
    ++cells;
  }
  if (pa + pb > 0) {
    r.chi2 += (ka * pa - kb * pb) * (ka * pa - kb * pb) / (pa + pb);
    ++cells;
  }
  r.df = std::max(cells - 1, 1);
  r.p = upper_gamma_q(r.df / 2.0, r.chi2 / 2.0);
  return r;
}

TEST(TimmAugment, ChiSquarePValuesAreRight) {
  // scipy.stats.chi2.sf: 3.84146 at 1 degree of freedom is p = 0.05, 21.666 at 9 is 0.01,
  // 124.342 at 100 is 0.05.
  EXPECT_NEAR(upper_gamma_q(0.5, 3.84146 / 2), 0.05, 1e-5);
  EXPECT_NEAR(upper_gamma_q(4.5, 21.666 / 2), 0.01, 1e-5);
  EXPECT_NEAR(upper_gamma_q(50, 124.342 / 2), 0.05, 1e-5);
}

// timm's counts per config; none when the file cannot be read (the tests below say so).
std::map<std::string, Counts> timm_counts() {
  std::map<std::string, Counts> out;
  std::string error;
  for (const std::string& line : test::read_golden_lines("timm_draws.txt", error)) {
    std::istringstream fields(line);
    std::string config, category, count;
    std::getline(fields, config, '\t');
    std::getline(fields, category, '\t');
    std::getline(fields, count, '\t');
    out[config][category] = std::stod(count);
  }
  return out;
}

TEST(TimmAugment, DrawsAsTimmsOwnClassesDo) {
  const std::map<std::string, Counts> timm = timm_counts();
  ASSERT_EQ(timm.size(), 5u) << test::golden_path("timm_draws.txt");
  for (const auto& [config, theirs] : timm) {
    const std::string string = config.substr(0, config.find(' '));
    const std::string word = config.substr(config.find(' ') + 1);
    const TimmInterpolation interpolation = word == "bicubic"    ? TimmInterpolation::kBicubic
                                            : word == "bilinear" ? TimmInterpolation::kBilinear
                                                                 : TimmInterpolation::kRandom;
    const Counts ours = stoke_counts(step_of(string, interpolation), 200000);
    const ChiSquare r = two_sample(ours, theirs);
    EXPECT_GT(r.p, 0.01) << config << ": chi-square " << r.chi2 << " at " << r.df
                         << " degrees of freedom";
    std::cout << config << ": " << ours.size() << " categories, chi-square " << r.chi2 << " ("
              << r.df << "), p = " << r.p << "\n";
  }
}

// The test above would see a table, a sign, a filter or a magnitude drawn otherwise: the same
// counts against another config's fail.
TEST(TimmAugment, DistributionTestTellsConfigsApart) {
  const std::map<std::string, Counts> timm = timm_counts();
  ASSERT_EQ(timm.size(), 5u);
  const Counts& deit = timm.at("rand-m9-mstd0.5-inc1 bicubic");
  EXPECT_LT(
      two_sample(stoke_counts(step_of("rand-m9-mstd0.5-inc1", TimmInterpolation::kRandom), 50000),
                 deit)
          .p,
      1e-6);  // the filter
  EXPECT_LT(
      two_sample(stoke_counts(step_of("rand-m9-mstd0.6-inc1", TimmInterpolation::kBicubic), 50000),
                 deit)
          .p,
      1e-6);  // the magnitude's spread
  EXPECT_LT(
      two_sample(stoke_counts(step_of("rand-m9-mstd0.5", TimmInterpolation::kBicubic), 50000), deit)
          .p,
      1e-6);  // the table
  EXPECT_LT(
      two_sample(stoke_counts(step_of("augmix-m5-w3-a0.8"), 50000), timm.at("augmix-m5-w3 random"))
          .p,
      1e-6);  // the Dirichlet and Beta parameter
}

// The samplers AugMix's weights and m come from: moments of Gamma(alpha) (mean and variance
// alpha) and of the standard normal.
TEST(TimmAugment, SamplersHaveTheirMoments) {
  SampleRng rng(5, kSampleStream, 0, 0);
  for (const double alpha : {0.5, 1.0, 2.5}) {
    double sum = 0, sq = 0;
    constexpr int kN = 200000;
    for (int i = 0; i < kN; ++i) {
      const double g = gamma(rng, alpha);
      ASSERT_GT(g, 0.0);
      sum += g;
      sq += g * g;
    }
    const double mean = sum / kN, var = sq / kN - mean * mean;
    EXPECT_NEAR(mean, alpha, 0.01 * std::max(1.0, alpha)) << alpha;
    EXPECT_NEAR(var, alpha, 0.03 * std::max(1.0, alpha)) << alpha;
  }
  double sum = 0, sq = 0;
  for (int i = 0; i < 200000; ++i) {
    const double z = standard_normal(rng);
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / 200000, 0.0, 0.01);
  EXPECT_NEAR(sq / 200000, 1.0, 0.01);
}

}  // namespace
}  // namespace stoke::detail
