// random_affine against torchvision itself: tests/data/random_affine_golden.bin holds images,
// label maps and boxes through F.affine with RandomAffine's parameters (its own make_params
// draws, and parameters that put grid points on centres, halves and edges), and torchvision's
// results (tests/loader/make_random_affine_golden.py writes it, and shows that every bilinear
// formula geometric_ops.cpp rejects misses some of its bytes; this test needs no torch). Then the
// step's vocabulary, its draws, and where the augmenter runs it and how boxes follow.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <string>
#include <vector>

#include "augment/augment.hpp"
#include "augment/boxes.hpp"
#include "augment/geometric_ops.hpp"
#include "augment/masks.hpp"
#include "augment/photometric.hpp"
#include "augment/steps/step_def.hpp"
#include "golden_harness.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

using test::FieldReader;
using test::GoldenImage;

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

// The images and their cases, then the masks, their cases and the boxes.
struct Golden : test::ImageCases<PixelCase> {
  std::vector<GoldenMask> masks;
  std::vector<MaskCase> mask_cases;
  std::vector<BoxCase> boxes;
};

void read_args(FieldReader& in, AppliedOp& op) {
  for (float& a : op.args) a = in.f32();
}

std::vector<float> read_floats(FieldReader& in, std::size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = in.f32();
  return v;
}

bool read_case(FieldReader& in, const std::vector<GoldenImage>& images, PixelCase& c) {
  c.image = in.u32();
  c.op.op = static_cast<ImageOp>(in.u32());
  read_args(in, c.op);
  c.label = test::read_golden_label(in);
  return test::read_expected(in, images, c);
}

// What follows the image cases; why it could not be read, or "".
std::string read_masks_and_boxes(FieldReader& in, Golden& g) {
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
    c.label = test::read_golden_label(in);
    if (in.failed() || c.mask >= g.masks.size()) return "a mask case is truncated";
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
    c.label = test::read_golden_label(in);
  }
  return in.failed() ? "truncated" : "";
}

const Golden& golden() {
  static const Golden g =
      test::load_golden<Golden>("random_affine_golden.bin", [](const std::vector<std::uint8_t>& d) {
        return test::parse_image_cases<Golden>(d, "STRA", "random_affine", read_case,
                                               read_masks_and_boxes);
      });
  return g;
}

std::string describe(const AppliedOp& op, const std::string& label) {
  return test::op_text(op) + " [" + label + "]";
}

// The image cases with the op call; `scratch` is shared by every case, as a worker shares it.
test::ImageOpGolden<PixelCase> pixel_golden(PhotometricScratch& scratch) {
  return {golden(), "torchvision",
          [&scratch](const PixelCase& c, const Pixels& px) { apply_color_op(c.op, px, scratch); },
          [](const PixelCase& c) { return describe(c.op, c.label); }};
}

TEST(RandomAffineGolden, ImagesMatchTorchvisionByteForByte) {
  ASSERT_TRUE(golden().error.empty()) << golden().error;
  PhotometricScratch scratch;
  for (const ImageOp kind : {ImageOp::kAffineBilinear, ImageOp::kAffine}) {
    const test::GoldenTally t = pixel_golden(scratch).expect_matches(
        [kind](const PixelCase& c) { return c.op.op == kind; });
    EXPECT_GT(t.cases, 15);
    std::cout << image_op_name(kind) << ": " << t << "\n";
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
  for (const PixelCase& c : g.cases) {
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
  ASSERT_TRUE(golden().error.empty()) << golden().error;
  PhotometricScratch scratch;
  pixel_golden(scratch).expect_padding_kept(
      [](const PixelCase& c) { return c.op.op == ImageOp::kAffineBilinear; }, 5, 0xa5,
      test::PaddedRows::kLikeTheReference);
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

// F.affine on tv_tensors.BoundingBoxes: the box around the four moved corners, clamped to the
// canvas, within 1e-3 px of torchvision's float32 result, through the worker's box path (one
// warp, no map around it).
TEST(RandomAffineGolden, BoxesMatchTorchvisionWithinAThousandthOfAPixel) {
  const Golden& g = golden();
  ASSERT_TRUE(g.error.empty()) << g.error;
  double worst = 0;
  std::size_t boxes = 0;
  for (const BoxCase& c : g.boxes) {
    const OutputMap same{1, 0, 1, 0, c.width, c.height};
    const Warp warp{same, c.op, c.width, c.height};
    for (std::size_t k = 0; k < c.in.size(); k += 4) {
      const SampleBox b{c.in[k], c.in[k + 1], c.in[k + 2], c.in[k + 3], 0};
      const MovedBox m = move_box({&warp, 1}, same, b);
      const double got[4] = {m.x1, m.y1, m.x2, m.y2};
      for (int e = 0; e < 4; ++e) {
        const double d = std::abs(got[e] - c.expected[k + e]);
        worst = std::max(worst, d);
        EXPECT_LT(d, 1e-3) << describe(c.op, c.label) << ", box " << k / 4 << ", edge " << e;
      }
      ++boxes;
    }
  }
  EXPECT_GT(boxes, 500u);
  std::cout << "boxes: " << boxes << ", largest difference " << worst << " px\n";
}

// --- The step -------------------------------------------------------------------------------

std::string error_of(const std::string& text) {
  try {
    make_pipeline(64, 64, 3, parse_steps(text)).validate(0, 0);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(RandomAffineStep, TextBuildsWhatTheMethodBuilds) {
  const Pipeline p = make_pipeline(
      64, 64, 3,
      parse_steps("random_resized_crop 64 64 | random_affine 15 | random_affine -5 10 0.1 0.2 "
                  "0.9 1.1 -8 8 -4 4 128 | random_affine_bilinear 0 30 0.3 0 | horizontal_flip"));
  Pipeline q(64, 64, 3);
  q.random_resized_crop(64, 64).random_affine(15.f);
  q.random_affine(RandomAffineRanges{.degrees_min = -5,
                                     .degrees_max = 10,
                                     .translate_x = 0.1f,
                                     .translate_y = 0.2f,
                                     .scale_min = 0.9f,
                                     .scale_max = 1.1f,
                                     .shear_x_min = -8,
                                     .shear_x_max = 8,
                                     .shear_y_min = -4,
                                     .shear_y_max = 4,
                                     .fill = 128});
  q.random_affine(RandomAffineRanges{.degrees_min = 0,
                                     .degrees_max = 30,
                                     .translate_x = 0.3f,
                                     .interpolation = Interpolation::kBilinear});
  q.horizontal_flip();
  EXPECT_EQ(p.describe(), q.describe());
  EXPECT_EQ(p.max_applied_ops(), 3);
  EXPECT_NE(p.describe().find("random_affine degrees [-15, 15] translate [0, 0] scale [1, 1] shear "
                              "x [0, 0] y [0, 0] nearest fill 0\nrandom_affine degrees [-5, 10] "
                              "translate [0.1, 0.2] scale [0.9, 1.1] shear x [-8, 8] y [-4, 4] "
                              "nearest fill 128\nrandom_affine degrees [0, 30] translate [0.3, 0] "
                              "scale [1, 1] shear x [0, 0] y [0, 0] bilinear fill 0\n"),
            std::string::npos)
      << p.describe();
  EXPECT_EQ(error_of("random_resized_crop 64 64 | random_affine 15 | horizontal_flip"), "no error");
  EXPECT_TRUE(works_in_place(StepKind::kRandomAffine));
  EXPECT_FALSE(is_photometric(StepKind::kRandomAffine) || is_policy(StepKind::kRandomAffine));
  EXPECT_EQ(static_cast<int>(StepKind::kRandomAffine), 22);  // public numbers
  EXPECT_EQ(static_cast<int>(ImageOp::kAffineBilinear), 20);
  EXPECT_EQ(image_op_name(ImageOp::kAffineBilinear), "affine_bilinear");
}

TEST(RandomAffineStep, BadNumbersAreNamed) {
  EXPECT_EQ(error_of("random_affine -3"),
            "random_affine: a single degrees is the range [-degrees, degrees] and must be >= 0, "
            "got -3");
  EXPECT_EQ(error_of("random_affine 10 5"),
            "random_affine: degrees must satisfy -360 <= min <= max <= 360, got [10, 5]");
  EXPECT_EQ(error_of("random_affine 0 400"),
            "random_affine: degrees must satisfy -360 <= min <= max <= 360, got [0, 400]");
  EXPECT_EQ(error_of("random_affine 0 0 1.5 0"),
            "random_affine: translate_x must be a fraction of the side in [0, 1], got 1.5");
  EXPECT_EQ(error_of("random_affine 0 0 0 -0.1"),
            "random_affine: translate_y must be a fraction of the side in [0, 1], got -0.1");
  EXPECT_EQ(error_of("random_affine 0 0 0 0 0 1"),
            "random_affine: scale must satisfy 0 < min <= max <= 100, got [0, 1]");
  EXPECT_EQ(error_of("random_affine 0 0 0 0 1.2 1.1"),
            "random_affine: scale must satisfy 0 < min <= max <= 100, got [1.2, 1.1]");
  EXPECT_EQ(error_of("random_affine 0 0 0 0 1 1 -90 10"),
            "random_affine: shear x must satisfy -90 < min <= max < 90, got [-90, 10]");
  EXPECT_EQ(error_of("random_affine 0 0 0 0 1 1 0 0 5 95"),
            "random_affine: shear y must satisfy -90 < min <= max < 90, got [5, 95]");
  EXPECT_EQ(error_of("random_affine 0 0 0 0 1 1 0 0 0 0 256"),
            "random_affine: fill must be a level in [0, 255], got 256");
  EXPECT_EQ(error_of("random_affine nan"),
            "random_affine: a single degrees is the range [-degrees, degrees] and must be >= 0, "
            "got nan");
  const std::string counts =
      "pipeline step random_affine takes (degrees) or (degrees_min, degrees_max[, translate_x, "
      "translate_y[, scale_min, scale_max[, shear_x_min, shear_x_max[, shear_y_min, "
      "shear_y_max[, fill]]]]]), got ";
  EXPECT_EQ(error_of("random_affine"), counts + "0 number(s)");
  EXPECT_EQ(error_of("random_affine 10 0.1 0.1"), counts + "3 number(s)");
  EXPECT_EQ(error_of("random_affine 1 2 3 4 5 6 7 8 9 10 11 12"), counts + "12 number(s)");
  EXPECT_THROW(Pipeline(8, 8, 3).random_affine(
                   RandomAffineRanges{.interpolation = static_cast<Interpolation>(7)}),
               ConfigError);
}

// random_affine keeps the size, so it may stand anywhere; after a policy too (both in place).
TEST(RandomAffineStep, MayStandBeforeAndAfterCropsResizesFlipsAndPolicies) {
  EXPECT_EQ(error_of("random_affine 10 | random_resized_crop 64 64"), "no error");
  EXPECT_EQ(error_of("resize 80 80 | random_affine 10 | center_crop 64 64 | vertical_flip"),
            "no error");
  EXPECT_EQ(error_of("resize 64 64 | trivial_augment_wide | random_affine 10 | invert"),
            "no error");
  EXPECT_EQ(error_of("resize 80 80 | random_affine 10"),
            "pipeline: the steps produce 80x80 images but the output is 64x64; add a crop or "
            "resize to the output size");
}

std::vector<AppliedOp> draws(const Pipeline& p, std::int64_t position, int height, int width) {
  const Step s = p.steps().back();
  SampleRng rng(7, kSampleStream, 0, position);
  std::vector<AppliedOp> out;
  draw_pixel_ops(s, rng, height, width, out);
  return out;
}

// RandomAffine.make_params: every number in its range; translations whole pixels of
// int(round(u)) with u uniform in [-0.5 * 5, 0.5 * 5] = [-2.5, 2.5], so each of -2..2 equally
// likely (round half to even gives +-2.5 to +-2); the y shear 0 without its range; the op is
// the interpolation's.
TEST(RandomAffineStep, DrawsAsRandomAffineMakesItsParameters) {
  Pipeline p(5, 5, 3);
  p.random_affine(RandomAffineRanges{.degrees_min = -20,
                                     .degrees_max = 10,
                                     .translate_x = 0.5f,
                                     .translate_y = 0.2f,
                                     .scale_min = 0.8f,
                                     .scale_max = 1.2f,
                                     .shear_x_min = -6,
                                     .shear_x_max = 9,
                                     .fill = 77});
  constexpr int kDraws = 50000;
  std::vector<long> tx(5, 0), angle_bins(10, 0);
  double scale_sum = 0, shear_sum = 0;
  for (int i = 0; i < kDraws; ++i) {
    const std::vector<AppliedOp> ops = draws(p, i, 50, 5);
    ASSERT_EQ(ops.size(), 1u);
    const AppliedOp& op = ops[0];
    ASSERT_EQ(op.op, ImageOp::kAffine);
    const float* a = op.args;
    ASSERT_TRUE(a[0] >= -20 && a[0] <= 10) << a[0];
    ASSERT_EQ(a[1], std::round(a[1]));
    ASSERT_TRUE(a[1] >= -2 && a[1] <= 2) << a[1];
    ASSERT_EQ(a[2], std::round(a[2]));
    ASSERT_TRUE(a[2] >= -10 && a[2] <= 10) << a[2];  // 0.2 of a height of 50
    ASSERT_TRUE(a[3] >= 0.8f && a[3] <= 1.2f) << a[3];
    ASSERT_TRUE(a[4] >= -6 && a[4] <= 9) << a[4];
    ASSERT_EQ(a[5], 0.f);
    ASSERT_EQ(a[6], 77.f);
    ++tx[static_cast<std::size_t>(a[1] + 2)];
    ++angle_bins[std::min<std::size_t>(9, static_cast<std::size_t>((a[0] + 20) / 3))];
    scale_sum += a[3];
    shear_sum += a[4];
  }
  // Chi-square at p = 0.01: 13.28 for 4 degrees of freedom, 21.67 for 9.
  double chi_tx = 0, chi_angle = 0;
  for (const long n : tx) chi_tx += (n - kDraws / 5.0) * (n - kDraws / 5.0) / (kDraws / 5.0);
  for (const long n : angle_bins)
    chi_angle += (n - kDraws / 10.0) * (n - kDraws / 10.0) / (kDraws / 10.0);
  EXPECT_LT(chi_tx, 13.28);
  EXPECT_LT(chi_angle, 21.67);
  EXPECT_NEAR(scale_sum / kDraws, 1.0, 0.002);
  EXPECT_NEAR(shear_sum / kDraws, 1.5, 0.06);

  // RandomAffine(degrees) alone: no translation, scale 1, no shears; bilinear names its op.
  Pipeline plain(8, 8, 3), bilinear(8, 8, 3);
  plain.random_affine(30.f);
  bilinear.random_affine(RandomAffineRanges{.degrees_min = 5,
                                            .degrees_max = 5,
                                            .shear_y_min = -3,
                                            .shear_y_max = -3,
                                            .interpolation = Interpolation::kBilinear});
  for (int i = 0; i < 100; ++i) {
    const AppliedOp a = draws(plain, i, 8, 8).at(0);
    EXPECT_TRUE(a.args[0] >= -30 && a.args[0] <= 30);
    EXPECT_TRUE(a.args[1] == 0 && a.args[2] == 0 && a.args[3] == 1 && a.args[4] == 0 &&
                a.args[5] == 0 && a.args[6] == 0);
    const AppliedOp b = draws(bilinear, i, 8, 8).at(0);
    EXPECT_EQ(b.op, ImageOp::kAffineBilinear);
    EXPECT_TRUE(b.args[0] == 5 && b.args[4] == 0 && b.args[5] == -3);
  }
}

// --- Where the augmenter runs it --------------------------------------------------------------

cv::Mat pattern(int h, int w) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * 3; ++x)
      m.ptr<std::uint8_t>(y)[x] = static_cast<std::uint8_t>((y * 29 + x * 11 + 3) ^ (x * y));
  return m;
}

struct Produced {
  cv::Mat out;
  std::vector<AppliedOp> ops;
  std::vector<Warp> warps;
  OutputMap after, map;
};

Produced run(const Pipeline& p, const cv::Mat& src, std::int64_t position) {
  Produced r{cv::Mat(p.output_height(), p.output_width(), CV_8UC3), {}, {}, {}, {}};
  const std::vector<Step> steps = p.steps();
  Augmenter a;
  SampleRng rng(13, kSampleStream, 0, position);
  a.run(steps.data(), static_cast<int>(steps.size()),
        ImageRef{src.data, src.rows, src.cols, 3, src.step[0], false}, rng, r.out.data, r.out.rows,
        r.out.cols, 3);
  r.ops.assign(a.applied_ops().begin(), a.applied_ops().end());
  r.warps.assign(a.warps().begin(), a.warps().end());
  r.after = a.map_after_warps();
  r.map = a.output_map();
  return r;
}

cv::Mat warped(cv::Mat m, const AppliedOp& op) {
  m = m.clone();
  PhotometricScratch scratch;
  apply_color_op(op, Pixels{m.data, m.rows, m.cols, 3, m.step[0]}, scratch);
  return m;
}

// The op the pipeline's random_affine recorded, with a different fill each time so that the
// warps show.
const AppliedOp& warp_op(const Produced& r) {
  for (const AppliedOp& op : r.ops)
    if (op.op == ImageOp::kAffine || op.op == ImageOp::kAffineBilinear) return op;
  ADD_FAILURE() << "no warp recorded";
  return r.ops.front();
}

// Last in the pipeline, after the crop and a flip, the warp acts on the output as written
// (mirrored first); a flip after it mirrors the warped image; a resize after it reads the warped
// image; the flips before a warp that runs early are the image's. Each time the bytes are the
// pipeline without the warp, then the recorded op (the golden-proven F.affine) where it stands.
TEST(RandomAffineStep, TheAugmenterWarpsTheImageWhereThePipelinePutsIt) {
  const cv::Mat src = pattern(45, 61);
  const RandomAffineRanges r{.degrees_min = -25,
                             .degrees_max = 25,
                             .translate_x = 0.1f,
                             .translate_y = 0.1f,
                             .scale_min = 0.8f,
                             .scale_max = 1.2f,
                             .shear_x_min = -10,
                             .shear_x_max = 10,
                             .fill = 200};
  RandomAffineRanges bilinear = r;
  bilinear.interpolation = Interpolation::kBilinear;
  for (std::int64_t pos = 0; pos < 12; ++pos) {
    for (const RandomAffineRanges& ranges : {r, bilinear}) {
      // After a crop and a flip: the warp on the written output.
      Pipeline base(32, 40, 3), last(32, 40, 3);
      base.random_resized_crop(32, 40).horizontal_flip(0.5f);
      last.random_resized_crop(32, 40).horizontal_flip(0.5f).random_affine(ranges);
      const Produced b = run(base, src, pos), l = run(last, src, pos);
      ASSERT_EQ(l.ops.size(), 1u);
      EXPECT_EQ(cv::norm(l.out, warped(b.out, l.ops[0]), cv::NORM_INF), 0) << pos;
      ASSERT_EQ(l.warps.size(), 1u);
      EXPECT_EQ(l.map.sx, b.map.sx);  // the geometry leaves the warp out
      EXPECT_EQ(l.map.tx, b.map.tx);

      // Before a flip that always applies: mirror(warp(image)).
      Pipeline before_flip(32, 40, 3), crop_only(32, 40, 3);
      crop_only.random_resized_crop(32, 40);
      before_flip.random_resized_crop(32, 40).random_affine(ranges).horizontal_flip(1.f);
      const Produced c = run(crop_only, src, pos), f = run(before_flip, src, pos);
      cv::Mat expected;
      cv::flip(warped(c.out, warp_op(f)), expected, 1);
      EXPECT_EQ(cv::norm(f.out, expected, cv::NORM_INF), 0) << pos;

      // A flip, the warp, then a resize: resize(warp(mirror(source))).
      Pipeline early(30, 33, 3);
      early.horizontal_flip(1.f).vertical_flip(1.f).random_affine(ranges).resize(30, 33);
      const Produced e = run(early, src, pos);
      cv::Mat mirrored, resized;
      cv::flip(src, mirrored, -1);
      cv::resize(warped(mirrored, warp_op(e)), resized, cv::Size(33, 30), 0, 0, cv::INTER_LINEAR);
      EXPECT_EQ(cv::norm(e.out, resized, cv::NORM_INF), 0) << pos;
      ASSERT_EQ(e.warps.size(), 1u);
      EXPECT_EQ(e.warps[0].width, 61);  // the warp acted on the whole source
      EXPECT_EQ(e.warps[0].before.sx, -1.0);
      EXPECT_EQ(e.warps[0].before.tx, 61.0);
    }
  }
}

// The bright rectangle of boxes_test, warped: the box around its moved corners lies within a
// pixel of where the bright pixels land, whenever the moved rectangle stays inside the output
// (outside, clipping the box around the corners is not the bright region's box).
TEST(RandomAffineStep, BoxesFollowTheWarpedPixels) {
  constexpr int kW = 200, kH = 160;
  cv::Mat scene(kH, kW, CV_8UC3, cv::Scalar(0, 0, 0));
  scene(cv::Rect(50, 40, 70, 60)).setTo(cv::Scalar(255, 255, 255));
  const SampleBox rect{50, 40, 120, 100, 0};
  Pipeline p(96, 96, 3);
  p.random_resized_crop(96, 96, 0.5f, 1.0f)
      .horizontal_flip(0.5f)
      .random_affine(RandomAffineRanges{.degrees_min = -30,
                                        .degrees_max = 30,
                                        .translate_x = 0.1f,
                                        .translate_y = 0.1f,
                                        .scale_min = 0.7f,
                                        .scale_max = 1.0f,
                                        .shear_x_min = -10,
                                        .shear_x_max = 10});
  const std::vector<Step> steps = p.steps();
  int checked = 0;
  for (std::int64_t pos = 0; pos < 120; ++pos) {
    Augmenter a;
    a.set_boxes({&rect, 1});
    cv::Mat out(96, 96, CV_8UC3);
    SampleRng rng(3, kSampleStream, 0, pos);
    a.run(steps.data(), static_cast<int>(steps.size()),
          ImageRef{scene.data, kH, kW, 3, scene.step[0], false}, rng, out.data, 96, 96, 3);
    MovedBox free;
    move_box(a.warps(), a.map_after_warps(), rect, &free);
    if (free.x1 < 1 || free.y1 < 1 || free.x2 > 95 || free.y2 > 95) continue;
    // Inside, the crop may still have cut the rectangle before the warp: compare with the box
    // torchvision's rules give (clipped before and after the warp).
    Box mapped[1];
    std::uint32_t kept[1];
    ASSERT_EQ(
        map_boxes(a.warps(), a.map_after_warps(), 96, 96, BoxRules{}, {&rect, 1}, mapped, kept),
        1u);
    int x1 = 96, y1 = 96, x2 = -1, y2 = -1;
    for (int y = 0; y < 96; ++y)
      for (int x = 0; x < 96; ++x)
        if (out.at<cv::Vec3b>(y, x)[0] >= 128)
          x1 = std::min(x1, x), y1 = std::min(y1, y), x2 = std::max(x2, x), y2 = std::max(y2, y);
    ASSERT_GE(x2, 0) << pos;
    EXPECT_NEAR(mapped[0].x1, x1, 1.5) << pos;
    EXPECT_NEAR(mapped[0].y1, y1, 1.5) << pos;
    EXPECT_NEAR(mapped[0].x2, x2 + 1, 1.5) << pos;
    EXPECT_NEAR(mapped[0].y2, y2 + 1, 1.5) << pos;
    ++checked;
  }
  EXPECT_GT(checked, 30);
}

// torchvision's order of clips: a box the crop cut to a line on the image's edge, turned, comes
// back as a box around that line (kept when it reaches min_size); the free box counts the part
// the warp moved out for min_visible.
TEST(RandomAffineStep, BoxesAreClippedBeforeAndAfterEachWarp) {
  const OutputMap crop{1, -100, 1, 0, 300, 100};  // a 100-wide window from x = 100
  const AppliedOp turn{ImageOp::kAffine, {90, 0, 0, 1, 0, 0, 0}};
  const Warp warp{crop, turn, 100, 100};
  const OutputMap same{1, 0, 1, 0, 100, 100};
  const SampleBox cut_away{10, 20, 60, 40, 0};  // left of the window: the line x = 0, y 20..40
  // A quarter turn clockwise about (50, 50) sends (x, y) to (100 - y, x): the line stays a line,
  // and min_size drops it.
  const MovedBox m = move_box({&warp, 1}, same, cut_away);
  EXPECT_NEAR(m.x1, 60, 1e-9);
  EXPECT_NEAR(m.x2, 80, 1e-9);
  EXPECT_NEAR(m.y1, 0, 1e-9);
  EXPECT_NEAR(m.y2, 0, 1e-9);
  Box out[1];
  std::uint32_t kept[1];
  EXPECT_EQ(map_boxes({&warp, 1}, same, 100, 100, BoxRules{}, {&cut_away, 1}, out, kept), 0u);
  // Turned by 45 degrees, the line's box is about 14 x 8 px inside the image: kept, as
  // torchvision keeps it, unless min_visible asks for some of the moved box.
  const AppliedOp tilt{ImageOp::kAffine, {45, 0, 0, 1, 0, 0, 0}};
  const Warp tilted{crop, tilt, 100, 100};
  ASSERT_EQ(map_boxes({&tilted, 1}, same, 100, 100, BoxRules{}, {&cut_away, 1}, out, kept), 1u);
  EXPECT_NEAR(out[0].x1, 50 - 40 / std::sqrt(2.0), 1e-4);
  EXPECT_NEAR(out[0].x2, 50 - 20 / std::sqrt(2.0), 1e-4);
  EXPECT_NEAR(out[0].y1, 0, 1e-4);
  EXPECT_NEAR(out[0].y2, 40 / std::sqrt(2.0) - (50 * std::sqrt(2.0) - 50), 1e-4);
  BoxRules some;
  some.min_visible = 0.1f;
  EXPECT_EQ(map_boxes({&tilted, 1}, same, 100, 100, some, {&cut_away, 1}, out, kept), 0u);
  // A box a third out of the window, turned by 45 degrees: kept, but not with min_visible 0.9
  // (the box around its clipped part is 0.64 of the box around all of it).
  const SampleBox half{80, 30, 140, 70, 0};
  EXPECT_EQ(map_boxes({&tilted, 1}, same, 100, 100, BoxRules{}, {&half, 1}, out, kept), 1u);
  BoxRules most;
  most.min_visible = 0.9f;
  EXPECT_EQ(map_boxes({&tilted, 1}, same, 100, 100, most, {&half, 1}, out, kept), 0u);
}

// Masks through a crop, a warp and a resize: the label map at each stage is what map_mask and
// the warp give it, and labels stay labels (never a blend), with mask_ignore where the warp
// uncovers the image.
TEST(RandomAffineStep, MasksGoThroughEachStageByNearestNeighbour) {
  constexpr int kW = 9, kH = 7;
  std::vector<std::uint8_t> labels(kW * kH);
  for (int i = 0; i < kW * kH; ++i)
    labels[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  const OutputMap crop{1, -1, 1, -1, kW, kH};  // a 7x4 window from (1, 1)
  const AppliedOp turn{ImageOp::kAffineBilinear, {90, 0, 0, 1, 0, 0, 0}};
  const Warp warp{crop, turn, 7, 4};
  const OutputMap twice{2, 0, 2, 0, 7, 4};
  std::vector<std::uint8_t> out(14 * 8);
  map_mask({&warp, 1}, twice, LabelMap{labels.data(), kW, kH, 1, kW}, 14, 8, 1, 250, out.data());
  // The stage by hand: the window's labels, warped (nearest, fill 250), doubled.
  std::vector<std::uint8_t> stage(7 * 4);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 7; ++x)
      stage[static_cast<std::size_t>(y * 7 + x)] =
          labels[static_cast<std::size_t>((y + 1) * kW + x + 1)];
  std::vector<std::uint8_t> copy;
  affine_labels(LabelImage{stage.data(), 7, 4, 1, 7}, turn, 250, copy);
  int ignored = 0;
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 14; ++x) {
      const std::uint8_t want = stage[static_cast<std::size_t>((y / 2) * 7 + x / 2)];
      EXPECT_EQ(out[static_cast<std::size_t>(y * 14 + x)], want) << y << "," << x;
      ignored += want == 250;
    }
  EXPECT_GT(ignored, 0);  // a quarter turn of a 7x4 image uncovers bands at its sides
  EXPECT_EQ(last_source_row({&warp, 1}, twice, 8, kH), 4);
  // 16-bit labels with an ignore above 255 keep it through an 8-bit source.
  std::vector<std::uint16_t> wide(14 * 8);
  map_mask({&warp, 1}, twice, LabelMap{labels.data(), kW, kH, 1, kW}, 14, 8, 2, 65535, wide.data());
  for (std::size_t i = 0; i < wide.size(); ++i)
    EXPECT_EQ(wide[i], out[i] == 250 ? 65535 : out[i]) << i;
}

}  // namespace
}  // namespace stoke::detail
