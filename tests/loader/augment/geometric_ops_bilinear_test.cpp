// The geometric ops with bilinear interpolation, and with torchvision's fill=None, against
// torchvision itself: tests/data/bilinear_golden.bin holds small images, F.affine and F.rotate
// with AugMix's draws, half-pixel ties and draws that tell the rejected formulas apart, and what
// torchvision returned for each (tests/loader/make_bilinear_golden.py writes it, and shows that
// every formula geometric_ops.cpp rejects misses some of its bytes; this test needs no torch).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "augment/geometric_ops.hpp"
#include "augment/photometric.hpp"
#include "golden_file.hpp"

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

struct BilinearGolden {
  std::vector<GoldenImage> images;
  std::vector<BilinearCase> cases;
  std::string error;  // why the file could not be read; empty when it was
};

bool read_case(FieldReader& in, const std::vector<GoldenImage>& images, BilinearCase& c) {
  c.image = in.u32();
  c.op.op = static_cast<ImageOp>(in.u32());
  c.interpolation = in.u32() == 0 ? Interpolation::kNearest : Interpolation::kBilinear;
  for (float& a : c.op.args) a = in.f32();
  c.label = test::read_golden_label(in);
  if (in.failed() || c.image >= images.size()) return false;
  c.expected = in.bytes(images[c.image].bytes.size());
  return !in.failed();
}

BilinearGolden parse(const std::vector<std::uint8_t>& data) {
  return test::parse_image_cases<BilinearGolden>(data, "STGB", "bilinear", read_case);
}

const BilinearGolden& golden() {
  static const BilinearGolden g = test::load_golden<BilinearGolden>("bilinear_golden.bin", parse);
  return g;
}

std::string describe(const BilinearCase& c) {
  const GoldenImage& im = golden().images[c.image];
  std::string args;
  for (float a : c.op.args) args += (args.empty() ? "" : ", ") + std::to_string(a);
  return std::string(image_op_name(c.op.op)) +
         (c.interpolation == Interpolation::kNearest ? " nearest(" : " bilinear(") + args + ") [" +
         c.label + "] on image " + std::to_string(c.image) + " (" + std::to_string(im.height) +
         "x" + std::to_string(im.width) + "x" + std::to_string(im.channels) + ")";
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

// Runs a case on its image laid out with `pad` bytes after each row, filled with `fill`.
std::vector<std::uint8_t> run(const BilinearCase& c, std::size_t pad, std::uint8_t fill,
                              std::vector<std::uint8_t>& copy) {
  const GoldenImage& im = golden().images[c.image];
  const std::size_t line = static_cast<std::size_t>(im.width * im.channels);
  std::vector<std::uint8_t> buf((line + pad) * static_cast<std::size_t>(im.height), fill);
  for (int y = 0; y < im.height; ++y)
    std::memcpy(buf.data() + static_cast<std::size_t>(y) * (line + pad),
                im.bytes.data() + static_cast<std::size_t>(y) * line, line);
  apply(c, Pixels{buf.data(), im.height, im.width, im.channels, line + pad}, copy);
  return buf;
}

TEST(GeometricBilinear, MatchesTorchvisionByteForByte) {
  const BilinearGolden& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  std::vector<std::uint8_t> copy;  // shared by every case, as a worker shares it
  std::size_t bytes = 0, differing = 0;
  for (const BilinearCase& c : g.cases) {
    const std::vector<std::uint8_t> out = run(c, 0, 0, copy);
    bytes += out.size();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < out.size(); ++i) wrong += out[i] != c.expected[i];
    differing += wrong;
    EXPECT_EQ(wrong, 0u) << describe(c);
  }
  EXPECT_GT(g.cases.size(), 100u);
  std::cout << g.cases.size() << " cases, " << bytes << " bytes, " << differing << " differ\n";
}

bool has_label(const std::string& label, const char* part) {
  return label.find(part) != std::string::npos;
}

TEST(GeometricBilinear, GoldenFileCoversEveryOpBothKindsOfFillAndTheSearchedDraws) {
  const BilinearGolden& g = golden();
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

// Each case again with 5 bytes after every row: the image gets the bytes it gets without them,
// and the padding keeps its own.
TEST(GeometricBilinear, LeavesRowPaddingUntouched) {
  const BilinearGolden& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  std::vector<std::uint8_t> copy;
  constexpr std::size_t kPad = 5;
  constexpr std::uint8_t kFill = 0xa5;
  for (const BilinearCase& c : g.cases) {
    const GoldenImage& im = g.images[c.image];
    const std::size_t line = static_cast<std::size_t>(im.width * im.channels);
    const std::vector<std::uint8_t> out = run(c, kPad, kFill, copy);
    for (int y = 0; y < im.height; ++y) {
      const std::uint8_t* r = out.data() + static_cast<std::size_t>(y) * (line + kPad);
      ASSERT_EQ(0, std::memcmp(r, c.expected.data() + static_cast<std::size_t>(y) * line, line))
          << describe(c) << ", row " << y;
      for (std::size_t i = 0; i < kPad; ++i)
        ASSERT_EQ(r[line + i], kFill) << describe(c) << ", row " << y << ": padding written";
    }
  }
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
