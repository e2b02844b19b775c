// The ops whose loops are compiled twice (baseline x86-64 and AVX2 + FMA, cpu_features.hpp)
// give the same bytes either way: each op on random images of awkward sizes (odd widths that
// leave a vector loop's tail, a row or a column alone, 1 and 3 channels, padded rows), once with
// the AVX2 loops and once with baseline_loops_only() set. Where this CPU has no AVX2 both runs
// take the baseline loops and the test says so.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "augment/photometric.hpp"
#include "cpu_features.hpp"

namespace stoke::detail {
namespace {

struct Image {
  int height, width, channels;
  std::size_t stride;
  std::vector<std::uint8_t> bytes;
  Pixels pixels() { return Pixels{bytes.data(), height, width, channels, stride}; }
};

// Smooth gradients with noise, so that blends, tables and filters see every kind of value.
Image random_image(int height, int width, int channels, std::mt19937& rng) {
  Image im{height, width, channels, static_cast<std::size_t>(width * channels + 5), {}};
  im.bytes.resize(im.stride * static_cast<std::size_t>(height));
  std::uniform_int_distribution<int> noise(-40, 40);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width * channels; ++x)
      im.bytes[static_cast<std::size_t>(y) * im.stride + static_cast<std::size_t>(x)] =
          static_cast<std::uint8_t>(std::clamp((x * 7 + y * 3) % 256 + noise(rng), 0, 255));
  return im;
}

// The op's bytes with the AVX2 loops and with the baseline ones.
std::pair<std::vector<std::uint8_t>, std::vector<std::uint8_t>> both_compilations(
    const AppliedOp& op, const Image& source, Interpolation interpolation) {
  PhotometricScratch scratch;
  Image fast = source, baseline = source;
  apply_color_op(op, fast.pixels(), scratch, interpolation);
  baseline_loops_only().store(true);
  apply_color_op(op, baseline.pixels(), scratch, interpolation);
  baseline_loops_only().store(false);
  return {fast.bytes, baseline.bytes};
}

struct Case {
  std::string name;
  AppliedOp op;
  Interpolation interpolation = Interpolation::kNearest;
};

std::vector<Case> cases() {
  const float fill = 60.f;
  return {
      {"brightness", {ImageOp::kBrightness, {1.3f}}},
      {"contrast", {ImageOp::kContrast, {0.6f}}},
      {"saturation", {ImageOp::kSaturation, {1.7f}}},
      {"saturation_down", {ImageOp::kSaturation, {0.2f}}},
      {"hue", {ImageOp::kHue, {0.21f}}},
      {"grayscale", {ImageOp::kGrayscale}},
      {"sharpness", {ImageOp::kSharpness, {1.9f}}},
      {"equalize", {ImageOp::kEqualize}},
      {"autocontrast", {ImageOp::kAutocontrast}},
      {"gaussian_blur", {ImageOp::kGaussianBlur, {5.f, 3.f, 1.3f}}},
      {"pil_color", {ImageOp::kPilColor, {1.4f}}},
      {"pil_contrast", {ImageOp::kPilContrast, {0.7f}}},
      {"pil_brightness", {ImageOp::kPilBrightness, {1.2f}}},
      {"pil_sharpness", {ImageOp::kPilSharpness, {1.8f}}},
      {"pil_autocontrast", {ImageOp::kPilAutocontrast}},
      {"pil_equalize", {ImageOp::kPilEqualize}},
      {"pil_solarize_add", {ImageOp::kPilSolarizeAdd, {55.f, 128.f}}},
      {"affine", {ImageOp::kAffine, {17.f, 3.f, -4.f, 1.2f, 5.f, -7.f, fill}}},
      {"affine_no_fill", {ImageOp::kAffine, {-33.f, 0.f, 2.f, 0.9f, 0.f, 12.f, kNoFill}}},
      {"rotate", {ImageOp::kRotate, {30.f, fill}}},
      {"shear", {ImageOp::kShear, {0.3f, 0.f, fill}}},
      {"rotate_bilinear", {ImageOp::kRotate, {-20.f, kNoFill}}, Interpolation::kBilinear},
      {"pil_rotate_bilinear", {ImageOp::kPilRotate, {30.f, 2.f, 124.f, 116.f, 104.f}}},
      {"pil_rotate_bicubic", {ImageOp::kPilRotate, {-23.f, 3.f, 124.f, 116.f, 104.f}}},
      {"pil_shear_x_bicubic", {ImageOp::kPilShearX, {0.3f, 3.f, 124.f, 116.f, 104.f}}},
      {"pil_shear_y_bilinear", {ImageOp::kPilShearY, {-0.2f, 2.f, 1.f, 2.f, 3.f}}},
      {"pil_translate_x_rel_bicubic", {ImageOp::kPilTranslateXRel, {0.31f, 3.f, 9.f, 8.f, 7.f}}},
      {"pil_translate_y_rel_bilinear", {ImageOp::kPilTranslateYRel, {-0.17f, 2.f, 9.f, 8.f, 7.f}}},
  };
}

TEST(SimdLoops, TheAvx2AndBaselineLoopsGiveTheSameBytes) {
  if (!has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2 + FMA: only the baseline loops run";
  std::mt19937 rng(7);
  const int sizes[][2] = {{1, 1}, {1, 9}, {9, 1}, {2, 3}, {5, 7}, {23, 37}, {64, 64}, {97, 131}};
  int compared = 0;
  for (const Case& c : cases()) {
    for (const auto& hw : sizes) {
      for (int channels : {1, 3}) {
        const Image source = random_image(hw[0], hw[1], channels, rng);
        const auto [fast, baseline] = both_compilations(c.op, source, c.interpolation);
        int differ = 0;
        for (std::size_t i = 0; i < fast.size(); ++i) differ += fast[i] != baseline[i];
        EXPECT_EQ(differ, 0) << c.name << " on " << hw[0] << "x" << hw[1] << "x" << channels;
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, static_cast<int>(cases().size()) * 16);
}

// The per-pixel colour ops see all 2^24 colours once (a 4096 x 4096 image of every RGB triple):
// the AVX2 loops take every one as the baseline loop does.
TEST(SimdLoops, EveryColourGivesTheSameBytesBothWays) {
  if (!has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2 + FMA: only the baseline loops run";
  Image all{4096, 4096, 3, 4096 * 3, {}};
  all.bytes.resize(all.stride * 4096);
  for (std::uint32_t v = 0; v < (1u << 24); ++v) {
    all.bytes[3 * v] = static_cast<std::uint8_t>(v >> 16);
    all.bytes[3 * v + 1] = static_cast<std::uint8_t>(v >> 8);
    all.bytes[3 * v + 2] = static_cast<std::uint8_t>(v);
  }
  const AppliedOp ops[] = {{ImageOp::kHue, {-0.37f}},
                           {ImageOp::kSaturation, {1.3f}},
                           {ImageOp::kGrayscale},
                           {ImageOp::kPilColor, {0.6f}}};
  for (const AppliedOp& op : ops) {
    const auto [fast, baseline] = both_compilations(op, all, Interpolation::kNearest);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < fast.size(); ++i) differ += fast[i] != baseline[i];
    EXPECT_EQ(differ, 0u) << image_op_name(op.op);
  }
}

}  // namespace
}  // namespace stoke::detail
