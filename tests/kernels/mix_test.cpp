// MixUp/CutMix's CPU reference against element-by-element expectations written here (which
// elements come from which sample, and MixUp's value rounded product by product as torch's
// mul_/add_ round them), in both layouts and every float type; the float16/bfloat16 loads as
// exact inverses of the stores; and, in CUDA builds on a machine with a GPU, mix_cuda against
// the CPU reference bit for bit.

#include "stoke/kernels/mix.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "float_chunk.hpp"
#include "stoke/kernels/mix_cuda.hpp"
#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA
#include "../cuda_test_support.hpp"
#endif

// The expectations round each product on its own, as the kernels must (the exact-float rule,
// cmake/StokeExactFloat.cmake).

namespace stoke::kernels {
namespace {

MixParams params(int samples, int height, int width, int channels, DType dtype, Layout layout,
                 const std::vector<MixSample>& mix) {
  MixParams p =
      float_chunk::chunk_params<MixParams>(samples, height, width, channels, dtype, layout);
  p.mix = mix.data();
  return p;
}

using float_chunk::element;

float load(DType t, const std::vector<std::uint8_t>& buf, std::size_t i) {
  if (t == DType::kFloat32) {
    float v;
    std::memcpy(&v, buf.data() + i * 4, 4);
    return v;
  }
  std::uint16_t u;
  std::memcpy(&u, buf.data() + i * 2, 2);
  return t == DType::kFloat16 ? half_to_float(u) : bfloat16_to_float(u);
}

float round_to(DType t, float v) {
  if (t == DType::kFloat32) return v;
  return t == DType::kFloat16 ? half_to_float(float_to_half_rn(v))
                              : bfloat16_to_float(float_to_bfloat16_rn(v));
}

// Random values of the type (normalized pixels are a few units either side of 0).
std::vector<std::uint8_t> random_chunk(const MixParams& p, std::uint32_t seed) {
  const std::size_t n = std::size_t(p.samples) * p.height * p.width * p.channels;
  std::vector<std::uint8_t> buf(n * dtype_size(p.dtype));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-2.5f, 2.7f);
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<std::uint8_t> v = float_chunk::encoded(p.dtype, value(rng));
    std::memcpy(buf.data() + i * v.size(), v.data(), v.size());
  }
  return buf;
}

MixSample mixup(int partner, double lambda) {
  MixSample m;
  m.partner = partner;
  m.op = MixOp::kMixUp;
  m.self_weight = static_cast<float>(lambda);
  m.partner_weight = static_cast<float>(1.0 - lambda);
  m.lambda = lambda;
  return m;
}

MixSample cutmix(int partner, int top, int left, int bottom, int right) {
  MixSample m;
  m.partner = partner;
  m.op = MixOp::kCutMix;
  m.top = top;
  m.left = left;
  m.bottom = bottom;
  m.right = right;
  return m;
}

// Six samples: unmixed, MixUp with its predecessor, CutMix boxes (a corner, the whole image,
// an empty one), and entries the kernels must treat as unmixed (a partner outside the chunk, a
// box past the image).
std::vector<MixSample> some_samples() {
  return {MixSample{},
          mixup(0, 0.3141592653589793),
          cutmix(1, 2, 3, 7, 9),
          cutmix(2, 0, 0, 12, 16),
          cutmix(3, 4, 4, 4, 4),
          mixup(9, 0.5),
          cutmix(4, 0, 0, 13, 16)};
}

class MixCpuTest : public ::testing::TestWithParam<std::tuple<DType, Layout>> {};

TEST_P(MixCpuTest, EveryElementComesFromTheRightSamplesWithTorchsRounding) {
  const auto [t, layout] = GetParam();
  const std::vector<MixSample> mix = some_samples();
  const MixParams p = params(static_cast<int>(mix.size()), 12, 16, 3, t, layout, mix);
  const std::vector<std::uint8_t> src = random_chunk(p, 7);
  std::vector<std::uint8_t> dst(src.size(), 0xab);
  mix_cpu(p, src.data(), dst.data());
  int mixed = 0, copied_from_partner = 0;
  for (int n = 0; n < p.samples; ++n) {
    const MixSample& m = mix[static_cast<std::size_t>(n)];
    const MixOp op = effective_op(m, p.samples, p.height, p.width);
    for (int c = 0; c < p.channels; ++c)
      for (int y = 0; y < p.height; ++y)
        for (int x = 0; x < p.width; ++x) {
          const std::size_t at = element(p, n, c, y, x);
          const float self = load(t, src, at);
          float want = self;
          if (op == MixOp::kMixUp) {
            const float other = load(t, src, element(p, m.partner, c, y, x));
            want = round_to(
                t, round_to(t, other * m.partner_weight) + round_to(t, self * m.self_weight));
            mixed += 1;
          } else if (op == MixOp::kCutMix && y >= m.top && y < m.bottom && x >= m.left &&
                     x < m.right) {
            want = load(t, src, element(p, m.partner, c, y, x));
            copied_from_partner += 1;
          }
          const float got = load(t, dst, at);
          ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << "sample " << n << " c" << c << " y" << y
                                                    << " x" << x << ": " << got << " != " << want;
        }
  }
  EXPECT_EQ(mixed, 12 * 16 * 3);                                     // sample 1 only
  EXPECT_EQ(copied_from_partner, (5 * 6 + 12 * 16) * 3);             // samples 2 and 3
  EXPECT_EQ(effective_op(mix[5], p.samples, 12, 16), MixOp::kNone);  // partner 9 of 7
}

INSTANTIATE_TEST_SUITE_P(MixCpu, MixCpuTest,
                         ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16,
                                                              DType::kBFloat16),
                                            ::testing::Values(Layout::kNCHW, Layout::kNHWC)),
                         [](const auto& param_info) {
                           return std::string(dtype_name(std::get<0>(param_info.param))) +
                                  (std::get<1>(param_info.param) == Layout::kNCHW ? "Nchw"
                                                                                  : "Nhwc");
                         });

TEST(MixCpu, MixUpOfFloat32IsTwoRoundedProductsAndARoundedSum) {
  // 0.1 * 0.7 + 0.3 * 0.9 where a fused multiply-add would round once less.
  std::vector<MixSample> mix = {mixup(1, 0.7), mixup(0, 0.7)};
  const MixParams p = params(2, 1, 1, 1, DType::kFloat32, Layout::kNCHW, mix);
  const float src[2] = {0.1f, 0.3f};
  float dst[2] = {};
  mix_cpu(p, src, dst);
  volatile float a = 0.3f * static_cast<float>(1.0 - 0.7);
  volatile float b = 0.1f * static_cast<float>(0.7);
  EXPECT_EQ(dst[0], a + b);
  EXPECT_FLOAT_EQ(dst[1], 0.3f * 0.7f + 0.1f * 0.3f);
}

TEST(MixCpu, HalfAndBfloat16LoadsAreExactInversesOfTheStores) {
  for (std::uint32_t u = 0; u < 0x10000u; ++u) {
    const auto h = static_cast<std::uint16_t>(u);
    const float f = half_to_float(h);
    if (std::isnan(f)) {
      EXPECT_EQ(u & 0x7c00u, 0x7c00u);
      EXPECT_NE(u & 0x3ffu, 0u);
      continue;
    }
    ASSERT_EQ(float_to_half_rn(f), h) << "half " << u;
    const float g = bfloat16_to_float(h);
    if (!std::isnan(g)) {
      ASSERT_EQ(float_to_bfloat16_rn(g), h) << "bfloat16 " << u;
    }
  }
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xfbff), -65504.0f);
}

TEST(MixCpu, RefusesBadParametersNamingThem) {
  std::vector<MixSample> mix = {MixSample{}};
  const float src[4] = {}, dst[4] = {};
  MixParams p = params(1, 2, 2, 1, DType::kUInt8, Layout::kNCHW, mix);
  try {
    mix_cpu(p, src, const_cast<float*>(dst));
    FAIL() << "uint8 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dtype must be float32, float16 or bfloat16"),
              std::string::npos)
        << e.what();
  }
  p.dtype = DType::kFloat32;
  p.mix = nullptr;
  EXPECT_THROW(mix_cpu(p, src, const_cast<float*>(dst)), std::invalid_argument);
  p.mix = mix.data();
  p.channels = 5;
  EXPECT_THROW(mix_cpu(p, src, const_cast<float*>(dst)), std::invalid_argument);
}

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA
using test::DeviceBuffer;

TEST(MixCuda, RefusesBadParametersBeforeTouchingTheDevice) {
  std::vector<MixSample> mix = {MixSample{}};
  MixParams p = params(1, 4, 4, 3, DType::kUInt8, Layout::kNCHW, mix);
  EXPECT_THROW(mix_cuda(p, nullptr, nullptr, nullptr), std::invalid_argument);
}

// Every mode, dtype and layout, beside entries the kernel must treat as unmixed, with more
// samples than a grid row holds blocks for.
TEST(MixCuda, BitIdenticalToCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  std::mt19937 rng(11);
  std::vector<MixSample> mix = some_samples();
  for (int i = 0; i < 200; ++i) {
    const int partner = static_cast<int>(rng() % 220);
    if (rng() % 3 == 0) {
      mix.push_back(mixup(partner, std::uniform_real_distribution<double>(0, 1)(rng)));
    } else {
      const int t = static_cast<int>(rng() % 40), l = static_cast<int>(rng() % 60);
      mix.push_back(cutmix(partner, t, l, t + static_cast<int>(rng() % (41 - t)),
                           l + static_cast<int>(rng() % (61 - l))));
    }
  }
  const int samples = static_cast<int>(mix.size());
  DeviceBuffer d_mix(mix.size() * sizeof(MixSample));
  ASSERT_EQ(
      cudaMemcpy(d_mix.get(), mix.data(), mix.size() * sizeof(MixSample), cudaMemcpyHostToDevice),
      cudaSuccess);
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (layout == Layout::kNCHW ? " NCHW" : " NHWC"));
      MixParams p = params(samples, 40, 60, 3, t, layout, mix);
      const std::vector<std::uint8_t> src = random_chunk(p, 3);
      std::vector<std::uint8_t> expected(src.size());
      mix_cpu(p, src.data(), expected.data());
      DeviceBuffer d_src(src.size()), d_out(src.size());
      ASSERT_EQ(cudaMemcpy(d_src.get(), src.data(), src.size(), cudaMemcpyHostToDevice),
                cudaSuccess);
      p.mix = static_cast<const MixSample*>(d_mix.get());
      mix_cuda(p, d_src.get(), d_out.get(), nullptr);
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
