// The geometric ops against torchvision itself: tests/data/geometric_golden.bin holds small
// images, F.affine and F.rotate with the parameters the augmentation policies and RandomAffine
// draw and with parameters that put grid points on a half, and what torchvision returned for
// each (tests/loader/make_geometric_golden.py writes it, and shows that every formula
// geometric_ops.cpp rejects misses some of its bytes; this test needs no torch).
#include "augment/geometric_ops.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "augment/photometric.hpp"
#include "golden_harness.hpp"

namespace stoke::detail {
namespace {

using test::FieldReader;
using test::GoldenImage;

struct GoldenCase {
  std::size_t image = 0;
  AppliedOp op;
  std::string label;  // where the parameters come from
  std::vector<std::uint8_t> expected;
};

bool read_case(FieldReader& in, const std::vector<GoldenImage>& images, GoldenCase& c) {
  c.image = in.u32();
  c.op.op = static_cast<ImageOp>(in.u32());
  for (float& a : c.op.args) a = in.f32();
  c.label = test::read_golden_label(in);
  return test::read_expected(in, images, c);
}

const test::ImageCases<GoldenCase>& golden() {
  static const auto g =
      test::load_image_cases<GoldenCase>("geometric_golden.bin", "STGG", "geometric", read_case);
  return g;
}

// The cases with the op call; `scratch` is shared by every case, as a worker shares it.
test::ImageOpGolden<GoldenCase> geometric_golden(PhotometricScratch& scratch) {
  return {golden(), "torchvision",
          [&scratch](const GoldenCase& c, const Pixels& px) { apply_color_op(c.op, px, scratch); },
          [](const GoldenCase& c) { return test::op_text(c.op) + " [" + c.label + "]"; }};
}

class GeometricGolden : public ::testing::TestWithParam<ImageOp> {};

TEST_P(GeometricGolden, MatchesTorchvisionByteForByte) {
  ASSERT_TRUE(golden().error.empty()) << golden().error;
  PhotometricScratch scratch;
  const ImageOp op = GetParam();
  const test::GoldenTally t =
      geometric_golden(scratch).expect_matches([op](const GoldenCase& c) { return c.op.op == op; });
  EXPECT_GT(t.cases, 0);
  std::cout << image_op_name(op) << ": " << t << "\n";
}

INSTANTIATE_TEST_SUITE_P(Geometric, GeometricGolden,
                         ::testing::Values(ImageOp::kAffine, ImageOp::kAffineAtOrigin,
                                           ImageOp::kRotate),
                         test::ImageOpName());

bool has_label(const std::string& label, const char* part) {
  return label.find(part) != std::string::npos;
}

TEST(Geometric, GoldenFileCoversThePoliciesTheTiesAndBothFills) {
  const test::ImageCases<GoldenCase>& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  bool gray = false, rgb = false, single_pixel = false, width_97 = false, height_97 = false;
  bool trivial = false, rand = false, random = false, fill_0 = false, fill_128 = false;
  for (const GoldenCase& c : g.cases) {
    const GoldenImage& im = g.images[c.image];
    gray |= im.channels == 1;
    rgb |= im.channels == 3;
    single_pixel |= im.height == 1 && im.width == 1;
    // The sizes where only a fused unnormalisation gives torch's first column or row.
    width_97 |= im.width == 97 && has_label(c.label, "fused edge");
    height_97 |= im.height == 97 && has_label(c.label, "fused edge");
    trivial |= has_label(c.label, "TrivialAugmentWide");
    rand |= has_label(c.label, "RandAugment");
    random |= has_label(c.label, "random affine");
    const float fill = c.op.op == ImageOp::kRotate ? c.op.args[1] : c.op.args[6];
    fill_0 |= fill == 0.0f;
    fill_128 |= fill == 128.0f;
  }
  EXPECT_TRUE(gray && rgb && single_pixel);
  EXPECT_TRUE(width_97 && height_97);
  EXPECT_TRUE(trivial && rand && random);
  EXPECT_TRUE(fill_0 && fill_128);
}

// Each case again with 5 bytes after every row: the image gets the bytes it gets without them,
// and the padding keeps its own.
TEST(Geometric, LeavesRowPaddingUntouched) {
  ASSERT_TRUE(golden().error.empty()) << golden().error;
  PhotometricScratch scratch;
  geometric_golden(scratch).expect_padding_kept(test::kEveryCase, 5, 0xa5,
                                                test::PaddedRows::kLikeTightRows);
}

// Every grid value within 64 floats of a half-pixel boundary, on every axis length up to 600:
// the double arithmetic of source_index is one fused multiply-add.
TEST(Geometric, SourceIndexIsOneFusedMultiplyAdd) {
  long checked = 0;
  for (int size = 1; size <= 600; ++size) {
    const float half = 0.5f * static_cast<float>(size);
    for (int k = -1; k <= size; ++k) {
      float g = static_cast<float>((k + 1) / (0.5 * size) - 1.0);
      for (int i = 0; i < 64; ++i) g = std::nextafter(g, -2.0f);
      for (int i = 0; i < 128; ++i, g = std::nextafter(g, 2.0f), ++checked) {
        const float fused = std::nearbyint(std::fma(g + 1.0f, half, -0.5f));
        ASSERT_EQ(source_index(g, half), fused) << "size " << size << ", grid value " << g;
      }
    }
  }
  EXPECT_GT(checked, 20'000'000);
}

// On a width of 97, rounding (g + 1) * 48.5 first gives exactly 1 for this grid value, so 0.5
// and column 0 by ties to even; fused, the value is just past 0.5 and torch reads column 1 (the
// golden file's "fused edge" cases meet it).
TEST(Geometric, SourceIndexFusesWhereRoundingTheProductFirstWouldNot) {
  EXPECT_EQ(source_index(-0x1.f5717cp-1f, 48.5f), 1.0f);
}

std::vector<std::uint8_t> apply(AppliedOp op, std::vector<std::uint8_t> bytes, int h, int w,
                                int c) {
  PhotometricScratch scratch;
  apply_color_op(op, Pixels{bytes.data(), h, w, c, static_cast<std::size_t>(w * c)}, scratch);
  return bytes;
}

// A half-pixel translation puts every point near a half. Where it is exactly a half (widths 3
// and 4: 2 / width and the offsets are exact enough) the point goes to the even column, so
// columns repeat in pairs and half a pixel past the last column is the fill for an even width but
// the last column for an odd one; on a width of 6 float32 rounding moves the points off the half
// and the image shifts by a whole column. These are torch's bytes.
TEST(Geometric, HalfPixelTranslationsRoundPixelByPixel) {
  auto translate = [](float tx) { return AppliedOp{ImageOp::kAffine, {0, tx, 0, 1, 0, 0, 128}}; };
  const std::vector<std::uint8_t> three = {0, 1, 2}, four = {0, 1, 2, 3}, six = {0, 1, 2, 3, 4, 5};
  EXPECT_EQ(apply(translate(0.5f), four, 1, 4, 1), (std::vector<std::uint8_t>{0, 0, 2, 2}));
  EXPECT_EQ(apply(translate(-0.5f), four, 1, 4, 1), (std::vector<std::uint8_t>{0, 2, 2, 128}));
  EXPECT_EQ(apply(translate(-0.5f), three, 1, 3, 1), (std::vector<std::uint8_t>{0, 2, 2}));
  EXPECT_EQ(apply(translate(0.5f), six, 1, 6, 1), (std::vector<std::uint8_t>{0, 0, 1, 2, 3, 4}));
}

TEST(Geometric, RotatingByWholeTurnsLeavesTheImage) {
  std::vector<std::uint8_t> img(5 * 7 * 3);
  for (std::size_t i = 0; i < img.size(); ++i) img[i] = static_cast<std::uint8_t>(i * 29 + 1);
  for (float angle : {0.0f, 360.0f, -360.0f, 720.0f})
    EXPECT_EQ(apply({ImageOp::kRotate, {angle, 128}}, img, 5, 7, 3), img) << angle;
}

TEST(Geometric, NamesEveryOpAsDocsShowIt) {
  EXPECT_EQ(image_op_name(ImageOp::kAffine), "affine");
  EXPECT_EQ(image_op_name(ImageOp::kAffineAtOrigin), "affine_at_origin");
  EXPECT_EQ(image_op_name(ImageOp::kRotate), "rotate");
  EXPECT_EQ(static_cast<int>(ImageOp::kAffine), 13);  // the numbers are a public record
  EXPECT_EQ(static_cast<int>(ImageOp::kAffineAtOrigin), 14);
  EXPECT_EQ(static_cast<int>(ImageOp::kRotate), 15);
}

}  // namespace
}  // namespace stoke::detail
