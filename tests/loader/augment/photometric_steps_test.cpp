// The photometric steps: their vocabulary, their draws (torchvision's ColorJitter order and
// ranges, the random_* coins) and where the augmenter runs them (on the written output when
// nothing moves pixels after them, else on the image at that point).
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "augment/augment.hpp"
#include "augment/steps/step_def.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

std::string error_of(const std::string& text) {
  try {
    make_pipeline(64, 64, 3, parse_steps(text));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(PhotometricSteps, TextBuildsWhatTheMethodsBuild) {
  const Pipeline p = make_pipeline(
      176, 176, 3,
      parse_steps("random_resized_crop 176 176 | horizontal_flip | color_jitter 0.4 0.3 0.2 0.1 "
                  "| random_grayscale | gaussian_blur 5 0.5 | gaussian_blur 3 | solarize 128 | "
                  "random_solarize 100 0.2 | posterize 4 | random_posterize 2 | equalize | "
                  "random_equalize | autocontrast | random_autocontrast 0.3 | adjust_sharpness 2 "
                  "| random_adjust_sharpness 0.5 | invert | random_invert"));
  Pipeline q(176, 176, 3);
  q.random_resized_crop(176, 176).horizontal_flip().color_jitter(0.4f, 0.3f, 0.2f, 0.1f);
  q.grayscale(0.1f).gaussian_blur(5, 5, 0.5f, 0.5f).gaussian_blur(3, 3, 0.1f, 2.0f);
  q.solarize(128).solarize(100, 0.2f).posterize(4).posterize(2, 0.5f).equalize().equalize(0.5f);
  q.autocontrast().autocontrast(0.3f).adjust_sharpness(2).adjust_sharpness(0.5f, 0.5f);
  q.invert().invert(0.5f);
  EXPECT_EQ(p.describe(), q.describe());
  EXPECT_EQ(p.max_applied_ops(), 4 + 15);
  const std::string d = p.describe();
  EXPECT_NE(d.find("color_jitter brightness 0.4 contrast 0.3 saturation 0.2 hue 0.1 (random "
                   "order)\ngrayscale p=0.1\ngaussian_blur 5x5 sigma [0.5, 0.5]\ngaussian_blur "
                   "3x3 sigma [0.1, 2]\nsolarize threshold 128 p=1\nsolarize threshold 100 "
                   "p=0.2\nposterize bits 4 p=1\nposterize bits 2 p=0.5\nequalize p=1\n"),
            std::string::npos)
      << d;
  for (const Step& s : p.steps())
    EXPECT_EQ(is_photometric(s.kind),
              s.kind != StepKind::kRandomResizedCrop && s.kind != StepKind::kHorizontalFlip);
}

TEST(PhotometricSteps, BadNumbersAreNamed) {
  EXPECT_EQ(error_of("gaussian_blur 4"),
            "gaussian_blur: kernel sides must be odd, in 1..255, got 4x4");
  EXPECT_EQ(error_of("gaussian_blur 3 2 1"),
            "gaussian_blur: sigma must satisfy 0 < min <= max <= 100, got [2, 1]");
  EXPECT_EQ(error_of("color_jitter 0.1 0.1 0.1 0.6"),
            "color_jitter: hue must be in [0, 0.5], got 0.6");
  EXPECT_EQ(error_of("color_jitter -1"), "color_jitter: brightness must be in [0, 100], got -1");
  EXPECT_EQ(error_of("color_jitter"),
            "pipeline step color_jitter takes (brightness[, contrast, saturation, hue]), got 0 "
            "number(s)");
  EXPECT_EQ(error_of("posterize 9"), "posterize: bits must be in 0..8, got 9");
  EXPECT_EQ(error_of("posterize 2.5"),
            "pipeline step posterize: number 1 must be a whole number of pixels, got 2.5");
  EXPECT_EQ(error_of("solarize 300"), "solarize: threshold must be in [0, 255], got 300");
  EXPECT_EQ(error_of("solarize 100 0.5"),
            "pipeline step solarize takes (threshold), got 2 number(s)");
  EXPECT_EQ(error_of("equalize 1"), "pipeline step equalize takes no numbers, got 1 number(s)");
  EXPECT_EQ(error_of("random_invert 2"), "invert: probability must be in [0, 1], got 2");
  EXPECT_EQ(error_of("adjust_sharpness -1"),
            "adjust_sharpness: factor must be in [0, 100], got -1");
}

TEST(PhotometricSteps, PoliciesComeAfterEveryCropResizeAndFlip) {
  const auto validated = [](const std::string& text) {
    try {
      make_pipeline(64, 64, 3, parse_steps(text)).validate(0, 0);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(validated("random_resized_crop 64 64 | horizontal_flip | trivial_augment_wide | "
                      "rand_augment | auto_augment_svhn | invert"),
            "no error");
  EXPECT_EQ(validated("resize 64 64 | trivial_augment_wide | horizontal_flip"),
            "pipeline: trivial_augment_wide must come after every crop, resize and flip (where "
            "torchvision's recipes put it), but horizontal_flip follows it");
  EXPECT_EQ(validated("resize 80 80 | rand_augment | center_crop 64 64"),
            "pipeline: rand_augment must come after every crop, resize and flip (where "
            "torchvision's recipes put it), but center_crop follows it");
  EXPECT_EQ(error_of("rand_augment 2 31"),
            "rand_augment: magnitude must be a bin in 0..30, got 31");
  EXPECT_EQ(error_of("trivial_augment_wide 1"),
            "trivial_augment_wide: magnitude bins must be in 2..1024, got 1");
  EXPECT_EQ(error_of("auto_augment 300"),
            "auto_augment: fill must be a level in [0, 255], got 300");
  const Pipeline p =
      make_pipeline(64, 64, 3,
                    parse_steps("resize 64 64 | trivial_augment_wide 31 128 | rand_augment 3 5 | "
                                "auto_augment_cifar10"));
  EXPECT_EQ(p.max_applied_ops(), 1 + 3 + 2);
  EXPECT_NE(p.describe().find("trivial_augment_wide bins 31 fill 128\nrand_augment ops 3 "
                              "magnitude 5 of 31 bins fill 0\nauto_augment cifar10 fill 0\n"),
            std::string::npos)
      << p.describe();
}

std::vector<ColorOpArgs> draws(const Pipeline& p, std::int64_t position) {
  const Step s = p.steps().front();
  SampleRng rng(5, kSampleStream, 0, position);
  std::vector<ColorOpArgs> out;
  draw_pixel_ops(s, rng, 8, 8, out);
  return out;
}

// torch.randperm(4): all 24 orders equally often (chi-square, 23 degrees of freedom, p > 0.001
// at 49.7); each factor uniform over torchvision's range.
TEST(PhotometricSteps, ColorJitterDrawsEveryOrderEquallyAndFactorsInTheirRanges) {
  Pipeline p(8, 8, 3);
  p.color_jitter(0.4f, 1.5f, 0.2f, 0.1f);
  std::map<std::array<ColorOp, 4>, int> orders;
  constexpr int kDraws = 48000;
  double hue_sum = 0;
  for (std::int64_t i = 0; i < kDraws; ++i) {
    const std::vector<ColorOpArgs> ops = draws(p, i);
    ASSERT_EQ(ops.size(), 4u);
    std::array<ColorOp, 4> order{};
    for (std::size_t k = 0; k < 4; ++k) {
      order[k] = ops[k].op;
      const float v = ops[k].args[0];
      switch (ops[k].op) {
        case ColorOp::kBrightness:
          ASSERT_TRUE(v >= 0.6f && v <= 1.4f) << v;
          break;
        case ColorOp::kContrast:  // max(0, 1 - 1.5) = 0
          ASSERT_TRUE(v >= 0.f && v <= 2.5f) << v;
          break;
        case ColorOp::kSaturation:
          ASSERT_TRUE(v >= 0.8f && v <= 1.2f) << v;
          break;
        case ColorOp::kHue:
          ASSERT_TRUE(v >= -0.1f && v <= 0.1f) << v;
          hue_sum += v;
          break;
        default:
          FAIL() << "unexpected op " << static_cast<int>(ops[k].op);
      }
    }
    ++orders[order];
  }
  ASSERT_EQ(orders.size(), 24u);
  double chi2 = 0;
  const double expected = kDraws / 24.0;
  for (const auto& [order, n] : orders) chi2 += (n - expected) * (n - expected) / expected;
  EXPECT_LT(chi2, 49.7);
  EXPECT_NEAR(hue_sum / kDraws, 0.0, 0.002);

  // A factor of 0 leaves that op out (torchvision's None), keeping the others' order random.
  Pipeline only(8, 8, 3);
  only.color_jitter(0.f, 0.5f, 0.f, 0.2f);
  int contrast_first = 0;
  for (std::int64_t i = 0; i < 2000; ++i) {
    const std::vector<ColorOpArgs> ops = draws(only, i);
    ASSERT_EQ(ops.size(), 2u);
    contrast_first += ops[0].op == ColorOp::kContrast ? 1 : 0;
  }
  EXPECT_NEAR(contrast_first, 1000, 120);
}

TEST(PhotometricSteps, RandomStepsApplyWithTheirProbabilityAndPlainOnesAlways) {
  Pipeline rare(8, 8, 3), always(8, 8, 3), blur(8, 8, 3);
  rare.solarize(77, 0.3f);
  always.posterize(3);
  blur.gaussian_blur(5, 3, 0.5f, 1.5f);
  int applied = 0;
  for (std::int64_t i = 0; i < 10000; ++i) {
    const std::vector<ColorOpArgs> ops = draws(rare, i);
    if (!ops.empty()) {
      ++applied;
      EXPECT_EQ(ops[0].op, ColorOp::kSolarize);
      EXPECT_EQ(ops[0].args[0], 77.f);
    }
    const std::vector<ColorOpArgs> p = draws(always, i);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].op, ColorOp::kPosterize);
    EXPECT_EQ(p[0].args[0], 3.f);
    const std::vector<ColorOpArgs> b = draws(blur, i);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].op, ColorOp::kGaussianBlur);
    EXPECT_EQ(b[0].args[0], 5.f);
    EXPECT_EQ(b[0].args[1], 3.f);
    EXPECT_TRUE(b[0].args[2] >= 0.5f && b[0].args[2] <= 1.5f);
  }
  EXPECT_NEAR(applied, 3000, 200);
}

cv::Mat pattern(int h, int w) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * 3; ++x)
      m.ptr<std::uint8_t>(y)[x] = static_cast<std::uint8_t>(y * 29 + x * 11 + 3);
  return m;
}

struct Produced {
  cv::Mat out;
  std::vector<ColorOpArgs> ops;
};

Produced run(const Pipeline& p, const cv::Mat& src, std::int64_t position) {
  Produced r{cv::Mat(p.output_height(), p.output_width(), CV_8UC3), {}};
  const std::vector<Step> steps = p.steps();
  Augmenter a;
  SampleRng rng(11, kSampleStream, 0, position);
  a.run(steps.data(), static_cast<int>(steps.size()),
        ImageRef{src.data, src.rows, src.cols, 3, src.step[0], false}, rng, r.out.data, r.out.rows,
        r.out.cols, 3);
  r.ops.assign(a.applied_ops().begin(), a.applied_ops().end());
  return r;
}

// After the last resize the ops act on the output (with a flip between them); before it, on the
// image at that point, which the resize then reads.
TEST(PhotometricSteps, TheAugmenterRunsTheOpsWhereThePipelinePutsThem) {
  const cv::Mat src = pattern(40, 52);
  cv::Mat inverted;
  cv::bitwise_not(src, inverted);

  Pipeline plain(20, 24, 3), after(20, 24, 3), before(20, 24, 3);
  plain.resize(20, 24).horizontal_flip(1.f);
  after.resize(20, 24).invert().horizontal_flip(1.f);
  before.invert().resize(20, 24).horizontal_flip(1.f);
  const Produced base = run(plain, src, 0);
  cv::Mat expected;
  cv::bitwise_not(base.out, expected);
  const Produced a = run(after, src, 0);
  EXPECT_EQ(cv::norm(a.out, expected, cv::NORM_INF), 0);
  ASSERT_EQ(a.ops.size(), 1u);
  EXPECT_EQ(a.ops[0].op, ColorOp::kInvert);
  const Produced b = run(before, src, 0);
  EXPECT_EQ(cv::norm(b.out, run(plain, inverted, 0).out, cv::NORM_INF), 0);

  // A padded crop after the op pads with 0, as torchvision pads the changed image.
  Pipeline padded(44, 56, 3);
  padded.invert().pad_random_crop(2, 44, 56);
  const Produced c = run(padded, src, 3);
  EXPECT_EQ(c.out.at<cv::Vec3b>(0, 0), cv::Vec3b(0, 0, 0));
  EXPECT_EQ(c.out.at<cv::Vec3b>(43, 55), cv::Vec3b(0, 0, 0));

  // A step whose coin says no leaves no op and no trace in the pixels.
  Pipeline never(20, 24, 3);
  never.resize(20, 24).invert(0.f).horizontal_flip(1.f);
  const Produced d = run(never, src, 0);
  EXPECT_TRUE(d.ops.empty());
  EXPECT_EQ(cv::norm(d.out, base.out, cv::NORM_INF), 0);
}

}  // namespace
}  // namespace stoke::detail
