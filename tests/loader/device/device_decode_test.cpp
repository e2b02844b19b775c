// decode=gpu and decode=hybrid without a GPU: host devices and the fake GPU decode the workers'
// compressed slots with the reference (libjpeg-turbo at the window's region, kernels::resize_cpu),
// so the slot format, fallback, determinism and resume are tested here; the real decoders run in
// the device check.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "fake_gpu.hpp"
#include "libjpeg_writer.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

Options jpeg_options(Decode decode, int workers = 2) {
  Options o;
  o.data = test::testdata("jpeg");
  o.batch = 32;
  o.workers = workers;
  o.seed = 11;
  o.decode = decode;
  o.height = o.width = 96;
  o.log = [](std::string_view) {};
  return o;
}

struct Difference {
  double mean = 0;
  int p99 = 0;
  int max = 0;
};

Difference difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  std::vector<int> d(a.size());
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d[i] = std::abs(int(a[i]) - int(b[i]));
    sum += d[i];
  }
  std::sort(d.begin(), d.end());
  return {sum / static_cast<double>(d.size()), d[d.size() * 99 / 100], d.back()};
}

std::vector<float> geometry_of(Loader& loader) {
  std::vector<float> g;
  while (auto b = loader.next()) g.insert(g.end(), b->geometry().begin(), b->geometry().end());
  return g;
}

TEST(DeviceDecode, TheDevicesDecodeWithinALevelOfTheWorkersAndDrawTheSameGeometry) {
  Loader cpu(jpeg_options(Decode::kCpu));
  Loader gpu(jpeg_options(Decode::kGpu));
  const test::Delivered a = test::collect(cpu);
  const test::Delivered b = test::collect(gpu);
  ASSERT_EQ(a.ids, b.ids);
  ASSERT_EQ(a.labels, b.labels);
  ASSERT_EQ(a.pixels.size(), b.pixels.size());
  const Difference d = difference(a.pixels, b.pixels);
  std::printf("decode=gpu (host reference) against decode=cpu: mean %.3f, p99 %d, max %d levels\n",
              d.mean, d.p99, d.max);
  EXPECT_LE(d.mean, 1.0);
  EXPECT_LE(d.p99, 4);
  const Stats s = gpu.stats();
  EXPECT_EQ(s.device_decoded, 96);
  EXPECT_EQ(s.worker_decoded_not_jpeg + s.worker_decoded_unsupported + s.worker_decoded_too_large +
                s.worker_decoded_hybrid,
            0);
  EXPECT_EQ(s.device_decode_failed, 0);
  EXPECT_GT(s.device_decode_s, 0);
  // The geometry is the workers' draw either way.
  cpu.set_epoch(1);
  gpu.set_epoch(1);
  EXPECT_EQ(geometry_of(cpu), geometry_of(gpu));
}

TEST(DeviceDecode, ZeroOneAndThreeWorkersDeliverTheSameBytes) {
  Loader zero(jpeg_options(Decode::kGpu, 0));
  Loader one(jpeg_options(Decode::kGpu, 1));
  Loader three(jpeg_options(Decode::kGpu, 3));
  const test::Delivered a = test::collect(zero);
  EXPECT_EQ(a, test::collect(one));
  EXPECT_EQ(a, test::collect(three));
}

TEST(DeviceDecode, HybridSplitsBySeedAndTheWorkersHalfIsTheCpuModesBytes) {
  Options o = jpeg_options(Decode::kHybrid);
  o.gpu_share = 0.5;
  Loader hybrid(o);
  Loader again(o);
  Loader cpu(jpeg_options(Decode::kCpu));
  Loader gpu(jpeg_options(Decode::kGpu));
  const test::Delivered h = test::collect(hybrid);
  EXPECT_EQ(h, test::collect(again));
  const test::Delivered c = test::collect(cpu);
  const test::Delivered g = test::collect(gpu);
  const Stats s = hybrid.stats();
  EXPECT_EQ(s.device_decoded + s.worker_decoded_hybrid, 96);
  // 96 fair coins: 48 +- 4 standard deviations.
  EXPECT_GE(s.worker_decoded_hybrid, 28);
  EXPECT_LE(s.worker_decoded_hybrid, 68);
  const std::size_t sample = 96 * 96 * 3;
  // A sample is the workers' bytes or the devices' (which may be the same bytes).
  int workers_only = 0, devices_only = 0, both = 0;
  for (std::size_t i = 0; i < h.ids.size(); ++i) {
    const auto at = [&](const test::Delivered& d) {
      return std::vector<std::uint8_t>(d.pixels.begin() + i * sample,
                                       d.pixels.begin() + (i + 1) * sample);
    };
    const auto mine = at(h);
    const bool cpu_bytes = mine == at(c), gpu_bytes = mine == at(g);
    EXPECT_TRUE(cpu_bytes || gpu_bytes) << "sample " << i;
    workers_only += cpu_bytes && !gpu_bytes;
    devices_only += gpu_bytes && !cpu_bytes;
    both += cpu_bytes && gpu_bytes;
  }
  EXPECT_GE(s.worker_decoded_hybrid, workers_only);
  EXPECT_LE(s.worker_decoded_hybrid, workers_only + both);
  EXPECT_GE(s.device_decoded, devices_only);
  EXPECT_LE(s.device_decoded, devices_only + both);
}

TEST(DeviceDecode, WhatTheDevicesCannotTakeTheWorkersDecode) {
  test::TempDir dir;
  const std::filesystem::path cls = dir.path() / "a";
  std::filesystem::create_directories(cls);
  cv::Mat rgb(120, 160, CV_8UC3);
  cv::randu(rgb, 0, 255);
  cv::imwrite((cls / "0-plain.jpg").string(), rgb);
  cv::imwrite((cls / "1-png.png").string(), rgb);
  cv::Mat cmyk(120, 160, CV_8UC4);
  cv::randu(cmyk, 0, 255);
  const std::vector<std::uint8_t> cmyk_jpeg = test::libjpeg_compress(cmyk);
  std::FILE* f = std::fopen((cls / "2-cmyk.jpg").string().c_str(), "wb");
  std::fwrite(cmyk_jpeg.data(), 1, cmyk_jpeg.size(), f);
  std::fclose(f);
  cv::Mat big(600, 800, CV_8UC3);
  cv::randu(big, 0, 255);  // noise: far over 8 KiB as a JPEG
  cv::imwrite((cls / "3-big.jpg").string(), big);
  cv::Mat gray(120, 160, CV_8UC1);
  cv::randu(gray, 0, 255);
  cv::imwrite((cls / "4-gray.jpg").string(), gray);

  Options o = jpeg_options(Decode::kGpu);
  o.data = dir.str();
  o.batch = 5;
  o.shuffle = false;
  o.max_compressed_bytes = 64 << 10;
  Options cpu_o = o;
  cpu_o.decode = Decode::kCpu;
  Loader gpu(o);
  Loader cpu(cpu_o);
  const test::Delivered g = test::collect(gpu);
  const test::Delivered c = test::collect(cpu);
  ASSERT_EQ(g.ids, c.ids);
  const Stats s = gpu.stats();
  EXPECT_EQ(s.device_decoded, 2);  // the plain and the gray JPEG
  EXPECT_EQ(s.worker_decoded_not_jpeg, 1);
  EXPECT_EQ(s.worker_decoded_unsupported, 1);
  EXPECT_EQ(s.worker_decoded_too_large, 1);
  const std::size_t sample = 96 * 96 * 3;
  for (std::size_t i = 0; i < g.ids.size(); ++i) {
    const bool same = std::equal(g.pixels.begin() + i * sample, g.pixels.begin() + (i + 1) * sample,
                                 c.pixels.begin() + i * sample);
    const bool worker = g.ids[i] == 1 || g.ids[i] == 2 || g.ids[i] == 3;
    if (worker) {
      EXPECT_TRUE(same) << "sample " << g.ids[i] << " was the workers' to decode";
    }
  }
}

// A worker reads only a JPEG's header under decode=gpu: damage in its scan is found by the
// device's decoder, which gives the sample 0 pixels, counts it and says so in the log.
TEST(DeviceDecode, AScanTheDevicesCannotDecodeIsCountedAndLogged) {
  test::TempDir dir;
  const std::filesystem::path cls = dir.path() / "a";
  std::filesystem::create_directories(cls);
  cv::Mat rgb(200, 240, CV_8UC3);
  cv::randu(rgb, 0, 255);
  std::vector<std::uint8_t> jpeg;
  cv::imencode(".jpg", rgb, jpeg);
  for (int i = 0; i < 3; ++i) {
    std::vector<std::uint8_t> bytes = jpeg;
    if (i == 1) bytes.resize(bytes.size() / 3);  // the scan cut short
    std::FILE* f = std::fopen((cls / (std::to_string(i) + ".jpg")).string().c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  Options o = jpeg_options(Decode::kGpu);
  o.data = dir.str();
  o.batch = 3;
  o.shuffle = false;
  test::LogLines log;
  o.log = log.sink();
  test::Delivered d;
  std::int64_t failed = 0;
  {
    Loader loader(o);
    d = test::collect(loader);
    failed = loader.stats().device_decode_failed;
  }  // (its log is out once it is gone)
  ASSERT_EQ(d.ids, (std::vector<std::int64_t>{0, 1, 2}));
  const std::size_t sample = 96 * 96 * 3;
  EXPECT_TRUE(std::all_of(d.pixels.begin() + sample, d.pixels.begin() + 2 * sample,
                          [](std::uint8_t v) { return v == 0; }));
  EXPECT_GE(failed, 1);
  // (How many the line names depends on how many batches of later epochs were staged by then.)
  EXPECT_TRUE(
      log.contains(" sample(s) the devices could not decode, by nvJPEG or by the reference "
                   "decoder (damage past the header"))
      << log.lines().size();
}

TEST(DeviceDecode, FakeGpusDecodeBeforeTheNormalizeAsHostDevicesDo) {
  Options o = jpeg_options(Decode::kGpu);
  o.dtype = DType::kFloat32;
  o.devices = DeviceSet::parse("cpu:2");
  Loader host(o);
  test::FakeGpuScope scope;
  o.devices = DeviceSet::parse("cuda:0,1");
  Loader fake = scope.loader(o);
  int batches = 0;
  while (auto a = host.next()) {
    auto b = fake.next();
    ASSERT_TRUE(b);
    for (int d = 0; d < 2; ++d) {
      const auto x = a->chunk(d), y = b->chunk(d);
      b->wait(d);
      ASSERT_EQ(x.bytes, y.bytes);
      EXPECT_EQ(0, std::memcmp(x.data, y.data, x.bytes)) << "batch " << batches << " device " << d;
    }
    ++batches;
  }
  EXPECT_EQ(batches, 3);
  std::lock_guard lock(scope.log().mutex);
  EXPECT_GE(scope.log().jpeg_decodes, 6);  // (and those of batches staged ahead)
  EXPECT_EQ(scope.log().sources_changed_before_dma, 0);
}

TEST(DeviceDecode, StepsTheDevicesCannotDoAreRefused) {
  Options o = jpeg_options(Decode::kGpu);
  Pipeline p(96, 96, 3);
  p.random_resized_crop(96, 96).color_jitter(0.4f, 0.4f, 0.4f, 0.f);
  o.pipeline = p;
  EXPECT_EQ(test::config_error(o),
            "decode=gpu: the pipeline's step color_jitter works on the decoded pixels, which the "
            "devices hold; the devices resize, crop and flip only (docs/USAGE.md, Decoding on the "
            "GPU): use decode=cpu for this pipeline");
  Pipeline e(96, 96, 3);
  e.random_resized_crop(96, 96).random_erasing(0.5f);
  o.pipeline = e;
  o.decode = Decode::kHybrid;
  EXPECT_EQ(test::config_error(o),
            "decode=hybrid: random_erasing on a uint8 output writes the worker's pixels; use a "
            "float dtype (the devices then erase after the normalize) or decode=cpu");
  o.dtype = DType::kFloat32;
  EXPECT_EQ(test::config_error(o), "accepted");
  o.gpu_share = 1.5;
  EXPECT_EQ(test::config_error(o),
            "gpu_share must be a fraction in 0..1 (the share of samples decode=hybrid decodes on "
            "the devices), got 1.5");
  o.gpu_share = 0.5;
  o.max_compressed_bytes = 100;
  EXPECT_EQ(test::config_error(o),
            "max_compressed_bytes must be 4096..268435456 (4KiB..256MiB), got 100");
}

}  // namespace
}  // namespace stoke
