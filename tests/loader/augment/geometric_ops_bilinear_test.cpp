// The geometric ops with bilinear interpolation, and with torchvision's fill=None, against
// torchvision itself: tests/data/bilinear_golden.bin holds small images, F.affine and F.rotate
// with AugMix's draws, half-pixel ties and draws that tell the rejected formulas apart, and what
// torchvision returned for each (tests/loader/make_bilinear_golden.py writes it, and shows that
// every formula geometric_ops.cpp rejects misses some of its bytes; this test needs no torch).
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "augment/geometric_ops.hpp"
#include "augment/photometric.hpp"
#include "golden_harness.hpp"

namespace stoke::detail {
namespace {

using test::FieldReader;
using test::GoldenImage;

struct BilinearCase {
  std::size_t image = 0;
  AppliedOp op;
  Interpolation interpolation = Interpolation::kBilinear;
  std::string label;  // where the parameters come from
  std::vector<std::uint8_t> expected;
};

bool read_case(FieldReader& in, const std::vector<GoldenImage>& images, BilinearCase& c) {
  c.image = in.u32();
  c.op.op = static_cast<ImageOp>(in.u32());
  c.interpolation = in.u32() == 0 ? Interpolation::kNearest : Interpolation::kBilinear;
  for (float& a : c.op.args) a = in.f32();
  c.label = test::read_golden_label(in);
  return test::read_expected(in, images, c);
}

const test::ImageCases<BilinearCase>& golden() {
  static const auto g =
      test::load_image_cases<BilinearCase>("bilinear_golden.bin", "STGB", "bilinear", read_case);
  return g;
}

std::string describe(const BilinearCase& c) {
  return test::op_text(c.op) +
         (c.interpolation == Interpolation::kNearest ? " nearest [" : " bilinear [") + c.label +
         "]";
}

void apply(const BilinearCase& c, const Pixels& px, std::vector<std::uint8_t>& copy) {
  switch (c.op.op) {
    case ImageOp::kAffine:
      return affine(px, c.op, AffineCenter::kImage, copy, c.interpolation);
    case ImageOp::kAffineAtOrigin:
      return affine(px, c.op, AffineCenter::kOrigin, copy, c.interpolation);
    case ImageOp::kRotate:
      return rotate(px, c.op, copy, c.interpolation);
    case ImageOp::kShear:
      return policy_shear(px, c.op, copy, c.interpolation);
    default:
      FAIL() << "not a geometric op: " << describe(c);
  }
}

// The cases with the op call; `copy` is shared by every case, as a worker shares it.
test::ImageOpGolden<BilinearCase> bilinear_golden(std::vector<std::uint8_t>& copy) {
  return {golden(), "torchvision",
          [&copy](const BilinearCase& c, const Pixels& px) { apply(c, px, copy); }, describe};
}

TEST(GeometricBilinear, MatchesTorchvisionByteForByte) {
  ASSERT_TRUE(golden().error.empty()) << golden().error;
  std::vector<std::uint8_t> copy;
  const test::GoldenTally t = bilinear_golden(copy).expect_matches(test::kEveryCase);
  EXPECT_GT(t.cases, 100);
  std::cout << t << "\n";
}

bool has_label(const std::string& label, const char* part) {
  return label.find(part) != std::string::npos;
}

TEST(GeometricBilinear, GoldenFileCoversEveryOpBothKindsOfFillAndTheSearchedDraws) {
  const test::ImageCases<BilinearCase>& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  bool gray = false, rgb = false, single_pixel = false, no_fill = false, fill = false;
  bool nearest_no_fill = false, ties = false;
  int searched = 0;
  std::vector<int> ops(17, 0);
  for (const BilinearCase& c : g.cases) {
    const GoldenImage& im = g.images[c.image];
    gray |= im.channels == 1;
    rgb |= im.channels == 3;
    single_pixel |= im.height == 1 && im.width == 1;
    const float level = c.op.op == ImageOp::kRotate  ? c.op.args[1]
                        : c.op.op == ImageOp::kShear ? c.op.args[2]
                                                     : c.op.args[6];
    no_fill |= c.interpolation == Interpolation::kBilinear && level == kNoFill;
    fill |= c.interpolation == Interpolation::kBilinear && level >= 0;
    nearest_no_fill |= c.interpolation == Interpolation::kNearest && level == kNoFill;
    ties |= has_label(c.label, "translate 0.5");
    searched += has_label(c.label, "searched") ? 1 : 0;
    if (has_label(c.label, "AugMix")) ++ops[static_cast<std::size_t>(c.op.op)];
  }
  EXPECT_TRUE(gray && rgb && single_pixel);
  EXPECT_TRUE(no_fill && fill && nearest_no_fill && ties);
  EXPECT_GE(searched, 4);
  for (ImageOp op : {ImageOp::kAffine, ImageOp::kRotate, ImageOp::kShear})
    EXPECT_GT(ops[static_cast<std::size_t>(op)], 0) << image_op_name(op);
}

// Each case again with 5 bytes after every row: the image gets torchvision's bytes, and the
// padding keeps its own.
TEST(GeometricBilinear, LeavesRowPaddingUntouched) {
  ASSERT_TRUE(golden().error.empty()) << golden().error;
  std::vector<std::uint8_t> copy;
  bilinear_golden(copy).expect_padding_kept(test::kEveryCase, 5, 0xa5,
                                            test::PaddedRows::kLikeTheReference);
}

// A translation by a whole number of pixels samples on the grid: every weight is 0 or 1, so the
// pixels move unchanged; the columns uncovered read the fill (fill=None: grid_sample's zeros).
TEST(GeometricBilinear, WholePixelTranslationsMoveBytesUnchanged) {
  std::vector<std::uint8_t> row = {10, 20, 30, 40, 50};
  std::vector<std::uint8_t> copy;
  const auto translated = [&](float tx, float fill) {
    std::vector<std::uint8_t> bytes = row;
    affine(Pixels{bytes.data(), 1, 5, 1, 5}, AppliedOp{ImageOp::kAffine, {0, tx, 0, 1, 0, 0, fill}},
           AffineCenter::kImage, copy, Interpolation::kBilinear);
    return bytes;
  };
  EXPECT_EQ(translated(2, 128), (std::vector<std::uint8_t>{128, 128, 10, 20, 30}));
  EXPECT_EQ(translated(-1, kNoFill), (std::vector<std::uint8_t>{20, 30, 40, 50, 0}));
}

// Half a pixel: each output is the mean of two neighbours, an exact half rounded to even, and
// at the edge half of it is the fill (or 0).
TEST(GeometricBilinear, HalfPixelTranslationsRoundExactHalvesToEven) {
  std::vector<std::uint8_t> bytes = {1, 2, 5, 8};
  std::vector<std::uint8_t> copy;
  affine(Pixels{bytes.data(), 1, 4, 1, 4},
         AppliedOp{ImageOp::kAffine, {0, 0.5f, 0, 1, 0, 0, kNoFill}}, AffineCenter::kImage, copy,
         Interpolation::kBilinear);
  // (0 + 1) / 2, (1 + 2) / 2, (2 + 5) / 2, (5 + 8) / 2: 0.5, 1.5, 3.5, 6.5
  EXPECT_EQ(bytes, (std::vector<std::uint8_t>{0, 2, 4, 6}));
}

}  // namespace
}  // namespace stoke::detail
