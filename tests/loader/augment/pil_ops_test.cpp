// timm's ops against Pillow itself: tests/data/pil_golden.bin holds small images, each op of
// ImageOp 30 to 44 at several numbers, AugMix mixes of them, and what timm's op functions (on
// Pillow 13.0) and AugMixAugment's arithmetic returned for each
// (tests/loader/make_pil_golden.py writes it; this test needs neither Pillow nor timm).
#include "augment/pil_ops.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "augment/op_sequence.hpp"
#include "augment/pil_warps.hpp"
#include "golden_harness.hpp"

namespace stoke::detail {
namespace {

using test::FieldReader;
using test::GoldenImage;

struct GoldenCase {
  std::size_t image = 0;
  std::vector<AppliedOp> ops;
  std::vector<std::uint8_t> expected;
};

bool read_case(FieldReader& in, const std::vector<GoldenImage>& images, GoldenCase& c) {
  c.image = in.u32();
  c.ops.resize(in.u32() & 0xff);
  for (AppliedOp& op : c.ops) {
    op.op = static_cast<ImageOp>(in.u32());
    for (float& a : op.args) a = in.f32();
  }
  return test::read_expected(in, images, c);
}

const test::ImageCases<GoldenCase>& golden() {
  static const auto g =
      test::load_image_cases<GoldenCase>("pil_golden.bin", "STPL", "PIL", read_case);
  return g;
}

// The cases with timm's op call; `scratch` is shared by every case, as a worker shares it.
test::ImageOpGolden<GoldenCase> pil_golden(PhotometricScratch& scratch) {
  return {golden(), "Pillow",
          [&scratch](const GoldenCase& c, const Pixels& px) { apply_ops(c.ops, px, scratch); },
          [](const GoldenCase& c) {
            std::string s;
            for (const AppliedOp& op : c.ops) {
              if (!s.empty()) s += " ";
              s += test::op_text(op);
            }
            return s;
          }};
}

// The case's op, or kTimmAugMixChain for a mix.
ImageOp kind_of(const GoldenCase& c) {
  return c.ops.size() == 1 ? c.ops[0].op : ImageOp::kTimmAugMixChain;
}

class PilGolden : public ::testing::TestWithParam<ImageOp> {};

TEST_P(PilGolden, MatchesPillowByteForByte) {
  ASSERT_TRUE(golden().error.empty()) << golden().error;
  PhotometricScratch scratch;
  const ImageOp kind = GetParam();
  const test::GoldenTally t = pil_golden(scratch).expect_matches(
      [kind](const GoldenCase& c) { return kind_of(c) == kind; });
  EXPECT_GT(t.cases, 0);
  std::cout << image_op_name(kind) << ": " << t << "\n";
}

INSTANTIATE_TEST_SUITE_P(Pil, PilGolden,
                         ::testing::Values(ImageOp::kPilAutocontrast, ImageOp::kPilEqualize,
                                           ImageOp::kPilInvert, ImageOp::kPilPosterize,
                                           ImageOp::kPilSolarize, ImageOp::kPilSolarizeAdd,
                                           ImageOp::kPilColor, ImageOp::kPilContrast,
                                           ImageOp::kPilBrightness, ImageOp::kPilSharpness,
                                           ImageOp::kPilRotate, ImageOp::kPilShearX,
                                           ImageOp::kPilShearY, ImageOp::kPilTranslateXRel,
                                           ImageOp::kPilTranslateYRel, ImageOp::kTimmAugMixChain),
                         test::ImageOpName());

// What the golden file must hold for the cases above to mean something: both filters and the
// transposing rotations, 1-channel images, equalize's table past 255, AugMix in both modes and
// after other ops.
TEST(Pil, GoldenFileCoversFiltersTranspositionsAndBothMixes) {
  const test::ImageCases<GoldenCase>& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  std::set<float> filters, square_turns;
  bool gray = false, blended = false, plain = false, mix_after_op = false, overflow = false;
  for (const GoldenCase& c : g.cases) {
    const GoldenImage& im = g.images[c.image];
    gray |= im.channels == 1;
    overflow |= im.width == 600 && kind_of(c) == ImageOp::kPilEqualize;
    for (const AppliedOp& op : c.ops) {
      if (op.op == ImageOp::kPilRotate) {
        filters.insert(op.args[1]);
        if (im.width == im.height && im.width > 1) square_turns.insert(op.args[0]);
      }
      if (op.op == ImageOp::kTimmAugMixChain) (op.args[3] != 0 ? blended : plain) = true;
    }
    mix_after_op |= c.ops.size() > 1 && c.ops[0].op != ImageOp::kTimmAugMixChain;
  }
  EXPECT_EQ(filters, (std::set<float>{2.f, 3.f}));
  for (const float turn : {90.f, -90.f, 180.f, 270.f, 540.f})
    EXPECT_EQ(square_turns.count(turn), 1u) << turn;
  EXPECT_TRUE(gray);
  EXPECT_TRUE(blended);
  EXPECT_TRUE(plain);
  EXPECT_TRUE(mix_after_op);
  EXPECT_TRUE(overflow);
}

// Each case again with 5 bytes after every row: the image gets the bytes it gets without them,
// and the padding keeps its own.
TEST(Pil, LeavesRowPaddingUntouched) {
  ASSERT_TRUE(golden().error.empty()) << golden().error;
  PhotometricScratch scratch;
  pil_golden(scratch).expect_padding_kept(test::kEveryCase, 5, 0x5a,
                                          test::PaddedRows::kLikeTightRows);
}

std::vector<std::uint8_t> apply(const std::vector<AppliedOp>& ops, std::vector<std::uint8_t> bytes,
                                int h, int w, int c) {
  PhotometricScratch scratch;
  apply_ops(ops, Pixels{bytes.data(), h, w, c, static_cast<std::size_t>(w * c)}, scratch);
  return bytes;
}

// Image.rotate's matrix: cos and sin of -radians(angle % 360) rounded to 15 decimals, about the
// centre; the numbers are what Image.rotate's Python lines give (printed with repr).
TEST(Pil, RotateMatrixIsPillowsPythonArithmetic) {
  EXPECT_EQ(pil_rotate_matrix(30.0, 6, 4),
            (std::array<double, 6>{0.866025403784439, -0.5, 1.401923788646683, 0.5,
                                   0.866025403784439, -1.232050807568878}));
  EXPECT_EQ(pil_rotate_matrix(static_cast<double>(-7.3f), 33, 47),
            (std::array<double, 6>{0.991894442167038, 0.127064611903319, -2.852276675484127,
                                   -0.127064611903319, 0.991894442167038, 2.2870467054793693}));
  EXPECT_EQ(pil_rotate_matrix(-30.0, 6, 4), pil_rotate_matrix(330.0, 6, 4));
}

// Pillow 12's ImageOps.posterize table for 0 bits is all zeros (timm's PosterizeIncreasing at
// magnitude 10); 8 bits and more leave the image, as timm's posterize returns it.
TEST(Pil, PosterizeToNoBitsIsBlackAndEightBitsIsIdentity) {
  const std::vector<std::uint8_t> img = {0, 1, 127, 128, 200, 255};
  EXPECT_EQ(apply({{ImageOp::kPilPosterize, {0.f}}}, img, 1, 2, 3), std::vector<std::uint8_t>(6));
  EXPECT_EQ(apply({{ImageOp::kPilPosterize, {-4.f}}}, img, 1, 2, 3), std::vector<std::uint8_t>(6));
  EXPECT_EQ(apply({{ImageOp::kPilPosterize, {8.f}}}, img, 1, 2, 3), img);
  EXPECT_EQ(apply({{ImageOp::kPilPosterize, {1.f}}}, img, 1, 2, 3),
            (std::vector<std::uint8_t>{0, 0, 0, 128, 128, 128}));
}

// A mix's chains start from the image the mix received, whatever ran before them in the chain
// list: a chain of invert and a chain of nothing, weights 1 and 0, blended at m = 1, give the
// inverted image; at m = 0 the input.
TEST(Pil, AugMixChainsStartFromTheMixInput) {
  const std::vector<std::uint8_t> img = {10, 20, 30, 40, 50, 60};
  const std::vector<AppliedOp> mix = {{ImageOp::kTimmAugMixChain, {1.f, 1.f, 0.f, 0.f}},
                                      {ImageOp::kPilInvert},
                                      {ImageOp::kTimmAugMixChain, {0.f, 0.f, 1.f, 0.f}},
                                      {ImageOp::kTimmAugMixBlend, {1.f}}};
  EXPECT_EQ(apply(mix, img, 1, 2, 3), (std::vector<std::uint8_t>{245, 235, 225, 215, 205, 195}));
  std::vector<AppliedOp> none = mix;
  none.back().args[0] = 0.f;
  EXPECT_EQ(apply(none, img, 1, 2, 3), img);
  // A chain that claims more ops than follow takes those there.
  EXPECT_EQ(apply({{ImageOp::kTimmAugMixChain, {1.f, 9.f, 0.f, 1.f}}, {ImageOp::kPilInvert}}, img,
                  1, 2, 3),
            (std::vector<std::uint8_t>{245, 235, 225, 215, 205, 195}));
}

TEST(Pil, NamesEveryOpAsDocsShowIt) {
  const std::vector<std::pair<ImageOp, std::string_view>> names = {
      {ImageOp::kPilAutocontrast, "pil_autocontrast"},
      {ImageOp::kPilEqualize, "pil_equalize"},
      {ImageOp::kPilInvert, "pil_invert"},
      {ImageOp::kPilPosterize, "pil_posterize"},
      {ImageOp::kPilSolarize, "pil_solarize"},
      {ImageOp::kPilSolarizeAdd, "pil_solarize_add"},
      {ImageOp::kPilColor, "pil_color"},
      {ImageOp::kPilContrast, "pil_contrast"},
      {ImageOp::kPilBrightness, "pil_brightness"},
      {ImageOp::kPilSharpness, "pil_sharpness"},
      {ImageOp::kPilRotate, "pil_rotate"},
      {ImageOp::kPilShearX, "pil_shear_x"},
      {ImageOp::kPilShearY, "pil_shear_y"},
      {ImageOp::kPilTranslateXRel, "pil_translate_x_rel"},
      {ImageOp::kPilTranslateYRel, "pil_translate_y_rel"},
      {ImageOp::kTimmAugMixChain, "timm_augmix_chain"},
      {ImageOp::kTimmAugMixBlend, "timm_augmix_blend"}};
  for (const auto& [op, name] : names) {
    EXPECT_EQ(image_op_name(op), name);
    EXPECT_TRUE(is_pil_op(op) == (static_cast<int>(op) <= 44)) << name;
  }
  EXPECT_EQ(image_op_arg_count(ImageOp::kPilRotate), 5);
  EXPECT_EQ(image_op_arg_count(ImageOp::kTimmAugMixChain), 4);
  EXPECT_EQ(image_op_arg_count(ImageOp::kPilSolarizeAdd), 2);
  EXPECT_EQ(image_op_arg_count(ImageOp::kPilInvert), 0);
}

}  // namespace
}  // namespace stoke::detail
