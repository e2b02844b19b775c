// random_affine against torchvision itself: tests/data/random_affine_golden.bin holds images,
// label maps and boxes through F.affine with RandomAffine's parameters (its own make_params
// draws, and parameters that put grid points on centres, halves and edges), and torchvision's
// results (tests/loader/make_random_affine_golden.py writes it, and shows that every bilinear
// formula geometric_ops.cpp rejects misses some of its bytes; this test needs no torch).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "augment/geometric_ops.hpp"
#include "augment/photometric.hpp"
#include "golden_file.hpp"

namespace stoke::detail {
namespace {

using test::FieldReader;

struct GoldenImage {
  int height = 0, width = 0, channels = 0;
  std::vector<std::uint8_t> bytes;  // tight rows
};

struct PixelCase {
  std::size_t image = 0;
  AppliedOp op;
  std::string label;
  std::vector<std::uint8_t> expected;
};

struct GoldenMask {
  int height = 0, width = 0, bytes = 1;
  std::vector<std::uint8_t> labels;  // tight rows, native (little-endian) uint16 when 2 bytes
};

struct MaskCase {
  std::size_t mask = 0;
  AppliedOp op;
  std::uint16_t fill = 0;
  std::string label;
  std::vector<std::uint8_t> expected;
};

struct BoxCase {
  int width = 0, height = 0;
  AppliedOp op;
  std::vector<float> in, expected;  // 4 per box
  std::string label;
};

struct Golden {
  std::vector<GoldenImage> images;
  std::vector<PixelCase> pixels;
  std::vector<GoldenMask> masks;
  std::vector<MaskCase> mask_cases;
  std::vector<BoxCase> boxes;
  std::string error;
};

void read_args(FieldReader& in, AppliedOp& op) {
  for (float& a : op.args) a = in.f32();
}

std::string read_label(FieldReader& in) {
  const std::vector<std::uint8_t> label = in.bytes(in.u32() & 0xff);
  return {label.begin(), label.end()};
}

std::vector<float> read_floats(FieldReader& in, std::size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = in.f32();
  return v;
}

Golden fail(const char* why) {
  Golden g;
  g.error = why;
  return g;
}

Golden parse(const std::vector<std::uint8_t>& data) {
  Golden g;
  FieldReader in(data);
  if (in.bytes(4) != std::vector<std::uint8_t>{'S', 'T', 'R', 'A'} || in.u32() != 1)
    return fail("not a version-1 random_affine golden file");
  g.images.resize(in.u32() & 0xff);
  for (GoldenImage& im : g.images) {
    im.height = static_cast<int>(in.u32() & 0xffff);  // small; the masks bound a corrupt size
    im.width = static_cast<int>(in.u32() & 0xffff);
    im.channels = static_cast<int>(in.u32() & 0xf);
    im.bytes = in.bytes(static_cast<std::size_t>(im.height * im.width * im.channels));
  }
  g.pixels.resize(in.u32() & 0xffff);
  for (PixelCase& c : g.pixels) {
    c.image = in.u32();
    c.op.op = static_cast<ImageOp>(in.u32());
    read_args(in, c.op);
    c.label = read_label(in);
    if (in.failed() || c.image >= g.images.size()) return fail("a pixel case is truncated");
    c.expected = in.bytes(g.images[c.image].bytes.size());
  }
  g.masks.resize(in.u32() & 0xff);
  for (GoldenMask& m : g.masks) {
    m.height = static_cast<int>(in.u32() & 0xffff);
    m.width = static_cast<int>(in.u32() & 0xffff);
    m.bytes = static_cast<int>(in.u32() & 0x3);
    m.labels = in.bytes(static_cast<std::size_t>(m.height * m.width * m.bytes));
  }
  g.mask_cases.resize(in.u32() & 0xffff);
  for (MaskCase& c : g.mask_cases) {
    c.mask = in.u32();
    c.op.op = ImageOp::kAffine;
    read_args(in, c.op);
    c.fill = static_cast<std::uint16_t>(in.u32());
    c.label = read_label(in);
    if (in.failed() || c.mask >= g.masks.size()) return fail("a mask case is truncated");
    c.expected = in.bytes(g.masks[c.mask].labels.size());
  }
  g.boxes.resize(in.u32() & 0xffff);
  for (BoxCase& c : g.boxes) {
    c.width = static_cast<int>(in.u32() & 0xffff);
    c.height = static_cast<int>(in.u32() & 0xffff);
    c.op.op = ImageOp::kAffine;
    read_args(in, c.op);
    const std::size_t n = in.u32() & 0xffff;
    c.in = read_floats(in, 4 * n);
    c.expected = read_floats(in, 4 * n);
    c.label = read_label(in);
  }
  if (in.failed()) return fail("truncated");
  if (!in.at_end()) return fail("followed by extra bytes");
  return g;
}

const Golden& golden() {
  static const Golden g = test::load_golden<Golden>("random_affine_golden.bin", parse);
  return g;
}

std::string describe(const AppliedOp& op, const std::string& label) {
  std::string args;
  for (float a : op.args) args += (args.empty() ? "" : ", ") + std::to_string(a);
  return std::string(image_op_name(op.op)) + "(" + args + ") [" + label + "]";
}

// A case on its image laid out with `pad` bytes after each row, filled with `fill`.
std::vector<std::uint8_t> run(const PixelCase& c, std::size_t pad, std::uint8_t fill,
                              PhotometricScratch& scratch) {
  const GoldenImage& im = golden().images[c.image];
  const std::size_t line = static_cast<std::size_t>(im.width * im.channels);
  std::vector<std::uint8_t> buf((line + pad) * static_cast<std::size_t>(im.height), fill);
  for (int y = 0; y < im.height; ++y)
    std::memcpy(buf.data() + static_cast<std::size_t>(y) * (line + pad),
                im.bytes.data() + static_cast<std::size_t>(y) * line, line);
  apply_color_op(c.op, Pixels{buf.data(), im.height, im.width, im.channels, line + pad}, scratch);
  return buf;
}

TEST(RandomAffineGolden, ImagesMatchTorchvisionByteForByte) {
  const Golden& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  PhotometricScratch scratch;
  for (const ImageOp kind : {ImageOp::kAffineBilinear, ImageOp::kAffine}) {
    int cases = 0;
    std::size_t bytes = 0, differing = 0;
    for (const PixelCase& c : g.pixels) {
      if (c.op.op != kind) continue;
      const std::vector<std::uint8_t> out = run(c, 0, 0, scratch);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < out.size(); ++i) wrong += out[i] != c.expected[i];
      EXPECT_EQ(wrong, 0u) << describe(c.op, c.label);
      ++cases;
      bytes += out.size();
      differing += wrong;
    }
    EXPECT_GT(cases, 15);
    std::cout << image_op_name(kind) << ": " << cases << " cases, " << bytes << " bytes, "
              << differing << " differ\n";
  }
}

// The file holds what tells the arithmetic apart: gray and RGB, a single pixel, RandomAffine's
// own draws, the ties, fills of 0, 128, 255 and between levels, the cases the model's search
// kept, 16-bit masks and boxes on the canvas's edges.
TEST(RandomAffineGolden, CoversTheDrawsTheTiesTheFillsAndBothMaskDepths) {
  const Golden& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  bool gray = false, rgb = false, one_pixel = false, draws = false, ties = false, search = false;
  std::set<float> fills;
  for (const PixelCase& c : g.pixels) {
    const GoldenImage& im = g.images[c.image];
    gray |= im.channels == 1;
    rgb |= im.channels == 3;
    one_pixel |= im.height == 1 && im.width == 1;
    draws |= c.label.find("RandomAffine(") != std::string::npos;
    ties |= c.label.find("translate 0.5, 0.5") != std::string::npos;
    search |= c.label.find("search") != std::string::npos;
    fills.insert(c.op.args[6]);
  }
  EXPECT_TRUE(gray && rgb && one_pixel && draws && ties && search);
  EXPECT_TRUE(fills.count(0.f) && fills.count(128.f) && fills.count(255.f) && fills.count(127.5f));
  bool wide = false;
  for (const GoldenMask& m : g.masks) wide |= m.bytes == 2;
  EXPECT_TRUE(wide);
  EXPECT_GE(g.mask_cases.size(), 20u);
  EXPECT_GE(g.boxes.size(), 20u);
}

// Each bilinear case again with 5 bytes after every row: the same image bytes, the padding kept.
TEST(RandomAffineGolden, BilinearLeavesRowPaddingUntouched) {
  const Golden& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  PhotometricScratch scratch;
  constexpr std::size_t kPad = 5;
  for (const PixelCase& c : g.pixels) {
    if (c.op.op != ImageOp::kAffineBilinear) continue;
    const GoldenImage& im = g.images[c.image];
    const std::size_t line = static_cast<std::size_t>(im.width * im.channels);
    const std::vector<std::uint8_t> out = run(c, kPad, 0xa5, scratch);
    for (int y = 0; y < im.height; ++y) {
      const std::uint8_t* r = out.data() + static_cast<std::size_t>(y) * (line + kPad);
      ASSERT_EQ(0, std::memcmp(r, c.expected.data() + static_cast<std::size_t>(y) * line, line))
          << describe(c.op, c.label) << ", row " << y;
      for (std::size_t i = 0; i < kPad; ++i)
        ASSERT_EQ(r[line + i], 0xa5) << describe(c.op, c.label);
    }
  }
}

// RandomAffine(interpolation=BILINEAR, fill={Image: f, Mask: ignore}) on a tv_tensors.Mask:
// every label equal, 8- and 16-bit, through the warp the worker gives masks.
TEST(RandomAffineGolden, MasksMatchTorchvisionLabelForLabel) {
  const Golden& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  std::vector<std::uint8_t> copy;
  std::size_t labels = 0;
  for (const MaskCase& c : g.mask_cases) {
    const GoldenMask& m = g.masks[c.mask];
    std::vector<std::uint8_t> work = m.labels;
    const auto stride = static_cast<std::size_t>(m.width * m.bytes);
    affine_labels(LabelImage{work.data(), m.width, m.height, m.bytes, stride}, c.op, c.fill, copy);
    EXPECT_EQ(work, c.expected) << describe(c.op, c.label) << " on a " << m.height << "x" << m.width
                                << " mask of " << 8 * m.bytes << " bits";
    labels += work.size() / static_cast<std::size_t>(m.bytes);
  }
  std::cout << "masks: " << g.mask_cases.size() << " cases, " << labels << " labels\n";
}

}  // namespace
}  // namespace stoke::detail
