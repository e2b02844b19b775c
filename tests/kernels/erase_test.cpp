// Random erasing's CPU reference against element-by-element expectations written here (which
// elements change, to what, in both layouts and every float type), its noise against
// double-precision Box-Muller and against the standard normal (chi-square), and, in CUDA builds
// on a machine with a GPU, erase_cuda against the CPU reference bit for bit.

#include "stoke/kernels/erase.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "float_chunk.hpp"
#include "stoke/kernels/erase_cuda.hpp"
#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA
#include "../cuda_test_support.hpp"
#endif

namespace stoke::kernels {
namespace {

constexpr std::uint8_t kUntouched = 0xab;

EraseParams params(int samples, int height, int width, int channels, DType dtype, Layout layout,
                   const std::vector<EraseBox>& boxes) {
  EraseParams p =
      float_chunk::chunk_params<EraseParams>(samples, height, width, channels, dtype, layout);
  p.boxes = boxes.data();
  return p;
}

using float_chunk::element;
using float_chunk::encoded;

EraseBox box(int top, int left, int height, int width, EraseMode mode) {
  EraseBox b;
  b.top = top;
  b.left = left;
  b.height = height;
  b.width = width;
  b.mode = mode;
  b.key_lo = 0x12345678u + static_cast<std::uint32_t>(top);
  b.key_hi = 0x9abcdef0u + static_cast<std::uint32_t>(left);
  b.value[0] = -2.5f;
  b.value[1] = 0.1f;
  b.value[2] = 1.75f;
  b.value[3] = 3.0f;
  return b;
}

// What element (n, c, y, x) must hold after erasing (or nothing: untouched).
bool expected_value(const EraseBox& b, int c, int y, int x, float* v) {
  if (b.mode == EraseMode::kNone || y < b.top || y >= b.top + b.height || x < b.left ||
      x >= b.left + b.width)
    return false;
  const int by = y - b.top, bx = x - b.left;
  if (b.mode == EraseMode::kConstant)
    *v = b.value[c];
  else if (b.mode == EraseMode::kChannelNoise)
    *v = erase_noise(b.key_lo, b.key_hi, static_cast<std::uint32_t>(c));
  else
    *v = erase_noise(b.key_lo, b.key_hi,
                     static_cast<std::uint32_t>((c * b.height + by) * b.width + bx));
  return true;
}

std::vector<EraseBox> some_boxes() {
  return {box(1, 2, 3, 4, EraseMode::kConstant), box(0, 0, 7, 9, EraseMode::kPixelNoise),
          box(5, 3, 2, 6, EraseMode::kChannelNoise), box(2, 2, 2, 2, EraseMode::kNone),
          box(6, 8, 1, 1, EraseMode::kPixelNoise)};
}

TEST(EraseCpu, WritesTheRectanglesValuesAndNothingElse) {
  const std::vector<EraseBox> boxes = some_boxes();
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
      for (int channels : {1, 3, 4}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + (layout == Layout::kNCHW ? " NCHW " : " NHWC ") +
                     std::to_string(channels) + " channels");
        const EraseParams p = params(5, 7, 9, channels, t, layout, boxes);
        const std::size_t size = dtype_size(t);
        std::vector<std::uint8_t> out(5 * 7 * 9 * channels * size, kUntouched);
        erase_cpu(p, out.data());
        int changed = 0;
        for (int n = 0; n < 5; ++n)
          for (int c = 0; c < channels; ++c)
            for (int y = 0; y < 7; ++y)
              for (int x = 0; x < 9; ++x) {
                const std::uint8_t* at = out.data() + element(p, n, c, y, x) * size;
                float v = 0;
                if (expected_value(boxes[n], c, y, x, &v)) {
                  ++changed;
                  ASSERT_EQ(std::vector<std::uint8_t>(at, at + size), encoded(t, v))
                      << "sample " << n << " c " << c << " y " << y << " x " << x;
                } else {
                  ASSERT_EQ(std::vector<std::uint8_t>(at, at + size),
                            std::vector<std::uint8_t>(size, kUntouched))
                      << "sample " << n << " c " << c << " y " << y << " x " << x;
                }
              }
        EXPECT_EQ(changed, (12 + 63 + 12 + 1) * channels);
      }
    }
  }
}

TEST(EraseCpu, SkipsBoxesOutsideTheImageOrOfUnknownMode) {
  std::vector<EraseBox> boxes = {
      box(-1, 0, 2, 2, EraseMode::kConstant),
      box(0, 0, 8, 2, EraseMode::kConstant),
      box(0, 8, 1, 2, EraseMode::kConstant),
      box(0, 0, 0, 2, EraseMode::kConstant),
      box(0, 0, 2, 2, static_cast<EraseMode>(9)),
      box(0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, EraseMode::kPixelNoise)};
  const EraseParams p = params(6, 7, 9, 3, DType::kFloat32, Layout::kNCHW, boxes);
  std::vector<std::uint8_t> out(6 * 7 * 9 * 3 * 4, kUntouched);
  erase_cpu(p, out.data());
  EXPECT_EQ(out, std::vector<std::uint8_t>(out.size(), kUntouched));
}

TEST(EraseCpu, RefusesBadParameters) {
  const std::vector<EraseBox> boxes(2);
  const auto message = [&](EraseParams p) -> std::string {
    std::vector<std::uint8_t> out(1024);
    try {
      erase_cpu(p, out.data());
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  EraseParams p = params(2, 4, 4, 3, DType::kFloat32, Layout::kNCHW, boxes);
  p.channels = 5;
  EXPECT_EQ(message(p), "erase: channels must be in 1..4 (got 5)");
  p = params(2, 0, 4, 3, DType::kFloat32, Layout::kNCHW, boxes);
  EXPECT_EQ(message(p), "erase: samples, height and width must be positive (got 2, 0, 4)");
  p = params(2, 4, 4, 3, DType::kUInt8, Layout::kNCHW, boxes);
  EXPECT_EQ(message(p),
            "erase: dtype must be float32, float16 or bfloat16 (uint8 images are erased by the "
            "workers)");
  p = params(2, 4, 4, 3, DType::kFloat32, Layout::kNCHW, boxes);
  p.boxes = nullptr;
  EXPECT_EQ(message(p), "erase: boxes must not be null");
}

// The hash's 48 bits, as erase_noise splits them, through double-precision Box-Muller.
double box_muller(std::uint32_t key_lo, std::uint32_t key_hi, std::uint32_t index) {
  const auto mix = [](std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  const std::uint64_t key = static_cast<std::uint64_t>(key_hi) << 32 | key_lo;
  const std::uint64_t bits = mix(key ^ mix(index));
  const double u1 = static_cast<double>((bits >> 40) + 1) / 16777216.0;
  const double turn = static_cast<double>((bits >> 16) & 0xffffffu) / 16777216.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * turn);
}

TEST(EraseNoise, IsBoxMullerToFloatPrecision) {
  double worst = 0;
  for (std::uint32_t i = 0; i < 200000; ++i) {
    const double want = box_muller(7u, 11u, i);
    const double got = erase_noise(7u, 11u, i);
    worst = std::max(worst, std::fabs(got - want) / std::max(1.0, std::fabs(want)));
  }
  EXPECT_LT(worst, 2e-6);
}

// 400k draws in 40 equiprobable bins of N(0, 1): the chi-square statistic stays below 80.3
// (p = 0.0001 at 39 degrees of freedom; the draws are fixed, so this cannot flake).
TEST(EraseNoise, IsStandardNormal) {
  constexpr int kBins = 40;
  constexpr int kDraws = 400000;
  std::vector<int> count(kBins, 0);
  double sum = 0, sum2 = 0;
  for (std::uint32_t i = 0; i < kDraws; ++i) {
    const double v = erase_noise(0xdeadbeefu, 0x01234567u, i);
    sum += v;
    sum2 += v * v;
    const double cdf = 0.5 * std::erfc(-v / std::numbers::sqrt2);
    count[std::min(kBins - 1, static_cast<int>(cdf * kBins))] += 1;
  }
  const double expected = static_cast<double>(kDraws) / kBins;
  double chi2 = 0;
  for (int n : count) chi2 += (n - expected) * (n - expected) / expected;
  EXPECT_LT(chi2, 80.3);
  EXPECT_NEAR(sum / kDraws, 0.0, 0.01);
  EXPECT_NEAR(sum2 / kDraws, 1.0, 0.01);
  // Different keys give different noise.
  EXPECT_NE(erase_noise(1, 2, 3), erase_noise(1, 3, 3));
  EXPECT_NE(erase_noise(1, 2, 3), erase_noise(2, 2, 3));
}

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA

using test::DeviceBuffer;

TEST(EraseCuda, RefusesBadParametersBeforeTouchingTheDevice) {
  EraseParams p = params(2, 4, 4, 3, DType::kUInt8, Layout::kNCHW, {});
  EXPECT_THROW(erase_cuda(p, nullptr, nullptr), std::invalid_argument);
}

// Every mode, dtype and layout, beside boxes the kernel must skip, with more samples than a
// grid row holds blocks for and a rectangle larger than one block's stride.
TEST(EraseCuda, BitIdenticalToCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  std::mt19937 rng(5);
  std::vector<EraseBox> boxes = some_boxes();
  boxes.push_back(box(0, 0, 64, 96, EraseMode::kPixelNoise));
  boxes.push_back(box(-3, 0, 4, 4, EraseMode::kConstant));
  for (int i = 0; i < 300; ++i) {
    const int h = 1 + static_cast<int>(rng() % 64), w = 1 + static_cast<int>(rng() % 96);
    boxes.push_back(box(static_cast<int>(rng() % (65 - h)), static_cast<int>(rng() % (97 - w)), h,
                        w, static_cast<EraseMode>(rng() % 4)));
  }
  const int samples = static_cast<int>(boxes.size());
  DeviceBuffer d_boxes(boxes.size() * sizeof(EraseBox));
  ASSERT_EQ(cudaMemcpy(d_boxes.get(), boxes.data(), boxes.size() * sizeof(EraseBox),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (layout == Layout::kNCHW ? " NCHW" : " NHWC"));
      EraseParams p = params(samples, 64, 96, 3, t, layout, boxes);
      std::vector<std::uint8_t> expected(std::size_t(samples) * 64 * 96 * 3 * dtype_size(t),
                                         kUntouched);
      erase_cpu(p, expected.data());
      DeviceBuffer d_out(expected.size());
      ASSERT_EQ(cudaMemset(d_out.get(), kUntouched, expected.size()), cudaSuccess);
      p.boxes = static_cast<const EraseBox*>(d_boxes.get());
      erase_cuda(p, d_out.get(), nullptr);
      std::vector<std::uint8_t> got(expected.size());
      ASSERT_EQ(cudaMemcpy(got.data(), d_out.get(), got.size(), cudaMemcpyDeviceToHost),
                cudaSuccess);
      EXPECT_TRUE(got == expected);
    }
  }
}

#endif

}  // namespace
}  // namespace stoke::kernels
