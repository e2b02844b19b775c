// The JPEG fast path: region + scaled decode, fractional bilinear resampling, flip fused into
// the output. It must stay close to the general path (whole decode + OpenCV resize), pick the
// cheapest DCT scale that still has the resolution, and keep every bad-input verdict even when
// the crop never reaches the damage (Verify::kWholeFile), or exactly the verdicts on what it
// decodes (Verify::kRegion).
#include "decode/jpeg_region.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <string_view>
#include <vector>

#include "augment/augment.hpp"
#include "decode/decode.hpp"
#include "plan/sample_rng.hpp"
#include "test_support.hpp"

namespace stoke::detail {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

std::vector<Bytes> corpus_files(const char* name = "jpeg") {
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(test::testdata(name))) {
    if (e.path().extension() == ".jpg") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Bytes> files;
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return files;
}

Bytes encode_jpeg(const cv::Mat& m, int quality = 90) {
  Bytes out;
  cv::imencode(".jpg", m, out, {cv::IMWRITE_JPEG_QUALITY, quality});
  return out;
}

// A photograph-like image: smooth gradients and a few edges, with mild noise.
cv::Mat scene(int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  cv::RNG rng(7);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int edge = ((x / 37) + (y / 53)) % 2 == 0 ? 40 : 0;
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(cv::saturate_cast<std::uint8_t>(x * 200 / w + edge),
                                        cv::saturate_cast<std::uint8_t>(y * 200 / h),
                                        cv::saturate_cast<std::uint8_t>(128 + rng.uniform(-8, 8)));
    }
  }
  return m;
}

struct Outputs {
  std::vector<std::uint8_t> fast, general;
};

// The same pipeline and the same draws, through the fast path and through the general path
// (whole-image decode, then OpenCV's resize, then the flip).
Outputs both_paths(const Bytes& jpeg, const Pipeline& p, std::int64_t position) {
  const int oh = p.output_height(), ow = p.output_width(), oc = p.output_channels();
  Outputs out{std::vector<std::uint8_t>(static_cast<std::size_t>(oh) * ow * oc),
              std::vector<std::uint8_t>(static_cast<std::size_t>(oh) * ow * oc)};
  const std::vector<Step> steps = p.steps();
  JpegRegionSource source;
  EXPECT_EQ(source.open(jpeg.data(), jpeg.size(), oc, kDefaultMaxPixels), BadInput::kNone);
  SampleRng a(3, kSampleStream, 0, position);
  Augmenter fast;
  fast.run(steps.data(), static_cast<int>(steps.size()), source, a, out.fast.data(), oh, ow, oc);

  ImageDecoder decoder;
  DecodedImage img;
  EXPECT_EQ(decoder.decode_buffer(jpeg.data(), jpeg.size(), oc, img), BadInput::kNone);
  const ImageRef whole{img.pixels.data,    img.pixels.rows, img.pixels.cols, oc,
                       img.pixels.step[0], img.bgr};
  SampleRng b(3, kSampleStream, 0, position);
  Augmenter general;
  general.run(steps.data(), static_cast<int>(steps.size()), whole, b, out.general.data(), oh, ow,
              oc);
  return out;
}

double mean_abs_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += std::abs(int{a[i]} - int{b[i]});
  return sum / static_cast<double>(a.size());
}

void expect_close_on_corpus(const Pipeline& p, const char* what, const char* corpus = "jpeg") {
  const std::vector<Bytes> files = corpus_files(corpus);
  ASSERT_GE(files.size(), std::string_view(corpus) == "jpeg" ? 90u : 26u);
  double worst = 0, total = 0;
  int n = 0;
  for (std::size_t f = 0; f < files.size(); ++f) {
    for (std::int64_t position = 0; position < 4; ++position) {
      const Outputs o = both_paths(files[f], p, static_cast<std::int64_t>(f) * 4 + position);
      const double mad = mean_abs_diff(o.fast, o.general);
      EXPECT_LE(mad, 2.0) << what << ": file " << f << " position " << position;
      worst = std::max(worst, mad);
      total += mad;
      ++n;
    }
  }
  std::printf("%s: mean absolute difference over %d crops: mean %.3f, worst %.3f levels\n", what, n,
              total / n, worst);
}

TEST(JpegRegion, TrainingCropsAreWithinTwoLevelsOfFullDecodePlusOpenCvResize) {
  expect_close_on_corpus(Pipeline::training(224, 224, 3, false), "random-resized-crop 224");
}

TEST(JpegRegion, EvaluationCropsAreWithinTwoLevelsOfFullDecodePlusOpenCvResize) {
  expect_close_on_corpus(Pipeline::evaluation(224, 224, 3, false), "resize 256 + centre crop");
}

// Camera-sized photographs (1600..2600 px, some 4:2:2, 4:4:4 and progressive), where DCT scaling
// does most of the shrinking.
TEST(JpegRegion, TrainingCropsOfCameraSizedPhotosAreWithinTwoLevelsToo) {
  expect_close_on_corpus(Pipeline::training(224, 224, 3, false), "big photos, random-resized-crop",
                         "jpeg-big");
}

TEST(JpegRegion, GrayOutputIsWithinTwoLevelsToo) {
  expect_close_on_corpus(Pipeline::training(64, 64, 1, false), "gray random-resized-crop 64");
}

// Without a resize the region is decoded at full scale and copied: the same bytes.
// Photometric steps between the last resize and the flips: the direct write looks ahead through
// their draws to mirror as the flips will decide, so it still matches the general path (a
// mirror decided wrongly would be tens of levels off).
TEST(JpegRegion, FlipsBehindPhotometricStepsStillMirrorTheDirectWrite) {
  Pipeline p(96, 96, 3);
  p.random_resized_crop(96, 96).invert(0.5f).horizontal_flip().grayscale(0.5f).horizontal_flip();
  expect_close_on_corpus(p, "rrc + invert + flip + grayscale + flip");
}

TEST(JpegRegion, ACropWithoutResizeIsIdenticalToTheGeneralPath) {
  const Bytes j = encode_jpeg(scene(300, 200));
  Pipeline p(100, 120, 3);
  p.center_crop(100, 120).horizontal_flip(0.5f);
  for (std::int64_t position = 0; position < 6; ++position) {
    const Outputs o = both_paths(j, p, position);
    EXPECT_TRUE(o.fast == o.general) << "position " << position;
  }
}

TEST(JpegRegion, WholeImageDecodeIsTheWholeImageDecodersBytes) {
  const Bytes j = encode_jpeg(scene(131, 77));
  JpegRegionSource source;
  ASSERT_EQ(source.open(j.data(), j.size(), 3, kDefaultMaxPixels), BadInput::kNone);
  const ImageRef r = source.whole();
  ImageDecoder decoder;
  DecodedImage img;
  ASSERT_EQ(decoder.decode_buffer(j.data(), j.size(), 3, img), BadInput::kNone);
  ASSERT_EQ(r.width, img.pixels.cols);
  ASSERT_EQ(r.height, img.pixels.rows);
  for (int y = 0; y < r.height; ++y) {
    ASSERT_EQ(std::memcmp(r.data + y * r.stride, img.pixels.ptr(y), r.width * 3), 0) << "row " << y;
  }
}

TEST(JpegRegion, PicksTheSmallestDctScaleThatStillHasTheResolution) {
  EXPECT_EQ(JpegRegionSource::scale_for(640, 480, 224, 224), 4);    // 320x240
  EXPECT_EQ(JpegRegionSource::scale_for(499, 411, 224, 224), 8);    // 1/2 would be 205 rows
  EXPECT_EQ(JpegRegionSource::scale_for(1800, 1800, 224, 224), 1);  // 225x225
  EXPECT_EQ(JpegRegionSource::scale_for(1000, 1000, 224, 224), 2);  // 250x250
  EXPECT_EQ(JpegRegionSource::scale_for(100, 100, 224, 224), 8);    // upscaling: full scale
}

TEST(JpegRegion, TheDecodedRegionCoversTheWindow) {
  const Bytes j = encode_jpeg(scene(640, 480));
  const struct {
    int x, y, w, h;
  } windows[] = {{0, 0, 640, 480}, {101, 37, 333, 290}, {603, 441, 37, 39}, {17, 9, 500, 460}};
  for (const auto& win : windows) {
    JpegRegionSource source;
    ASSERT_EQ(source.open(j.data(), j.size(), 3, kDefaultMaxPixels), BadInput::kNone);
    const SourceRegion r = source.region(win.x, win.y, win.w, win.h, 224, 224);
    EXPECT_LE(r.origin_x, win.x);
    EXPECT_LE(r.origin_y, win.y);
    EXPECT_GE(r.origin_x + r.image.width / r.scale, win.x + win.w);
    EXPECT_GE(r.origin_y + r.image.height / r.scale, win.y + win.h);
    // Never the whole image when the window is small: rows and MCU columns are cut.
    if (win.w < 100) {
      EXPECT_LT(r.image.width, 640 * r.scale);
      EXPECT_LT(r.image.height, 480 * r.scale);
    }
  }
}

// A JPEG damaged only near its end, and a crop in the top-left corner (or at row `y`).
BadInput fast_path_verdict(const Bytes& j, Verify verify = Verify::kWholeFile, int y = 0,
                           Bytes* pixels = nullptr) {
  JpegRegionSource source;
  source.set_verify(verify);
  const BadInput opened = source.open(j.data(), j.size(), 3, kDefaultMaxPixels);
  if (opened != BadInput::kNone) return opened;
  try {
    const SourceRegion r = source.region(0, y, 64, 64, 64, 64);
    if (pixels != nullptr) {
      pixels->clear();
      for (int row = 0; row < r.image.height; ++row) {
        const std::uint8_t* p = r.image.data + r.image.stride * static_cast<std::size_t>(row);
        pixels->insert(pixels->end(), p, p + static_cast<std::size_t>(r.image.width) * 3);
      }
    }
  } catch (const BadImage& e) {
    return e.reason;
  }
  return BadInput::kNone;
}

Bytes noisy_tall_jpeg() {
  cv::Mat m(1024, 256, CV_8UC3);
  cv::RNG rng(3);
  rng.fill(m, cv::RNG::UNIFORM, 0, 256);
  return encode_jpeg(m);
}

TEST(JpegRegion, ATruncatedTailIsCorruptEvenWhenTheCropIsAtTheTop) {
  Bytes j = noisy_tall_jpeg();
  ASSERT_EQ(fast_path_verdict(j), BadInput::kNone);
  j.resize(j.size() * 95 / 100);
  EXPECT_EQ(fast_path_verdict(j), BadInput::kCorrupt);
}

TEST(JpegRegion, AMissingEndMarkerIsCorruptEvenWhenTheCropIsAtTheTop) {
  Bytes j = noisy_tall_jpeg();
  ASSERT_EQ(j[j.size() - 2], 0xFF);
  ASSERT_EQ(j[j.size() - 1], 0xD9);
  j.resize(j.size() - 2);
  EXPECT_EQ(fast_path_verdict(j), BadInput::kCorrupt);
}

TEST(JpegRegion, GarbageInTheLastRowsIsCorruptEvenWhenTheCropIsAtTheTop) {
  Bytes j = noisy_tall_jpeg();
  std::mt19937 gen(11);
  for (std::size_t i = j.size() * 9 / 10; i < j.size() - 2; ++i)
    j[i] = static_cast<std::uint8_t>(gen());
  EXPECT_EQ(fast_path_verdict(j), BadInput::kCorrupt);
}

// Verify::kRegion: decoding stops after the crop's rows, so damage below them is not seen and
// the crop's pixels are those of the intact file; damage above or inside the crop still is.
TEST(JpegRegion, RegionModeDeliversTheIntactPixelsOfAFileDamagedBelowTheCrop) {
  const Bytes intact = noisy_tall_jpeg();
  Bytes want;
  ASSERT_EQ(fast_path_verdict(intact, Verify::kRegion, 0, &want), BadInput::kNone);
  Bytes truncated = intact;
  truncated.resize(truncated.size() * 95 / 100);
  Bytes no_marker = intact;
  no_marker.resize(no_marker.size() - 2);
  Bytes garbage = intact;
  std::mt19937 gen(11);
  for (std::size_t i = garbage.size() * 9 / 10; i < garbage.size() - 2; ++i)
    garbage[i] = static_cast<std::uint8_t>(gen());
  for (const Bytes* damaged : {&truncated, &no_marker, &garbage}) {
    Bytes got;
    EXPECT_EQ(fast_path_verdict(*damaged, Verify::kRegion, 0, &got), BadInput::kNone);
    EXPECT_TRUE(got == want);
    EXPECT_EQ(fast_path_verdict(*damaged, Verify::kWholeFile), BadInput::kCorrupt);
  }
}

TEST(JpegRegion, RegionModeStillReportsDamageAboveOrInsideTheCrop) {
  const Bytes intact = noisy_tall_jpeg();  // 1024 rows; the crop is rows 640..704
  ASSERT_EQ(fast_path_verdict(intact, Verify::kRegion, 640), BadInput::kNone);
  Bytes above = intact;  // rows near 300..400 of 1024: entropy-decoded to reach the crop
  std::mt19937 gen(5);
  for (std::size_t i = above.size() * 3 / 10; i < above.size() * 4 / 10; ++i)
    above[i] = static_cast<std::uint8_t>(gen());
  EXPECT_EQ(fast_path_verdict(above, Verify::kRegion, 640), BadInput::kCorrupt);
  Bytes inside = intact;  // ends within the crop's rows
  inside.resize(inside.size() * 66 / 100);
  EXPECT_EQ(fast_path_verdict(inside, Verify::kRegion, 640), BadInput::kCorrupt);
  Bytes header = intact;  // no image at all
  header.resize(100);
  EXPECT_EQ(fast_path_verdict(header, Verify::kRegion, 640), BadInput::kUndecodable);
}

// A progressive JPEG is read whole before its first row (libjpeg buffers every scan), so even
// Verify::kRegion reports damage anywhere in it.
TEST(JpegRegion, ProgressiveFilesAreCheckedWholeInRegionModeToo) {
  cv::Mat m(1024, 256, CV_8UC3);
  cv::RNG rng(3);
  rng.fill(m, cv::RNG::UNIFORM, 0, 256);
  Bytes j;
  cv::imencode(".jpg", m, j, {cv::IMWRITE_JPEG_QUALITY, 90, cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  ASSERT_EQ(fast_path_verdict(j, Verify::kRegion), BadInput::kNone);
  j.resize(j.size() * 95 / 100);
  EXPECT_EQ(fast_path_verdict(j, Verify::kRegion), BadInput::kCorrupt);
  EXPECT_EQ(fast_path_verdict(j, Verify::kWholeFile), BadInput::kCorrupt);
}

TEST(JpegRegion, AHeaderClaimingTooManyPixelsIsRefusedBeforeDecoding) {
  const Bytes j = encode_jpeg(scene(400, 300));
  JpegRegionSource source;
  EXPECT_EQ(source.open(j.data(), j.size(), 3, 400 * 300 - 1), BadInput::kTooLarge);
  EXPECT_EQ(source.open(j.data(), j.size(), 3, 400 * 300), BadInput::kNone);
}

}  // namespace
}  // namespace stoke::detail
