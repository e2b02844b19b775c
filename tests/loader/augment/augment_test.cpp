// The augmenter against straightforward OpenCV references built from the same random draws.
#include "augment/augment.hpp"

#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "augment/resample.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

cv::Mat pattern(int h, int w, int c) {
  cv::Mat m(h, w, CV_8UC(c));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * c; ++x)
      m.ptr<std::uint8_t>(y)[x] = static_cast<std::uint8_t>(y * 31 + x * 7 + 1);
  return m;
}

ImageRef ref(const cv::Mat& m, bool bgr = false) {
  return ImageRef{m.data, m.rows, m.cols, m.channels(), m.step[0], bgr};
}

cv::Mat run(const Pipeline& p, const cv::Mat& src, SampleRng rng, bool bgr = false) {
  cv::Mat out(p.output_height(), p.output_width(), CV_8UC(p.output_channels()));
  Augmenter a;
  const std::vector<Step> steps = p.steps();
  a.run(steps.data(), static_cast<int>(steps.size()), ref(src, bgr), rng, out.data, out.rows,
        out.cols, out.channels());
  return out;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

// decode=gpu's geometry-only run ends with the run, also when a step throws: the next run()
// writes its pixels.
TEST(Augment, AGeometryRunThatThrowsLeavesTheNextRunItsPixels) {
  Pipeline thin(64, 64, 3);
  thin.resize_shorter(64).center_crop(64, 64);
  const std::vector<Step> steps = thin.steps();
  const cv::Mat strip = pattern(1, 200000, 3);  // resize_shorter would make it 13 million wide
  Augmenter a;
  PlainSource source(ref(strip));
  SampleRng rng(1, 2, 3, 4);
  EXPECT_THROW(a.run_geometry(steps.data(), static_cast<int>(steps.size()), source, rng, 64, 64, 3),
               ImageTooLarge);
  const cv::Mat src = pattern(80, 100, 3);
  cv::Mat out(64, 64, CV_8UC3, cv::Scalar::all(0xab));
  SampleRng again(1, 2, 3, 4);
  a.run(steps.data(), static_cast<int>(steps.size()), ref(src), again, out.data, 64, 64, 3);
  EXPECT_TRUE(same(out, run(thin, src, SampleRng(1, 2, 3, 4))));
}

TEST(Augment, PadRandomCropAndFlipMatchPaddedCropOfTheImage) {
  const cv::Mat src = pattern(28, 28, 1);
  Pipeline p(28, 28, 1);
  p.pad_random_crop(4, 28, 28).horizontal_flip(0.5f);
  int flips = 0;
  for (int pos = 0; pos < 200; ++pos) {
    SampleRng draws(1, kSampleStream, 0, pos);
    const int x = static_cast<int>(draws.below(9));
    const int y = static_cast<int>(draws.below(9));
    const bool flip = draws.bernoulli(0.5);
    flips += flip;
    cv::Mat padded, expected;
    cv::copyMakeBorder(src, padded, 4, 4, 4, 4, cv::BORDER_CONSTANT, cv::Scalar(0));
    expected = padded(cv::Rect(x, y, 28, 28)).clone();
    if (flip) cv::flip(expected, expected, 1);
    ASSERT_TRUE(same(run(p, src, SampleRng(1, kSampleStream, 0, pos)), expected)) << "pos " << pos;
  }
  EXPECT_GT(flips, 60);
  EXPECT_LT(flips, 140);
}

TEST(Augment, FlipThenCropCropsTheMirroredImage) {
  const cv::Mat src = pattern(10, 12, 3);
  Pipeline p(10, 5, 3);
  p.horizontal_flip(1.0f).center_crop(10, 5);
  cv::Mat mirrored, expected;
  cv::flip(src, mirrored, 1);
  expected = mirrored(cv::Rect(4, 0, 5, 10)).clone();  // round((12 - 5) / 2) = 4 (half to even)
  EXPECT_TRUE(same(run(p, src, SampleRng(0, 0, 0, 0)), expected));
}

TEST(Augment, CenterCropLargerThanTheImagePadsWithZeros) {
  const cv::Mat src = pattern(4, 4, 1);
  Pipeline p(8, 8, 1);
  p.center_crop(8, 8);
  cv::Mat expected;
  cv::copyMakeBorder(src, expected, 2, 2, 2, 2, cv::BORDER_CONSTANT, cv::Scalar(0));
  EXPECT_TRUE(same(run(p, src, SampleRng(0, 0, 0, 0)), expected));
}

TEST(Augment, ResizeShorterThenCenterCropMatchesOpenCV) {
  const cv::Mat src = pattern(60, 90, 3);
  Pipeline p(32, 32, 3);
  p.resize_shorter(40).center_crop(32, 32);
  cv::Mat resized;
  cv::resize(src, resized, cv::Size(60, 40), 0, 0, cv::INTER_LINEAR);
  const cv::Mat expected = resized(cv::Rect(14, 4, 32, 32)).clone();
  EXPECT_TRUE(same(run(p, src, SampleRng(0, 0, 0, 0)), expected));
}

TEST(Augment, RandomResizedCropOfTheWholeImageIsAPlainResize) {
  const cv::Mat src = pattern(50, 50, 3);
  Pipeline p(20, 20, 3);
  p.random_resized_crop(20, 20, 1.0f, 1.0f, 1.0f, 1.0f);
  cv::Mat expected;
  cv::resize(src, expected, cv::Size(20, 20), 0, 0, cv::INTER_AREA);
  for (int pos = 0; pos < 5; ++pos)
    EXPECT_TRUE(same(run(p, src, SampleRng(3, kSampleStream, 1, pos)), expected));
}

TEST(Augment, RandomResizedCropStaysInsideAndVariesWithPosition) {
  const cv::Mat src = pattern(120, 160, 3);
  Pipeline p(24, 24, 3);
  p.random_resized_crop(24, 24);
  const cv::Mat a = run(p, src, SampleRng(5, kSampleStream, 0, 1));
  const cv::Mat b = run(p, src, SampleRng(5, kSampleStream, 0, 2));
  EXPECT_FALSE(same(a, b));
  EXPECT_TRUE(same(a, run(p, src, SampleRng(5, kSampleStream, 0, 1))));
}

TEST(Augment, BgrSourcesComeOutRgbAndGrayIsReplicated) {
  cv::Mat bgr(1, 1, CV_8UC3, cv::Scalar(10, 20, 30));
  Pipeline p(1, 1, 3);
  const cv::Mat rgb = run(p, bgr, SampleRng(0, 0, 0, 0), true);
  EXPECT_EQ(rgb.at<cv::Vec3b>(0, 0), cv::Vec3b(30, 20, 10));
  cv::Mat gray(1, 1, CV_8UC1, cv::Scalar(77));
  const cv::Mat three = run(p, gray, SampleRng(0, 0, 0, 0));
  EXPECT_EQ(three.at<cv::Vec3b>(0, 0), cv::Vec3b(77, 77, 77));
}

TEST(Augment, ColorJitterOfZeroIsIdentityAndOtherwiseChangesPixels) {
  const cv::Mat src = pattern(16, 16, 3);
  Pipeline none(16, 16, 3);
  none.color_jitter(0.f, 0.f);
  EXPECT_TRUE(same(run(none, src, SampleRng(0, 0, 0, 0)), src));
  Pipeline strong(16, 16, 3);
  strong.color_jitter(0.5f, 0.5f);
  EXPECT_FALSE(same(run(strong, src, SampleRng(0, 0, 0, 9)), src));
}

// The fractional area resampler against OpenCV's INTER_AREA on windows with whole-pixel edges,
// at every shrink factor it takes (up to kMaxResampleTaps - 2 per axis), gray and RGB, mirrored
// or not: 7-bit weights, quantized per tap, allow a level or two at a pixel, no more.
TEST(Resample, AreaMatchesOpenCvAtEveryShrinkItSupports) {
  cv::RNG rng(21);
  for (int c : {1, 3}) {
    cv::Mat src(480, 600, CV_8UC(c));
    rng.fill(src, cv::RNG::UNIFORM, 0, 256);
    cv::GaussianBlur(src, src, cv::Size(3, 3), 0);  // photograph-like: not pure noise
    for (const double ratio : {2.0, 3.0, 4.5, 5.9}) {
      const int dw = static_cast<int>(500 / ratio), dh = static_cast<int>(400 / ratio);
      ASSERT_TRUE(resample_supports(ResampleFilter::kArea, 500, dw, 400, dh)) << ratio;
      for (const bool mirror : {false, true}) {
        cv::Mat got(dh, dw, CV_8UC(c));
        ResampleScratch scratch;
        resample(ref(src), 37, 29, 500, 400, got.data, dw, dh, mirror, ResampleFilter::kArea,
                 scratch);
        cv::Mat want;
        cv::resize(src(cv::Rect(37, 29, 500, 400)), want, cv::Size(dw, dh), 0, 0, cv::INTER_AREA);
        if (mirror) cv::flip(want, want, 1);
        cv::Mat diff;
        cv::absdiff(got, want, diff);
        EXPECT_LE(cv::norm(diff, cv::NORM_INF), 2.0) << "ratio " << ratio << " channels " << c;
        EXPECT_LE(cv::mean(diff)[0], 0.5) << "ratio " << ratio << " channels " << c;
      }
    }
  }
  EXPECT_FALSE(resample_supports(ResampleFilter::kArea, 500, 500 / 7, 400, 400 / 7));
}

// The steps by name (Python's pipeline=, stoke-bench --pipeline) build what the methods build.
TEST(PipelineSteps, TextAndNamesBuildWhatTheMethodsBuild) {
  const Pipeline p =
      make_pipeline(512, 512, 3,
                    parse_steps("scale_jitter 480 800 | box_crop 512 512 0.6 | horizontal_flip | "
                                "vertical_flip 0.1 |"));
  Pipeline q(512, 512, 3);
  q.scale_jitter(480, 800).box_crop(512, 512, 0.6f).horizontal_flip().vertical_flip(0.1f);
  EXPECT_EQ(p.describe(), q.describe());
  EXPECT_EQ(p.describe(),
            "scale_jitter shorter side 480..800\n"
            "box_crop 512x512 min_visible 0.6 scale [0.1, 1] ratio [0.5, 2]\n"
            "horizontal_flip p=0.5\nvertical_flip p=0.1\noutput 512x512x3 uint8");
  const auto error = [](const std::string& text) {
    try {
      make_pipeline(64, 64, 3, parse_steps(text));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("resize 64 64.5"),
            "pipeline step resize: number 2 must be a whole number of pixels, got 64.5");
  EXPECT_EQ(error("resize 64"), "pipeline step resize takes (height, width), got 1 number(s)");
  EXPECT_EQ(error("resize 64 x"), "pipeline step resize: 'x' is not a number");
  EXPECT_NE(error("spin 3").find("'spin' is not one of"), std::string::npos);
  EXPECT_EQ(error(" | "), "pipeline: no steps in ' | '");
  EXPECT_EQ(error("scale_jitter 80 40 | center_crop 64 64"),
            "scale_jitter: min_side 80 is above max_side 40");
}

}  // namespace
}  // namespace stoke::detail
