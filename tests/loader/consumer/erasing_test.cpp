// random_erasing through the loader: its text and checks, the delivered images against the same
// pipeline without it (the erasing draws last, so everything else is the same) with each
// sample's rectangle holding exactly the recorded values or noise, on float and uint8 outputs,
// host devices and fake GPUs, for any worker count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fake_gpu.hpp"
#include "stoke/kernels/erase.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

constexpr int kSide = 48;
constexpr const char* kSteps = "random_resized_crop 48 48 | horizontal_flip | color_jitter 0.4 0.4";

Options erasing_options(const std::string& erasing, DType dtype, int workers = 2) {
  Options o;
  o.data = test::testdata("jpeg");
  o.batch = 16;
  o.seed = 21;
  o.workers = workers;
  o.dtype = dtype;
  o.log = [](std::string_view) {};
  const std::string steps = erasing.empty() ? kSteps : std::string(kSteps) + " | " + erasing;
  o.pipeline = make_pipeline(kSide, kSide, 3, parse_steps(steps));
  return o;
}

// One epoch as delivered: each device chunk's output bytes, and each sample's applied ops.
struct Epoch {
  std::vector<std::uint8_t> out;  // the chunks' data, in order
  std::vector<AppliedOp> ops;
  int ops_per_sample = 0;
  int samples = 0;
  int batches = 0;
};

Epoch take(Loader& loader) {
  Epoch e;
  while (auto b = loader.next()) {
    for (int d = 0; d < b->device_count(); ++d) {
      b->wait(d);
      const DeviceChunk c = b->chunk(d);
      const auto* p = static_cast<const std::uint8_t*>(c.data);
      e.out.insert(e.out.end(), p, p + c.bytes);
    }
    e.ops.insert(e.ops.end(), b->applied_ops().begin(), b->applied_ops().end());
    e.ops_per_sample = b->max_applied_ops();
    e.samples += b->size();
    e.batches += 1;
  }
  return e;
}

// Sample n's erasing record (kNone when it was not erased).
AppliedOp erasing_of(const Epoch& e, int n) {
  for (int k = 0; k < e.ops_per_sample; ++k) {
    const AppliedOp& op = e.ops[static_cast<std::size_t>(n) * e.ops_per_sample + k];
    if (op.op == ImageOp::kErase || op.op == ImageOp::kEraseNoise ||
        op.op == ImageOp::kEraseChannelNoise)
      return op;
  }
  return {};
}

// The record's noise key, as erase_noise takes it.
void key_of(const AppliedOp& op, std::uint32_t* lo, std::uint32_t* hi) {
  std::uint64_t key = 0;
  for (int k = 0; k < 3; ++k) key |= static_cast<std::uint64_t>(op.args[4 + k]) << (16 * k);
  *lo = static_cast<std::uint32_t>(key);
  *hi = static_cast<std::uint32_t>(key >> 32);
}

// Checks `erased` (float32 NCHW, or uint8 NHWC) against `plain`: equal outside each sample's
// recorded rectangle, the recorded values (or noise) inside. Returns how many samples were
// erased.
int expect_erased(const Epoch& plain, const Epoch& erased, DType dtype) {
  EXPECT_EQ(plain.samples, erased.samples);
  EXPECT_EQ(plain.out.size(), erased.out.size());
  EXPECT_EQ(erased.ops_per_sample, plain.ops_per_sample + 1);
  const int c = 3, h = kSide, w = kSide;
  const std::size_t size = dtype == DType::kUInt8 ? 1 : 4;
  int count = 0;
  for (int n = 0; n < erased.samples; ++n) {
    const AppliedOp op = erasing_of(erased, n);
    const int top = static_cast<int>(op.args[0]), left = static_cast<int>(op.args[1]);
    const int eh = static_cast<int>(op.args[2]), ew = static_cast<int>(op.args[3]);
    if (op.op != ImageOp::kNone) {
      ++count;
      EXPECT_TRUE(top >= 0 && left >= 0 && eh > 0 && ew > 0 && eh < h && ew < w && top + eh <= h &&
                  left + ew <= w)
          << "sample " << n;
    }
    std::uint32_t lo = 0, hi = 0;
    key_of(op, &lo, &hi);
    for (int ch = 0; ch < c; ++ch)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const std::size_t at = dtype == DType::kUInt8
                                     ? ((static_cast<std::size_t>(n) * h + y) * w + x) * c + ch
                                     : ((static_cast<std::size_t>(n) * c + ch) * h + y) * w + x;
          const std::uint8_t* got = erased.out.data() + at * size;
          const std::uint8_t* was = plain.out.data() + at * size;
          const bool inside =
              op.op != ImageOp::kNone && y >= top && y < top + eh && x >= left && x < left + ew;
          if (!inside) {
            if (std::memcmp(got, was, size) != 0) {
              ADD_FAILURE() << "sample " << n << " changed outside its rectangle at c " << ch
                            << " y " << y << " x " << x;
              return count;
            }
            continue;
          }
          float want = op.args[4 + ch];
          if (op.op == ImageOp::kEraseNoise)
            want = kernels::erase_noise(
                lo, hi, static_cast<std::uint32_t>((ch * eh + (y - top)) * ew + (x - left)));
          else if (op.op == ImageOp::kEraseChannelNoise)
            want = kernels::erase_noise(lo, hi, static_cast<std::uint32_t>(ch));
          const bool same = dtype == DType::kUInt8 ? *got == static_cast<std::uint8_t>(want)
                                                   : std::memcmp(got, &want, sizeof want) == 0;
          if (!same) {
            ADD_FAILURE() << "sample " << n << " c " << ch << " y " << y << " x " << x
                          << " is not the rectangle's value " << want;
            return count;
          }
        }
  }
  return count;
}

TEST(RandomErasing, FloatOutputsAreTheNormalizedImageWithTheRectangleErased) {
  Loader plain_loader(erasing_options("", DType::kFloat32));
  const Epoch plain = take(plain_loader);
  for (const char* step : {"random_erasing 0.7 0.02 0.33 0.3 3.3 -1.5 0.25 2",
                           "random_erasing_pixel 0.7", "random_erasing_color 0.7 0.1 0.4"}) {
    SCOPED_TRACE(step);
    Loader loader(erasing_options(step, DType::kFloat32));
    const Epoch erased = take(loader);
    const int count = expect_erased(plain, erased, DType::kFloat32);
    // At p = 0.7 (each draw all but certain to fit within 10 tries): within 4.5 sigma.
    const double mean = 0.7 * erased.samples, sigma = std::sqrt(0.21 * erased.samples);
    EXPECT_NEAR(count, mean, 4.5 * sigma) << erased.samples << " samples";
  }
}

TEST(RandomErasing, Uint8OutputsGetLevelsInThePixels) {
  Loader plain_loader(erasing_options("", DType::kUInt8));
  const Epoch plain = take(plain_loader);
  Loader loader(erasing_options("random_erasing 1 0.1 0.5 0.5 2 10 200 255", DType::kUInt8));
  const Epoch erased = take(loader);
  EXPECT_GE(expect_erased(plain, erased, DType::kUInt8), erased.samples * 97 / 100);
}

// The fake GPUs get the rectangles with the batch's other arrays and erase after normalizing:
// the same bytes as two host devices, in float16 NHWC too.
TEST(RandomErasing, FakeGpusDeliverTheHostDevicesBytes) {
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
    Options o = erasing_options("random_erasing_pixel 0.5", DType::kFloat16);
    o.layout = layout;
    o.devices = DeviceSet::parse("cpu:2");
    Loader host(o);
    const Epoch expected = take(host);
    test::FakeGpuScope gpu;
    o.devices = DeviceSet::parse("cuda:0,1");
    Loader on_gpus = gpu.loader(o);
    const Epoch got = take(on_gpus);
    EXPECT_TRUE(got.out == expected.out);
    std::lock_guard lock(gpu.log().mutex);
    EXPECT_GE(gpu.log().erases, 2 * got.batches);  // one per device and batch
  }
}

TEST(RandomErasing, IsIdenticalForAnyWorkerCount) {
  std::vector<Epoch> seen;
  for (int workers : {0, 1, 3}) {
    Loader loader(erasing_options("random_erasing_pixel 0.5", DType::kFloat32, workers));
    seen.push_back(take(loader));
  }
  for (std::size_t i = 1; i < seen.size(); ++i) {
    EXPECT_TRUE(seen[i].out == seen[0].out) << "workers index " << i;
    EXPECT_EQ(seen[i].ops.size(), seen[0].ops.size());
    EXPECT_EQ(
        std::memcmp(seen[i].ops.data(), seen[0].ops.data(), seen[0].ops.size() * sizeof(AppliedOp)),
        0);
  }
}

TEST(RandomErasing, ClearErrors) {
  EXPECT_EQ(test::config_error(erasing_options("random_erasing_pixel", DType::kUInt8)),
            "random_erasing with noise draws N(0, 1) values of the normalized image; it needs a "
            "float dtype (float32, float16 or bfloat16), not uint8");
  EXPECT_EQ(test::config_error(
                erasing_options("random_erasing 0.5 0.02 0.33 0.3 3.3 0.5", DType::kUInt8)),
            "random_erasing on a uint8 output writes levels: its values must be whole numbers in "
            "[0, 255], got 0.500000 (with a float dtype they are in normalized units)");
  const auto pipeline_error = [](const char* steps) -> std::string {
    try {
      make_pipeline(kSide, kSide, 3, parse_steps(steps)).validate(0, 0);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(pipeline_error("random_resized_crop 48 48 | random_erasing | horizontal_flip"),
            "pipeline: random_erasing acts on the delivered image (after normalization for float "
            "outputs, where torchvision's recipes put it), so it must be the last step, but "
            "horizontal_flip follows it");
  EXPECT_EQ(pipeline_error("random_resized_crop 48 48 | random_erasing 0.5 0.4 0.2"),
            "random_erasing: scale must satisfy 0 <= min <= max <= 1, got [0.4, 0.2]");
  EXPECT_EQ(pipeline_error("random_resized_crop 48 48 | random_erasing 0.5 0.02 0.33 0 3"),
            "random_erasing: ratio must satisfy 0 < min <= max, got [0, 3]");
  EXPECT_EQ(pipeline_error("random_resized_crop 48 48 | random_erasing 1.5"),
            "random_erasing: probability must be in [0, 1], got 1.5");
  EXPECT_EQ(pipeline_error("random_resized_crop 48 48 | random_erasing 0.5 0.02 0.33 0.3 3.3 1 2"),
            "pipeline step random_erasing takes ([probability, scale_min, scale_max, ratio_min, "
            "ratio_max, value or value_r value_g value_b]), got 7 number(s)");
  EXPECT_EQ(
      pipeline_error("random_resized_crop 48 48 | random_erasing_pixel 0.5 0.02 0.33 0.3 3.3 1"),
      "pipeline step random_erasing_pixel takes ([probability, scale_min, scale_max, "
      "ratio_min, ratio_max]), got 6 number(s)");
  // After a policy, as torchvision's recipes have it.
  EXPECT_EQ(pipeline_error("random_resized_crop 48 48 | trivial_augment_wide | random_erasing 0.1"),
            "accepted");
  const Pipeline p = make_pipeline(
      kSide, kSide, 3, parse_steps("random_resized_crop 48 48 | random_erasing_color 0.25"));
  EXPECT_EQ(p.max_applied_ops(), 1);
  EXPECT_NE(p.describe().find("random_erasing p=0.25 scale [0.02, 0.33] ratio [0.3, 3.3] fill "
                              "N(0, 1) per channel"),
            std::string::npos)
      << p.describe();
}

}  // namespace
}  // namespace stoke
