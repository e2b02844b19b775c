// The normalize CPU reference against a naive scalar implementation written here (same fma
// sequence, independent index math and an independent double-based float16/bfloat16 rounding),
// the float16/bfloat16 conversions against known bit patterns, and, in CUDA builds on a machine
// with a GPU, normalize_cuda against the CPU reference.

#include "stoke/kernels/normalize.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_features.hpp"
#include "stoke/kernels/normalize_cuda.hpp"
#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA
#include "../cuda_test_support.hpp"
#endif

namespace stoke::kernels {
namespace {

float from_bits(std::uint32_t b) {
  return std::bit_cast<float>(b);
}
std::uint32_t to_bits(float f) {
  return std::bit_cast<std::uint32_t>(f);
}

// Independent oracle: round |f| to `mant_bits` fraction bits with nearbyint (ties to even in the
// default rounding mode) in double, where every step is exact.
std::uint16_t oracle_round(float f, int mant_bits, int bias, int max_exp, std::uint16_t inf,
                           std::uint16_t nan) {
  if (std::isnan(f)) return nan;
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (std::isinf(a)) return sign | inf;
  const int min_exp = 1 - bias;
  int e = 0;
  std::frexp(a, &e);
  e -= 1;                         // a = 1.m * 2^e
  if (a == 0.0 || e < min_exp) {  // subnormal range: units of 2^(min_exp - mant_bits)
    const double q = std::nearbyint(std::ldexp(a, mant_bits - min_exp));
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(q));  // q == 2^m: normal
  }
  double q = std::nearbyint(std::ldexp(a, mant_bits - e));
  if (q == std::ldexp(1.0, mant_bits + 1)) {
    q = std::ldexp(1.0, mant_bits);
    ++e;
  }
  if (e > max_exp) return sign | inf;
  const auto frac = static_cast<std::uint32_t>(q) - (1u << mant_bits);
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(e + bias) << mant_bits) |
                                    frac);
}
std::uint16_t oracle_half(float f) {
  return oracle_round(f, 10, 15, 15, 0x7c00, 0x7fff);
}
std::uint16_t oracle_bf16(float f) {
  return oracle_round(f, 7, 127, 127, 0x7f80, 0x7fff);
}

// ---------------------------------------------------------------- float16

TEST(FloatToHalf, KnownBitPatterns) {
  EXPECT_EQ(float_to_half_rn(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_rn(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_rn(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_rn(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_rn(0.1f), 0x2e66);
  EXPECT_EQ(float_to_half_rn(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_rn(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(float_to_half_rn(65520.0f), 0x7c00);  // tie between 65504 and 2^16: to even = inf
  EXPECT_EQ(float_to_half_rn(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_half_rn(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half_rn(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half_rn(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(float_to_half_rn(std::numeric_limits<float>::quiet_NaN()), 0x7fff);
  EXPECT_EQ(float_to_half_rn(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half_rn(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_rn(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(float_to_half_rn(std::ldexp(1023.0f, -24)), 0x03ff);  // largest subnormal
  EXPECT_EQ(float_to_half_rn(std::ldexp(1.0f, -25)), 0x0000);     // tie between 0 and 2^-24
  EXPECT_EQ(float_to_half_rn(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half_rn(std::ldexp(3.0f, -25)), 0x0002);     // tie 1|2 -> 2 (even)
  EXPECT_EQ(float_to_half_rn(std::ldexp(5.0f, -25)), 0x0002);     // tie 2|3 -> 2 (even)
  EXPECT_EQ(float_to_half_rn(std::ldexp(2047.0f, -25)), 0x0400);  // tie 0x3ff|0x400 -> 0x400
  EXPECT_EQ(float_to_half_rn(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(float_to_half_rn(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(float_to_half_rn(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie -> even
  EXPECT_EQ(float_to_half_rn(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);
  EXPECT_EQ(float_to_half_rn(2047.0f / 1024.0f + std::ldexp(1.0f, -11)), 0x4000);  // carry
}

// Every finite half value, the float midpoints between neighbours and one float ulp either side.
TEST(FloatToHalf, AllHalfValuesAndMidpointsRoundToNearestEven) {
  for (std::uint32_t sign : {0u, 0x8000u}) {
    for (std::uint32_t h = 0; h < 0x7c00; ++h) {
      // Decode h exactly.
      const std::uint32_t e = h >> 10, m = h & 0x3ff;
      const float lo = e == 0 ? std::ldexp(static_cast<float>(m), -24)
                              : std::ldexp(static_cast<float>(m | 0x400), static_cast<int>(e) - 25);
      const float s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(float_to_half_rn(s * lo), sign | h) << "h=" << h;
      const std::uint32_t next = h + 1;  // 0x7c00 for the last one: its value is 2^16
      const std::uint32_t ne = next >> 10, nm = next & 0x3ff;
      const float hi = ne == 0
                           ? std::ldexp(static_cast<float>(nm), -24)
                           : std::ldexp(static_cast<float>(nm | 0x400), static_cast<int>(ne) - 25);
      const float mid = lo + (hi - lo) / 2;  // exact: halves have 11 significant bits
      const std::uint32_t even = (h & 1) ? next : h;
      ASSERT_EQ(float_to_half_rn(s * mid), sign | even) << "h=" << h;
      ASSERT_EQ(float_to_half_rn(s * std::nextafter(mid, 0.0f)), sign | h) << "h=" << h;
      ASSERT_EQ(float_to_half_rn(s * std::nextafter(mid, 1e30f)), sign | next) << "h=" << h;
    }
  }
}

TEST(FloatToHalf, MatchesDoubleOracleAcrossFloatBitPatterns) {
  for (std::uint64_t b = 0; b <= 0xffffffffu; b += 251) {
    const float f = from_bits(static_cast<std::uint32_t>(b));
    ASSERT_EQ(float_to_half_rn(f), oracle_half(f)) << std::hex << "bits=0x" << b;
  }
}

// ---------------------------------------------------------------- bfloat16

TEST(FloatToBFloat16, KnownBitPatterns) {
  EXPECT_EQ(float_to_bfloat16_rn(0.0f), 0x0000);
  EXPECT_EQ(float_to_bfloat16_rn(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bfloat16_rn(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16_rn(-1.5f), 0xbfc0);
  EXPECT_EQ(float_to_bfloat16_rn(from_bits(0x40490fdb)), 0x4049);  // pi
  EXPECT_EQ(float_to_bfloat16_rn(from_bits(0x3f808000)), 0x3f80);  // tie, even below
  EXPECT_EQ(float_to_bfloat16_rn(from_bits(0x3f818000)), 0x3f82);  // tie, odd below -> up
  EXPECT_EQ(float_to_bfloat16_rn(from_bits(0x3f808001)), 0x3f81);
  EXPECT_EQ(float_to_bfloat16_rn(from_bits(0x3f807fff)), 0x3f80);
  EXPECT_EQ(float_to_bfloat16_rn(from_bits(0xbf818000)), 0xbf82);
  EXPECT_EQ(float_to_bfloat16_rn(from_bits(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(float_to_bfloat16_rn(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(float_to_bfloat16_rn(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(float_to_bfloat16_rn(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bfloat16_rn(std::numeric_limits<float>::quiet_NaN()), 0x7fff);
  EXPECT_EQ(float_to_bfloat16_rn(from_bits(0xffc00001)), 0x7fff);
  EXPECT_EQ(float_to_bfloat16_rn(from_bits(0x00008000)), 0x0000);  // subnormal tie -> 0
  EXPECT_EQ(float_to_bfloat16_rn(from_bits(0x00018000)), 0x0002);
}

TEST(FloatToBFloat16, MatchesDoubleOracleAcrossFloatBitPatterns) {
  for (std::uint64_t b = 0; b <= 0xffffffffu; b += 251) {
    const float f = from_bits(static_cast<std::uint32_t>(b));
    ASSERT_EQ(float_to_bfloat16_rn(f), oracle_bf16(f)) << std::hex << "bits=0x" << b;
  }
  for (std::uint32_t hi = 0; hi < 0x7f80; ++hi) {  // every finite positive bfloat16 and its ties
    for (std::uint32_t lo : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      const float f = from_bits(hi << 16 | lo);
      ASSERT_EQ(float_to_bfloat16_rn(f), oracle_bf16(f)) << std::hex << "bits=0x" << to_bits(f);
    }
  }
}

// ---------------------------------------------------------------- dtype names

TEST(DTypeNames, RoundTripAndSizes) {
  for (DType t : {DType::kUInt8, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  }
  EXPECT_STREQ(dtype_name(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_size(DType::kUInt8), 1u);
  EXPECT_EQ(dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DType::kFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
}

TEST(DTypeNames, ParseRejectsUnknownNamesListingTheValidOnes) {
  for (const char* bad : {"", "fp16", "Float32", "float64", "bf16"}) {
    try {
      parse_dtype(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("float32, float16, bfloat16"), std::string::npos) << what;
    }
  }
}

// ---------------------------------------------------------------- validation

NormalizeParams valid_params() {
  NormalizeParams p;
  p.samples = 2;
  p.height = 6;
  p.width = 8;
  p.channels = 3;
  return p;
}

// Expects validate(p) to throw std::invalid_argument whose message contains `needle`.
void expect_invalid(const NormalizeParams& p, const std::string& needle) {
  try {
    validate(p);
    ADD_FAILURE() << "validate accepted params; expected an error containing '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message '" << e.what() << "' lacks '" << needle << "'";
  }
}

TEST(NormalizeValidate, AcceptsValidParamsAndComputesOutputBytes) {
  NormalizeParams p = valid_params();
  EXPECT_NO_THROW(validate(p));
  EXPECT_EQ(normalized_bytes(p), 2u * 3 * 6 * 8 * 4);
  p.dtype = DType::kBFloat16;
  p.crop_y = 1;
  p.crop_x = 2;
  p.out_height = 4;
  p.out_width = 5;
  EXPECT_NO_THROW(validate(p));
  EXPECT_EQ(normalized_bytes(p), 2u * 3 * 4 * 5 * 2);
  p.out_height = 0;  // the rest of the image below crop_y
  p.out_width = 0;
  EXPECT_NO_THROW(validate(p));
  EXPECT_EQ(normalized_bytes(p), 2u * 3 * 5 * 6 * 2);
}

TEST(NormalizeValidate, NamesTheProblem) {
  auto with = [](auto edit) {
    NormalizeParams p = valid_params();
    edit(p);
    return p;
  };
  expect_invalid(with([](NormalizeParams& p) { p.samples = 0; }),
                 "samples must be positive (got 0)");
  expect_invalid(with([](NormalizeParams& p) { p.height = -1; }), "height must be positive");
  expect_invalid(with([](NormalizeParams& p) { p.width = 0; }), "width must be positive");
  expect_invalid(with([](NormalizeParams& p) { p.channels = 0; }),
                 "channels must be in 1..4 (got 0)");
  expect_invalid(with([](NormalizeParams& p) { p.channels = 5; }),
                 "channels must be in 1..4 (got 5)");
  expect_invalid(with([](NormalizeParams& p) {
                   p.crop_y = 3;
                   p.out_height = 4;
                 }),
                 "crop window rows [3, 7) is outside the image rows [0, 6)");
  expect_invalid(with([](NormalizeParams& p) { p.crop_x = -1; }), "crop window columns [-1, ");
  expect_invalid(with([](NormalizeParams& p) { p.crop_x = 8; }), "crop window columns");
  expect_invalid(with([](NormalizeParams& p) { p.out_width = -2; }), "out_width must be >= 0");
  expect_invalid(with([](NormalizeParams& p) { p.dtype = DType::kUInt8; }),
                 "dtype uint8 is not a normalize target");
  expect_invalid(with([](NormalizeParams& p) { p.stddev[2] = 0.0f; }),
                 "stddev[2] must be finite and nonzero");
  expect_invalid(with([](NormalizeParams& p) { p.mean[0] = std::nanf(""); }),
                 "mean[0] must be finite");
  // Only the first `channels` entries matter.
  EXPECT_NO_THROW(validate(with([](NormalizeParams& p) { p.stddev[3] = 0.0f; })));
}

TEST(NormalizeCpu, RejectsInvalidParamsAndNullBuffers) {
  NormalizeParams p = valid_params();
  std::vector<std::uint8_t> src(2 * 6 * 8 * 3);
  std::vector<float> dst(2 * 6 * 8 * 3);
  EXPECT_THROW(normalize_cpu(p, nullptr, dst.data()), std::invalid_argument);
  EXPECT_THROW(normalize_cpu(p, src.data(), nullptr), std::invalid_argument);
  p.dtype = DType::kUInt8;
  EXPECT_THROW(normalize_cpu(p, src.data(), dst.data()), std::invalid_argument);
}

// ---------------------------------------------------------------- normalize vs naive

// Written independently of the library: explicit loops in output order, index math from the
// definition, the same fma sequence, and the double-based rounding oracles above.
std::vector<unsigned char> naive_normalize(const NormalizeParams& p,
                                           const std::vector<std::uint8_t>& src) {
  const int oh = p.out_height ? p.out_height : p.height - p.crop_y;
  const int ow = p.out_width ? p.out_width : p.width - p.crop_x;
  const std::size_t esize = p.dtype == DType::kFloat32 ? 4 : 2;
  std::vector<unsigned char> out(static_cast<std::size_t>(p.samples) * p.channels * oh * ow *
                                 esize);
  for (int n = 0; n < p.samples; ++n) {
    for (int c = 0; c < p.channels; ++c) {
      const float scale = 1.0f / p.stddev[c];
      const float bias = -p.mean[c] * scale;
      for (int y = 0; y < oh; ++y) {
        for (int x = 0; x < ow; ++x) {
          const bool flip = p.flip != nullptr && p.flip[n] != 0;
          const int sy = p.crop_y + y;
          const int sx = flip ? p.crop_x + ow - 1 - x : p.crop_x + x;
          const std::uint8_t in =
              src[((static_cast<std::size_t>(n) * p.height + sy) * p.width + sx) * p.channels + c];
          const float v = std::fma(static_cast<float>(in), scale, bias);
          const std::size_t o =
              p.layout == Layout::kNCHW
                  ? ((static_cast<std::size_t>(n) * p.channels + c) * oh + y) * ow + x
                  : ((static_cast<std::size_t>(n) * oh + y) * ow + x) * p.channels + c;
          if (p.dtype == DType::kFloat32) {
            std::memcpy(&out[o * 4], &v, 4);
          } else {
            const std::uint16_t h = p.dtype == DType::kFloat16 ? oracle_half(v) : oracle_bf16(v);
            std::memcpy(&out[o * 2], &h, 2);
          }
        }
      }
    }
  }
  return out;
}

struct Coefficients {
  const char* name;
  float mean[4];
  float stddev[4];
};
// ImageNet (typical, with a fourth channel), plus coefficients that push float16 into overflow
// and subnormals.
const Coefficients kCoefficients[] = {
    {"imagenet",
     {0.485f * 255, 0.456f * 255, 0.406f * 255, 0.5f * 255},
     {0.229f * 255, 0.224f * 255, 0.225f * 255, 0.25f * 255}},
    {"extreme", {0.0f, 127.5f, -3.0f, 255.0f}, {0.0031f, 1.0e5f, -7.3f, 3.0e4f}},
};

// Image size and crop window. The output widths (23, 13, 223, 7, 1) are not multiples of the GPU
// kernel's 4 or 8 outputs per thread, and the crops start at odd columns, so rows start at every
// alignment and end in cut groups.
struct Shape {
  const char* name;
  int height, width, crop_y, crop_x, out_height, out_width;
};
const Shape kShapes[] = {
    {"17x23", 17, 23, 0, 0, 0, 0}, {"crop 11x13 of 17x23", 17, 23, 3, 5, 11, 13},
    {"5x223", 5, 223, 0, 0, 0, 0}, {"crop 4x223 of 6x230", 6, 230, 1, 3, 4, 223},
    {"4x7", 4, 7, 0, 0, 0, 0},     {"crop 3x7 of 5x9", 5, 9, 1, 1, 3, 7},
    {"3x1", 3, 1, 0, 0, 0, 0},     {"crop 2x1 of 4x5", 4, 5, 1, 3, 2, 1},
};

struct Case {
  NormalizeParams params;
  std::vector<std::uint8_t> src;
  std::vector<std::uint8_t> flips;
  std::string name;
};

// Fills p's coefficients from k and makes random pixels (with 0 and 255 among them) for p's input.
std::vector<std::uint8_t> random_input(NormalizeParams& p, const Coefficients& k,
                                       std::mt19937& rng) {
  for (int c = 0; c < p.channels; ++c) {
    p.mean[c] = k.mean[c];
    p.stddev[c] = k.stddev[c];
  }
  std::vector<std::uint8_t> src(static_cast<std::size_t>(p.samples) * p.height * p.width *
                                p.channels);
  for (auto& b : src) b = static_cast<std::uint8_t>(rng());
  src[0] = 0;
  src[1] = 255;
  return src;
}

// Every combination of dtype x layout x channels {1, 3, 4} x shape x flip x coefficients.
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  std::mt19937 rng(1234);
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
      for (int channels : {1, 3, 4}) {
        for (const Shape& shape : kShapes) {
          for (bool flip : {false, true}) {
            for (const Coefficients& k : kCoefficients) {
              Case t;
              NormalizeParams& p = t.params;
              p.samples = 3;
              p.height = shape.height;
              p.width = shape.width;
              p.channels = channels;
              p.crop_y = shape.crop_y;
              p.crop_x = shape.crop_x;
              p.out_height = shape.out_height;
              p.out_width = shape.out_width;
              p.dtype = dtype;
              p.layout = layout;
              t.src = random_input(p, k, rng);
              if (flip) t.flips = {1, 0, 1};
              t.name = std::string(dtype_name(dtype)) +
                       (layout == Layout::kNCHW ? " NCHW" : " NHWC") +
                       " c=" + std::to_string(channels) + " " + shape.name + (flip ? " flip" : "") +
                       " " + k.name;
              cases.push_back(std::move(t));
            }
          }
        }
      }
    }
  }
  return cases;
}

// Both compilations of the loops (AVX2 where this CPU has it, and the baseline's).
TEST(NormalizeCpu, BitIdenticalToNaiveForEveryDtypeLayoutChannelsCropAndFlip) {
  for (const bool baseline : {false, true}) {
    stoke::detail::baseline_loops_only().store(baseline);
    for (Case& t : all_cases()) {
      SCOPED_TRACE(t.name + (baseline ? " (baseline loops)" : ""));
      t.params.flip = t.flips.empty() ? nullptr : t.flips.data();
      const std::vector<unsigned char> expected = naive_normalize(t.params, t.src);
      ASSERT_EQ(normalized_bytes(t.params), expected.size());
      std::vector<unsigned char> got(expected.size() + 1, 0xab);  // +1: odd offset, no alignment
      normalize_cpu(t.params, t.src.data(), got.data() + 1);
      EXPECT_EQ(std::memcmp(got.data() + 1, expected.data(), expected.size()), 0);
      EXPECT_EQ(got[0], 0xab);
    }
  }
  stoke::detail::baseline_loops_only().store(false);
}

TEST(NormalizeCpu, LargeBatchMatchesNaive) {  // enough rows for oneTBB to split the work
  NormalizeParams p;
  p.samples = 16;
  p.height = 96;
  p.width = 80;
  p.channels = 3;
  p.crop_y = 8;
  p.crop_x = 4;
  p.out_height = 64;
  p.out_width = 72;
  p.dtype = DType::kFloat16;
  p.layout = Layout::kNCHW;
  for (int c = 0; c < 3; ++c) {
    p.mean[c] = kCoefficients[0].mean[c];
    p.stddev[c] = kCoefficients[0].stddev[c];
  }
  std::vector<std::uint8_t> src(static_cast<std::size_t>(p.samples) * p.height * p.width * 3);
  std::mt19937 rng(99);
  for (auto& b : src) b = static_cast<std::uint8_t>(rng());
  std::vector<std::uint8_t> flips(16);
  for (std::size_t i = 0; i < flips.size(); ++i) flips[i] = i % 3 == 0;
  p.flip = flips.data();
  const std::vector<unsigned char> expected = naive_normalize(p, src);
  std::vector<unsigned char> got(normalized_bytes(p));
  normalize_cpu(p, src.data(), got.data());
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), expected.size()), 0);
}

TEST(NormalizeCpu, ProducesTheDocumentedFloat32Values) {
  NormalizeParams p;
  p.samples = 1;
  p.height = 1;
  p.width = 3;
  p.channels = 1;
  p.mean[0] = 128.0f;
  p.stddev[0] = 64.0f;  // a power of two: 1/stddev is exact, so x == mean gives exactly 0
  const std::uint8_t src[3] = {0, 128, 250};
  const std::uint8_t flip[1] = {1};
  p.flip = flip;
  float out[3];
  normalize_cpu(p, src, out);
  EXPECT_EQ(out[0], 1.90625f);  // flipped: 250 first
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], -2.0f);
  // The documented fma(x, 1/stddev, -mean/stddev) form is not (x - mean) / stddev: with an
  // inexact 1/stddev, x == mean lands a rounding error away from 0.
  p.width = 1;
  p.flip = nullptr;
  p.mean[0] = 100.0f;
  p.stddev[0] = 50.0f;
  const std::uint8_t at_mean[1] = {100};
  normalize_cpu(p, at_mean, out);
  EXPECT_EQ(out[0], std::fma(100.0f, 1.0f / 50.0f, -100.0f * (1.0f / 50.0f)));
  EXPECT_LT(std::fabs(out[0]), 1e-6f);
}

// ---------------------------------------------------------------- CUDA vs CPU

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA

using test::DeviceBuffer;

TEST(NormalizeCuda, RejectsInvalidParamsBeforeTouchingTheDevice) {
  NormalizeParams p = valid_params();
  p.channels = 7;
  EXPECT_THROW(normalize_cuda(p, nullptr, nullptr, nullptr), std::invalid_argument);
  p = valid_params();
  EXPECT_THROW(normalize_cuda(p, nullptr, nullptr, nullptr), std::invalid_argument);
}

TEST(NormalizeCuda, RejectsRowsTooWideForItsRowIndices) {
  NormalizeParams p = valid_params();
  p.samples = 1;
  p.height = 1;
  p.width = (1 << 28) + 1;  // x 4 channels: just over 2^30 bytes
  p.channels = 4;
  // Never dereferenced: the check comes before any CUDA call.
  const std::uint8_t fake = 0;
  unsigned char fake_dst[16];
  try {
    normalize_cuda(p, &fake, fake_dst, nullptr);
    ADD_FAILURE() << "accepted a row of " << 4.0 * p.width << " bytes";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rows of at most 2^30 bytes"), std::string::npos)
        << e.what();
  }
}

// Runs normalize_cuda on t and compares it bit for bit with normalize_cpu. The output starts
// dst_offset elements past a 256-byte boundary (cudaMalloc's alignment), and the bytes around it
// must stay untouched.
void expect_cuda_matches_cpu(const Case& t, std::size_t dst_offset, cudaStream_t stream) {
  constexpr std::size_t kGuard = 64;
  NormalizeParams p = t.params;
  p.flip = t.flips.empty() ? nullptr : t.flips.data();
  const std::size_t bytes = normalized_bytes(p);
  const std::size_t offset = dst_offset * dtype_size(p.dtype);
  const std::size_t total = offset + bytes + kGuard;
  std::vector<unsigned char> expected(total, 0xab);
  normalize_cpu(p, t.src.data(), expected.data() + offset);

  DeviceBuffer d_src(t.src.size()), d_dst(total), d_flip(t.flips.size());
  ASSERT_EQ(cudaMemcpy(d_src.get(), t.src.data(), t.src.size(), cudaMemcpyHostToDevice),
            cudaSuccess);
  if (!t.flips.empty()) {
    ASSERT_EQ(cudaMemcpy(d_flip.get(), t.flips.data(), t.flips.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ASSERT_EQ(cudaMemset(d_dst.get(), 0xab, total), cudaSuccess);
  p.flip = static_cast<const std::uint8_t*>(d_flip.get());
  normalize_cuda(p, static_cast<const std::uint8_t*>(d_src.get()),
                 static_cast<unsigned char*>(d_dst.get()) + offset, stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<unsigned char> got(total);
  ASSERT_EQ(cudaMemcpy(got.data(), d_dst.get(), total, cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::size_t i = 0; i < total; ++i) {
    if (got[i] != expected[i]) {
      ADD_FAILURE() << "dst offset " << dst_offset << " elements: first difference at byte " << i
                    << (i < offset || i >= offset + bytes ? " (outside the output)" : "")
                    << ": got 0x" << std::hex << +got[i] << ", expected 0x" << +expected[i];
      return;
    }
  }
}

class CudaStream {
 public:
  CudaStream() {
    if (cudaStreamCreate(&stream_) != cudaSuccess) throw std::runtime_error("cudaStreamCreate");
  }
  ~CudaStream() { cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Offsets 0, 1 and 3 elements put row 0 on, and off, the kernel's 16-byte store boundaries.
TEST(NormalizeCuda, BitIdenticalToCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  const CudaStream stream;
  for (const Case& t : all_cases()) {
    SCOPED_TRACE(t.name);
    for (std::size_t dst_offset : {0, 1, 3}) expect_cuda_matches_cpu(t, dst_offset, stream.get());
  }
}

// gridDim.y and gridDim.z stop at 65535, and the kernel loops over the rest: (sample, channel)
// planes for NCHW and samples for NHWC past 65535, and, with narrow rows packing 8 rows into a
// block, more than 8 * 65535 rows.
TEST(NormalizeCuda, CoversBatchesAndImagesBeyondTheGridLimits) {
  STOKE_SKIP_WITHOUT_GPU();
  const CudaStream stream;
  std::mt19937 rng(77);
  struct Big {
    const char* name;
    int samples, height, width, crop_y, crop_x, out_height, out_width;
  };
  const Big kBig[] = {{"70000 samples of 2x3, crop 2x2", 70000, 2, 3, 0, 1, 2, 2},
                      {"1 sample of 600000x3, crop 599990x2", 1, 600000, 3, 5, 1, 599990, 2}};
  for (const Big& big : kBig) {
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
        for (int channels : {1, 3, 4}) {
          Case t;
          NormalizeParams& p = t.params;
          p.samples = big.samples;
          p.height = big.height;
          p.width = big.width;
          p.channels = channels;
          p.crop_y = big.crop_y;
          p.crop_x = big.crop_x;
          p.out_height = big.out_height;
          p.out_width = big.out_width;
          p.dtype = dtype;
          p.layout = layout;
          t.src = random_input(p, kCoefficients[0], rng);
          t.flips.resize(static_cast<std::size_t>(p.samples));
          for (std::size_t i = 0; i < t.flips.size(); ++i) t.flips[i] = i % 3 != 1;
          t.name = std::string(big.name) + " " + dtype_name(dtype) +
                   (layout == Layout::kNCHW ? " NCHW" : " NHWC") + " c=" + std::to_string(channels);
          SCOPED_TRACE(t.name);
          expect_cuda_matches_cpu(t, 1, stream.get());
        }
      }
    }
  }
}

#else

TEST(NormalizeCuda, BitIdenticalToCpuReference) {
  GTEST_SKIP() << "built without CUDA";
}
TEST(NormalizeCuda, CoversBatchesAndImagesBeyondTheGridLimits) {
  GTEST_SKIP() << "built without CUDA";
}

#endif

}  // namespace
}  // namespace stoke::kernels
