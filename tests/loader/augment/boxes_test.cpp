// Boxes follow the pixels: a bright rectangle on a dark image goes through every geometric step
// the pipeline has (on the general path and on the JPEG region path), and the box mapped by the
// augmenter's OutputMap matches where the rectangle's edges land in the output. Then the clip and
// drop rules, by hand.
#include "augment/boxes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "augment/augment.hpp"
#include "decode/jpeg_region.hpp"
#include "plan/sample_rng.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {
namespace {

constexpr int kSourceW = 200, kSourceH = 160;
const SampleBox kRect{50, 40, 120, 100, 0};  // the bright rectangle, in source pixels

cv::Mat scene() {
  cv::Mat m(kSourceH, kSourceW, CV_8UC1, cv::Scalar(0));
  m(cv::Rect(50, 40, 70, 60)).setTo(255);
  return m;
}

// The output's bright region (pixels over half-bright) as a box: columns/rows [first, last + 1).
// false when there is none.
bool bright_box(const cv::Mat& out, Box& b) {
  int x1 = out.cols, y1 = out.rows, x2 = -1, y2 = -1;
  for (int y = 0; y < out.rows; ++y) {
    for (int x = 0; x < out.cols; ++x) {
      if (out.at<std::uint8_t>(y, x) < 128) continue;
      x1 = std::min(x1, x);
      y1 = std::min(y1, y);
      x2 = std::max(x2, x);
      y2 = std::max(y2, y);
    }
  }
  if (x2 < 0) return false;
  b = Box{static_cast<float>(x1), static_cast<float>(y1), static_cast<float>(x2 + 1),
          static_cast<float>(y2 + 1)};
  return true;
}

struct Case {
  std::string name;
  Pipeline pipeline;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"RandomResizedCropAndFlip",
               Pipeline(64, 64, 1).random_resized_crop(64, 64).horizontal_flip(0.5f)});
  c.push_back(
      {"FlipThenRandomResizedCropUpscaled",
       Pipeline(96, 128, 1).horizontal_flip(0.5f).random_resized_crop(96, 128, 0.05f, 0.3f)});
  c.push_back(
      {"ResizeShorterCenterCrop", Pipeline(96, 96, 1).resize_shorter(100).center_crop(96, 96)});
  c.push_back({"CenterCropWithPadding", Pipeline(200, 240, 1).center_crop(200, 240)});
  c.push_back(
      {"PadRandomCropFlipResize",
       Pipeline(50, 60, 1).pad_random_crop(30, 120, 150).horizontal_flip(0.5f).resize(50, 60)});
  c.push_back({"RandomResizedCropThenBothFlips", Pipeline(64, 64, 1)
                                                     .random_resized_crop(64, 64, 0.2f, 1.0f)
                                                     .vertical_flip(0.5f)
                                                     .horizontal_flip(0.5f)});
  c.push_back(
      {"VerticalFlipBeforeAPadCropAndResize",
       Pipeline(60, 72, 1).vertical_flip(0.5f).pad_random_crop(20, 150, 180).resize(60, 72)});
  c.push_back({"ScaleJitterThenCenterCrop",
               Pipeline(128, 128, 1).scale_jitter(100, 300).center_crop(128, 128)});
  c.push_back({"ScaleJitterOfTheLongerSideThenPadCropAndFlip", Pipeline(96, 96, 1)
                                                                   .scale_jitter(120, 260, true)
                                                                   .pad_random_crop(16, 96, 96)
                                                                   .vertical_flip(0.5f)});
  c.push_back(
      {"BoxCropThenFlip", Pipeline(64, 64, 1).box_crop(64, 64, 0.5f).horizontal_flip(0.5f)});
  return c;
}

// Runs the pipeline on the scene from `source()` (a source serves one sample), for 60 sample
// positions: each time the mapped box must sit within a pixel of the bright region, or be
// dropped exactly when the rectangle is (nearly) gone.
void check(const Pipeline& p, const std::function<ImageSource&()>& source,
           const std::string& what) {
  const std::vector<Step> steps = p.steps();
  Augmenter a;
  cv::Mat out(p.output_height(), p.output_width(), CV_8UC1);
  int seen = 0;
  for (int pos = 0; pos < 60; ++pos) {
    SampleRng rng(3, kSampleStream, 0, pos);
    a.set_boxes({&kRect, 1});
    a.run(steps.data(), static_cast<int>(steps.size()), source(), rng, out.data, out.rows, out.cols,
          1);
    Box mapped[1];
    std::uint32_t kept[1];
    const std::size_t n =
        map_boxes(a.output_map(), out.cols, out.rows, BoxRules{}, {&kRect, 1}, mapped, kept);
    Box bright;
    const bool visible = bright_box(out, bright);
    if (n == 0) {
      // Dropped: under a pixel of the rectangle can remain.
      EXPECT_TRUE(!visible || bright.x2 - bright.x1 <= 2 || bright.y2 - bright.y1 <= 2)
          << what << " pos " << pos;
      continue;
    }
    ++seen;
    ASSERT_TRUE(visible) << what << " pos " << pos;
    EXPECT_NEAR(mapped[0].x1, bright.x1, 1.0) << what << " pos " << pos;
    EXPECT_NEAR(mapped[0].x2, bright.x2, 1.0) << what << " pos " << pos;
    EXPECT_NEAR(mapped[0].y1, bright.y1, 1.0) << what << " pos " << pos;
    EXPECT_NEAR(mapped[0].y2, bright.y2, 1.0) << what << " pos " << pos;
  }
  EXPECT_GT(seen, 20) << what;
}

class BoxesFollowThePixels : public ::testing::TestWithParam<Case> {};

TEST_P(BoxesFollowThePixels, OnTheGeneralPath) {
  const cv::Mat src = scene();
  PlainSource plain(ImageRef{src.data, src.rows, src.cols, 1, src.step[0], false});
  check(
      GetParam().pipeline, [&]() -> ImageSource& { return plain; }, GetParam().name);
}

TEST_P(BoxesFollowThePixels, OnTheJpegRegionPath) {
  std::vector<std::uint8_t> jpeg;
  ASSERT_TRUE(cv::imencode(".jpg", scene(), jpeg, {cv::IMWRITE_JPEG_QUALITY, 98}));
  JpegRegionSource source;
  const auto reopened = [&]() -> ImageSource& {
    EXPECT_EQ(source.open(jpeg.data(), jpeg.size(), 1, std::int64_t{1} << 30), BadInput::kNone);
    return source;
  };
  check(GetParam().pipeline, reopened, GetParam().name + " (JPEG)");
}

INSTANTIATE_TEST_SUITE_P(Steps, BoxesFollowThePixels, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return param.param.name;
                         });

// Small windows (5-20% of the image) miss the rectangle most of the time; box_crop's keep at
// least half of it, or (when 10 draws found none) take the whole image.
TEST(BoxCrop, EveryWindowKeepsHalfOfABoxOrIsTheWholeImage) {
  const cv::Mat src = scene();
  const auto visible = [&](const Pipeline& p, int pos, bool& whole) {
    const std::vector<Step> steps = p.steps();
    Augmenter a;
    a.set_boxes({&kRect, 1});
    cv::Mat out(64, 64, CV_8UC1);
    SampleRng rng(9, kSampleStream, 0, pos);
    a.run(steps.data(), static_cast<int>(steps.size()),
          ImageRef{src.data, src.rows, src.cols, 1, src.step[0], false}, rng, out.data, 64, 64, 1);
    const OutputMap& m = a.output_map();
    whole = std::abs(m.sx * kSourceW - 64) < 1e-9 && std::abs(m.sy * kSourceH - 64) < 1e-9;
    const double x1 = std::clamp(m.x(kRect.x1), 0.0, 64.0),
                 x2 = std::clamp(m.x(kRect.x2), 0.0, 64.0);
    const double y1 = std::clamp(m.y(kRect.y1), 0.0, 64.0),
                 y2 = std::clamp(m.y(kRect.y2), 0.0, 64.0);
    const double mapped = (m.x(kRect.x2) - m.x(kRect.x1)) * (m.y(kRect.y2) - m.y(kRect.y1));
    return (x2 - x1) * (y2 - y1) / mapped;
  };
  int kept_by_box_crop = 0, kept_by_rrc = 0, whole_images = 0;
  for (int pos = 0; pos < 200; ++pos) {
    bool whole = false;
    const double v = visible(Pipeline(64, 64, 1).box_crop(64, 64, 0.5f, 0.05f, 0.2f), pos, whole);
    EXPECT_TRUE(v >= 0.5 - 1e-9 || whole) << "pos " << pos << ": " << v;
    kept_by_box_crop += v >= 0.5 - 1e-9;
    whole_images += whole;
    kept_by_rrc +=
        visible(Pipeline(64, 64, 1).random_resized_crop(64, 64, 0.05f, 0.2f), pos, whole) >= 0.5;
  }
  EXPECT_GT(kept_by_box_crop, 150);
  EXPECT_LT(kept_by_rrc, kept_by_box_crop / 2);
  EXPECT_LT(whole_images, 50);
}

TEST(MapBoxes, MirrorsClipsAndDropsByTheRules) {
  // A 2x upscale of x, mirrored in a 100-wide output; y shifted by -10.
  const OutputMap m{-2, 100, 1, -10};
  const SampleBox in[] = {
      {10, 20, 20, 30},     // -> x [60, 80], y [10, 20]
      {45, 20, 60, 30},     // -> x [-20, 10]: clipped to [0, 10]
      {55, 20, 70, 30},     // -> x [-40, -10]: wholly outside
      {10, 10, 20, 10.5f},  // -> 0.5 px high: under min_size
  };
  Box out[4];
  std::uint32_t kept[4];
  ASSERT_EQ(map_boxes(m, 100, 50, BoxRules{}, in, out, kept), 2u);
  EXPECT_EQ(kept[0], 0u);
  EXPECT_FLOAT_EQ(out[0].x1, 60);
  EXPECT_FLOAT_EQ(out[0].x2, 80);
  EXPECT_FLOAT_EQ(out[0].y1, 10);
  EXPECT_FLOAT_EQ(out[0].y2, 20);
  EXPECT_EQ(kept[1], 1u);
  EXPECT_FLOAT_EQ(out[1].x1, 0);
  EXPECT_FLOAT_EQ(out[1].x2, 10);
  // Asking that half of a box stay visible drops the clipped one (a third of it remains).
  BoxRules half;
  half.min_visible = 0.5f;
  ASSERT_EQ(map_boxes(m, 100, 50, half, in, out, kept), 1u);
  EXPECT_EQ(kept[0], 0u);
  // min_area, and the output's capacity.
  BoxRules big;
  big.min_area = 201;
  EXPECT_EQ(map_boxes(m, 100, 50, big, in, out, kept), 0u);
  EXPECT_EQ(map_boxes(m, 100, 50, BoxRules{}, in, std::span<Box>(out, 1), kept), 1u);
}

}  // namespace
}  // namespace stoke::detail
