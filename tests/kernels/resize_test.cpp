// decode=gpu's resize: the CPU reference against expectations written here (a window at full
// scale is a copy, mirrors reverse, a 2x shrink averages blocks, padding reads 0, a decoded
// region gives what the whole image gives), its refusals, and, in CUDA builds on a machine with
// a GPU, resize_cuda against the CPU reference bit for bit.

#include "stoke/kernels/resize.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "stoke/kernels/resize_cuda.hpp"
#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA
#include "../cuda_test_support.hpp"
#endif

namespace stoke::kernels {
namespace {

struct Image {
  int width = 0, height = 0, channels = 3;
  std::vector<std::uint8_t> pixels;
  Image(int w, int h, int c, unsigned seed) : width(w), height(h), channels(c) {
    std::mt19937 rng(seed);
    pixels.resize(std::size_t(w) * h * c);
    for (auto& v : pixels) v = static_cast<std::uint8_t>(rng());
  }
  std::uint8_t at(int x, int y, int c) const {
    return pixels[(std::size_t(y) * width + x) * channels + c];
  }
};

// The whole image decoded, window (x, y, w, h).
ResizeImage whole(const Image& m, float x, float y, float w, float h) {
  ResizeImage r;
  r.src = m.pixels.data();
  r.src_stride = std::int64_t{m.width} * m.channels;
  r.region_width = r.image_width = m.width;
  r.region_height = r.image_height = m.height;
  r.x = x;
  r.y = y;
  r.w = w;
  r.h = h;
  return r;
}

std::vector<std::uint8_t> resized(const std::vector<ResizeImage>& jobs, int height, int width,
                                  int channels) {
  ResizeParams p;
  p.images = static_cast<int>(jobs.size());
  p.samples = p.images;
  p.height = height;
  p.width = width;
  p.channels = channels;
  p.jobs = jobs.data();
  std::vector<std::uint8_t> out(std::size_t(p.samples) * height * width * channels, 0xab);
  resize_cpu(p, out.data());
  return out;
}

TEST(Resize, AWindowAtFullScaleIsACopyAndAMirrorReversesIt) {
  const Image m(37, 23, 3, 1);
  EXPECT_EQ(resized({whole(m, 0, 0, 37, 23)}, 23, 37, 3), m.pixels);
  ResizeImage mirrored = whole(m, 5, 2, 20, 10);
  mirrored.mirror_x = mirrored.mirror_y = 1;
  const std::vector<std::uint8_t> out = resized({mirrored}, 10, 20, 3);
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 20; ++x)
      for (int c = 0; c < 3; ++c)
        ASSERT_EQ(out[(std::size_t(y) * 20 + x) * 3 + c], m.at(5 + 19 - x, 2 + 9 - y, c));
}

TEST(Resize, AHalvingAveragesEachBlockOfFour) {
  const Image m(16, 12, 1, 2);
  const std::vector<std::uint8_t> out = resized({whole(m, 0, 0, 16, 12)}, 6, 8, 1);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 8; ++x) {
      const int sum = m.at(2 * x, 2 * y, 0) + m.at(2 * x + 1, 2 * y, 0) +
                      m.at(2 * x, 2 * y + 1, 0) + m.at(2 * x + 1, 2 * y + 1, 0);
      const float mean = static_cast<float>(sum) / 4.f;
      EXPECT_NEAR(out[std::size_t(y) * 8 + x], std::nearbyint(mean), 0.5f) << x << "," << y;
    }
}

TEST(Resize, AWindowPastTheImageReadsZeroThere) {
  const Image m(10, 10, 3, 3);
  const std::vector<std::uint8_t> out = resized({whole(m, -4, 0, 10, 10)}, 10, 10, 3);
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x)
      for (int c = 0; c < 3; ++c)
        ASSERT_EQ(out[(std::size_t(y) * 10 + x) * 3 + c], x < 4 ? 0 : m.at(x - 4, y, c));
}

// A window past the image is resampled as the window made into an image of its own, 0 outside
// the source (the workers' general path): the same, within rounding, as resizing that image.
TEST(Resize, AWindowPastTheImageIsResampledWithItsZeroPadding) {
  const Image m(60, 40, 3, 7);
  for (const bool area : {false, true}) {
    SCOPED_TRACE(area ? "area" : "bilinear");
    const int out_w = area ? 30 : 70, out_h = area ? 25 : 50;
    // The window [-10, 70) x [-5, 45): the image with a 10-pixel and 5-pixel margin.
    Image padded(80, 50, 3, 0);
    std::fill(padded.pixels.begin(), padded.pixels.end(), 0);
    for (int y = 0; y < 40; ++y)
      for (int x = 0; x < 60; ++x)
        for (int c = 0; c < 3; ++c)
          padded.pixels[(std::size_t(y + 5) * 80 + x + 10) * 3 + c] = m.at(x, y, c);
    const std::vector<std::uint8_t> expected =
        resized({whole(padded, 0, 0, 80, 50)}, out_h, out_w, 3);
    const std::vector<std::uint8_t> got = resized({whole(m, -10, -5, 80, 50)}, out_h, out_w, 3);
    int worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::abs(int(got[i]) - int(expected[i])));
    EXPECT_LE(worst, 1);
  }
}

TEST(Resize, ADecodedRegionGivesWhatTheWholeImageGives) {
  const Image m(200, 150, 3, 4);
  for (const float scale : {0.7f, 1.3f, 3.1f}) {
    SCOPED_TRACE(scale);
    const float x = 60.3f, y = 40.6f, w = 32 * scale, h = 24 * scale;
    const std::vector<std::uint8_t> expected = resized({whole(m, x, y, w, h)}, 24, 32, 3);
    // Rows and columns [30, 150) x [20, 180): a decoder's region around the window's taps.
    ResizeImage r = whole(m, x, y, w, h);
    r.region_x = 20;
    r.region_y = 30;
    r.region_width = 160;
    r.region_height = 120;
    r.src = m.pixels.data() + (std::size_t(30) * 200 + 20) * 3;
    EXPECT_EQ(resized({r}, 24, 32, 3), expected);
  }
}

TEST(Resize, RefusesWhatItCannotDo) {
  const Image m(10, 10, 3, 5);
  ResizeImage r = whole(m, 0, 0, 10, 10);
  std::vector<std::uint8_t> out(300);
  ResizeParams p;
  p.images = p.samples = 1;
  p.height = p.width = 10;
  p.channels = 3;
  p.jobs = &r;
  const auto message = [&] {
    try {
      resize_cpu(p, out.data());
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(), "accepted");
  r.out_index = 1;
  EXPECT_EQ(message(), "resize: image 0: out_index 1 outside 0..0");
  r.out_index = 0;
  r.region_width = 11;
  EXPECT_EQ(message(), "resize: image 0: the decoded region is not inside the image");
  r.region_width = 10;
  r.w = 0;
  EXPECT_EQ(message(), "resize: image 0: the window has no extent");
  r.w = 10;
  p.channels = 4;
  EXPECT_EQ(message(), "resize: channels must be 1 or 3, got 4");
}

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA

using test::DeviceBuffer;

// Windows of every kind (shrinking past 2x, between, enlarging, mirrored, partly outside, in a
// region) over images of one and three channels: the same bits as the CPU reference.
TEST(ResizeCuda, BitIdenticalToCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  for (const int channels : {1, 3}) {
    const Image m(640, 480, channels, 6);
    DeviceBuffer d_src(m.pixels.size());
    ASSERT_EQ(cudaMemcpy(d_src.get(), m.pixels.data(), m.pixels.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<ResizeImage> jobs;
    for (int i = 0; i < 64; ++i) {
      const float w = 20 + 700 * u(rng), h = 20 + 500 * u(rng);
      ResizeImage r = whole(m, -30 + 600 * u(rng), -30 + 400 * u(rng), w, h);
      r.mirror_x = i % 2;
      r.mirror_y = i % 3 == 0;
      r.out_index = i;
      jobs.push_back(r);
    }
    const std::vector<std::uint8_t> expected = resized(jobs, 96, 128, channels);
    for (ResizeImage& r : jobs)
      r.src = static_cast<const std::uint8_t*>(d_src.get()) + (r.src - m.pixels.data());
    DeviceBuffer d_out(expected.size());
    ResizeParams p;
    p.images = p.samples = static_cast<int>(jobs.size());
    p.height = 96;
    p.width = 128;
    p.channels = channels;
    p.jobs = jobs.data();  // (host memory: the launches carry the records)
    resize_cuda(p, static_cast<std::uint8_t*>(d_out.get()), nullptr);
    std::vector<std::uint8_t> got(expected.size());
    ASSERT_EQ(cudaMemcpy(got.data(), d_out.get(), got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(got == expected) << channels << " channels";
  }
}

#endif

}  // namespace
}  // namespace stoke::kernels
