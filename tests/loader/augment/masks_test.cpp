// Segmentation masks: label maps through the same geometric steps as their images, by nearest
// neighbour (augment/masks.hpp), from a list file's third column and from shard members, the
// same for any worker count and on every device, with bad masks handled by policy.
#include "augment/masks.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "augment/geometric_ops.hpp"
#include "augment/photometric.hpp"
#include "fake_gpu.hpp"
#include "stoke/error.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

using detail::LabelMap;
using detail::OutputMap;

TEST(MapMask, TakesTheLabelUnderEachOutputPixelsCentreAndFillsPaddingWithIgnore) {
  // A 4 x 2 source, scaled 2x across and mirrored, 1x down and shifted one row: out rows 1..2
  // are source rows 0..1; row 0 and the last row come from outside.
  const std::uint8_t src[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  const OutputMap map{-2, 8, 1, 1};
  std::uint8_t out[4][8];
  detail::map_mask(map, LabelMap{src, 4, 2, 1, 4}, 8, 4, 1, 255, out);
  const std::uint8_t want[4][8] = {{255, 255, 255, 255, 255, 255, 255, 255},
                                   {4, 4, 3, 3, 2, 2, 1, 1},
                                   {8, 8, 7, 7, 6, 6, 5, 5},
                                   {255, 255, 255, 255, 255, 255, 255, 255}};
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 8; ++x) EXPECT_EQ(out[y][x], want[y][x]) << y << "," << x;
  // A 3x downscale takes the source pixel under each output centre: columns 1 and 4 of 6.
  const std::uint16_t wide[1][6] = {{10, 1000, 30, 40, 5000, 60}};
  const OutputMap third{1.0 / 3, 0, 1, 0};
  std::uint16_t small[2];
  detail::map_mask(third, LabelMap{wide, 6, 1, 2, 12}, 2, 1, 2, 65535, small);
  EXPECT_EQ(small[0], 1000);
  EXPECT_EQ(small[1], 5000);
}

// A PNG written by hand (zlib, uncompressed: each row's bytes at a known place), for the kinds
// OpenCV does not write: palette and 2-bit gray. `packed` holds the rows as PNG packs them.
std::string png_bytes(int width, int height, int depth, int colour, const std::string& packed,
                      int palette_entries = 0) {
  const auto be32 = [](std::uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  const auto chunk = [&](const std::string& type, const std::string& data) {
    std::string body = type;
    body.append(data);
    std::string out = be32(static_cast<std::uint32_t>(data.size()));
    out.append(body);
    out.append(be32(static_cast<std::uint32_t>(
        ::crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())))));
    return out;
  };
  const std::size_t row = packed.size() / static_cast<std::size_t>(height);
  std::string raw;
  for (int y = 0; y < height; ++y) {
    raw.push_back('\0');
    raw.append(packed, static_cast<std::size_t>(y) * row, row);
  }
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string idat(size, '\0');
  compress2(reinterpret_cast<Bytef*>(idat.data()), &size,
            reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), 0);
  idat.resize(size);
  std::string ihdr =
      be32(static_cast<std::uint32_t>(width)) + be32(static_cast<std::uint32_t>(height));
  ihdr += {static_cast<char>(depth), static_cast<char>(colour), 0, 0, 0};
  std::string out = "\x89PNG\r\n\x1a\n";
  out.append(chunk("IHDR", ihdr));
  if (palette_entries > 0) {
    std::string plte;
    for (int i = 0; i < palette_entries; ++i)
      plte += {static_cast<char>(i * 7), static_cast<char>(255 - i), static_cast<char>(i * 3)};
    out.append(chunk("PLTE", plte));
  }
  out.append(chunk("IDAT", idat));
  out.append(chunk("IEND", ""));
  return out;
}

std::string caption(int i) {
  std::string text;
  for (int k = 0; k < i; ++k) text += "word" + std::to_string(k % 10) + "  ";
  return text.substr(0, static_cast<std::size_t>(i) * 7);
}

// The Fashion-MNIST PNG tree (testdata/fashion-png) as a list file with a synthetic mask per
// image: class + 1 where the garment is (pixel >= 64), 0 elsewhere.
class Masks : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::filesystem::path root = test::testdata("fashion-png");
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root))
      if (e.path().extension() == ".png") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    files.resize(40);
    std::ofstream list(dir_.path() / "list.txt");
    for (std::size_t i = 0; i < files.size(); ++i) {
      const int label = std::stoi(files[i].parent_path().filename().string());
      const cv::Mat gray = cv::imread(files[i].string(), cv::IMREAD_GRAYSCALE);
      cv::Mat mask(gray.size(), CV_8UC1);
      for (int y = 0; y < gray.rows; ++y)
        for (int x = 0; x < gray.cols; ++x)
          mask.at<std::uint8_t>(y, x) = gray.at<std::uint8_t>(y, x) >= 64 ? label + 1 : 0;
      const std::string name = "m" + std::to_string(i) + ".png";
      ASSERT_TRUE(cv::imwrite((dir_.path() / name).string(), mask));
      images_.push_back(gray);
      masks_.push_back(mask);
      list << files[i].string() << '\t' << label << '\t' << name << '\n';
    }
  }

  Options options(int workers, const Pipeline& p) const {
    Options o;
    o.data = (dir_.path() / "list.txt").string();
    o.batch = 8;
    o.chunk = 3;
    o.workers = workers;
    o.seed = 5;
    o.pipeline = p;
    o.log = log_.sink();
    return o;
  }

  test::TempDir dir_;
  std::vector<cv::Mat> images_, masks_;
  test::LogLines log_;
};

// Integer shifts, padding and mirrors move pixels without resampling: each output label is
// exactly the label of the output pixel's own source pixel, and padding is mask_ignore.
TEST_F(Masks, APadCropAndFlipMoveTheMaskExactlyWithThePixels) {
  Pipeline p(28, 28, 1);
  p.pad_random_crop(6, 28, 28).horizontal_flip(0.5f);
  Options o = options(2, p);
  o.mask_ignore = 200;
  Loader loader(o);
  int padded_pixels = 0;
  while (auto b = loader.next()) {
    ASSERT_EQ(b->mask_bytes(), 1);
    ASSERT_EQ(b->masks().size(), 8u * 28 * 28);
    for (int i = 0; i < b->size(); ++i) {
      const auto id = static_cast<std::size_t>(b->sample_ids()[i]);
      const float* g = b->geometry().data() + 6 * i;
      for (int y = 0; y < 28; ++y) {
        for (int x = 0; x < 28; ++x) {
          const std::uint8_t label = b->masks()[(i * 28 + y) * 28 + x];
          const std::uint8_t pixel = b->pixels()[(i * 28 + y) * 28 + x];
          // The source pixel under this output pixel, from the geometry.
          const int sx = static_cast<int>(std::floor((x + 0.5 - g[1]) / g[0]));
          const int sy = static_cast<int>(std::floor((y + 0.5 - g[3]) / g[2]));
          if (sx < 0 || sx >= 28 || sy < 0 || sy >= 28) {
            ASSERT_EQ(label, 200);
            ASSERT_EQ(pixel, 0);
            ++padded_pixels;
            continue;
          }
          ASSERT_EQ(pixel, images_[id].at<std::uint8_t>(sy, sx));
          ASSERT_EQ(label, masks_[id].at<std::uint8_t>(sy, sx));
        }
      }
    }
  }
  EXPECT_GT(padded_pixels, 1000);
}

// random_affine after a pad-crop and a flip moves the mask as F.affine moves a tv_tensors.Mask:
// the delivered labels are the source's through the integer window (mask_ignore in its padding),
// then warped by nearest neighbour with mask_ignore where the warp uncovers the image, whatever
// the image's interpolation; the pixels are the same window warped by the recorded op.
TEST_F(Masks, ARandomAffineMovesTheMaskAsTorchvisionMovesAMask) {
  for (const Interpolation mode : {Interpolation::kNearest, Interpolation::kBilinear}) {
    Pipeline p(28, 28, 1);
    p.pad_random_crop(4, 28, 28).horizontal_flip(0.5f).random_affine(
        RandomAffineRanges{.degrees_min = -30,
                           .degrees_max = 30,
                           .translate_x = 0.1f,
                           .translate_y = 0.1f,
                           .scale_min = 0.8f,
                           .scale_max = 1.2f,
                           .shear_x_min = -10,
                           .shear_x_max = 10,
                           .interpolation = mode,
                           .fill = 30});
    Options o = options(2, p);
    o.mask_ignore = 200;
    Loader loader(o);
    int ignored = 0, samples = 0;
    detail::PhotometricScratch scratch;
    std::vector<std::uint8_t> copy;
    while (auto b = loader.next()) {
      for (int i = 0; i < b->size(); ++i) {
        const auto id = static_cast<std::size_t>(b->sample_ids()[i]);
        const float* g = b->geometry().data() + 6 * i;
        const AppliedOp& op = b->applied_ops()[static_cast<std::size_t>(i)];
        ASSERT_EQ(op.op,
                  mode == Interpolation::kNearest ? ImageOp::kAffine : ImageOp::kAffineBilinear);
        // The window, from the geometry: whole pixels, 0 and mask_ignore outside the source.
        std::vector<std::uint8_t> pixels(28 * 28), labels(28 * 28);
        for (int y = 0; y < 28; ++y) {
          for (int x = 0; x < 28; ++x) {
            const int sx = static_cast<int>(std::floor((x + 0.5 - g[1]) / g[0]));
            const int sy = static_cast<int>(std::floor((y + 0.5 - g[3]) / g[2]));
            const bool in = sx >= 0 && sx < 28 && sy >= 0 && sy < 28;
            pixels[y * 28 + x] = in ? images_[id].at<std::uint8_t>(sy, sx) : 0;
            labels[y * 28 + x] = in ? masks_[id].at<std::uint8_t>(sy, sx) : 200;
          }
        }
        detail::apply_color_op(op, detail::Pixels{pixels.data(), 28, 28, 1, 28}, scratch);
        detail::affine_labels(detail::LabelImage{labels.data(), 28, 28, 1, 28}, op, 200, copy);
        ASSERT_EQ(0, std::memcmp(pixels.data(), b->pixels().data() + i * 28 * 28, 28 * 28))
            << "sample " << id;
        ASSERT_EQ(0, std::memcmp(labels.data(), b->masks().data() + i * 28 * 28, 28 * 28))
            << "sample " << id;
        ignored += static_cast<int>(std::count(labels.begin(), labels.end(), 200));
        ++samples;
      }
    }
    EXPECT_EQ(samples, 40);
    EXPECT_GT(ignored, 1000);
  }
}

// Through resampling crops the mask follows the pixels: labels are only ever the source's,
// and where the pixels show the garment the mask says so.
TEST_F(Masks, ARandomResizedCropKeepsLabelsWholeAndOnThePixelsTheyLabel) {
  Pipeline p(64, 64, 1);
  p.random_resized_crop(64, 64, 0.3f, 1.0f).horizontal_flip(0.5f);
  Loader loader(options(2, p));
  std::int64_t agree = 0, total = 0;
  while (auto b = loader.next()) {
    for (int i = 0; i < b->size(); ++i) {
      const int want = b->labels()[i] + 1;
      for (int k = 0; k < 64 * 64; ++k) {
        const std::uint8_t label = b->masks()[i * 64 * 64 + k];
        ASSERT_TRUE(label == 0 || label == want) << int(label);  // never a blend
        const bool garment = b->pixels()[i * 64 * 64 + k] >= 64;
        agree += garment == (label == want);
        ++total;
      }
    }
  }
  EXPECT_GT(static_cast<double>(agree) / static_cast<double>(total), 0.97);
}

TEST_F(Masks, TheSameMasksForAnyWorkerCountAndOnEveryDevice) {
  Pipeline p(48, 48, 1);
  p.random_resized_crop(48, 48).horizontal_flip(0.5f);
  Loader in_process(options(0, p));
  Loader three(options(3, p));
  const test::Delivered a = test::collect(in_process);
  EXPECT_EQ(a.masks.size(), 40u * 48 * 48);
  EXPECT_TRUE(a == test::collect(three));

  test::FakeGpuScope gpu;
  Options o = options(2, p);
  o.devices = DeviceSet::parse("cuda:0,1");
  o.dtype = DType::kFloat32;
  Loader loader = gpu.loader(o);
  while (auto b = loader.next()) {
    for (int d = 0; d < 2; ++d) {
      b->wait(d);
      const DeviceChunk c = b->chunk(d);
      ASSERT_EQ(c.masks.size(), 4u * 48 * 48);
      ASSERT_NE(c.device_masks, static_cast<const void*>(c.masks.data()));
      EXPECT_EQ(0, std::memcmp(c.device_masks, c.masks.data(), c.masks.size()));
    }
  }
}

TEST_F(Masks, SixteenBitMasksAreDeliveredAsUint16) {
  // Rewrite the first mask as 16-bit with labels above 255.
  cv::Mat wide;
  masks_[0].convertTo(wide, CV_16U, 1000);
  ASSERT_TRUE(cv::imwrite((dir_.path() / "m0.png").string(), wide));
  Pipeline p(28, 28, 1);
  p.resize(28, 28);
  Options o = options(0, p);
  o.shuffle = false;
  o.mask_depth = 16;
  Loader loader(o);
  auto b = loader.next();
  ASSERT_EQ(b->mask_bytes(), 2);
  const auto* labels = reinterpret_cast<const std::uint16_t*>(b->masks().data());
  for (int k = 0; k < 28 * 28; ++k) {
    ASSERT_EQ(labels[k], wide.at<std::uint16_t>(k / 28, k % 28));
    ASSERT_EQ(labels[28 * 28 + k], masks_[1].at<std::uint8_t>(k / 28, k % 28));  // widened
  }
  // The same file under 8 bits does not fit: bad_mask, and the sample is replaced.
  o.mask_depth = 8;
  Loader narrow(o);
  test::collect(narrow);
  EXPECT_EQ(narrow.stats().skipped_by_reason.at("bad_mask"), 1);
}

// Palette masks (Pascal VOC's SegmentationClass) give their indices, not colours; 2-bit gray
// masks their values, not scaled ones.
TEST_F(Masks, PaletteAndLowBitDepthMasksGiveTheirLabels) {
  std::string palette, two_bit;
  for (int y = 0; y < 28; ++y) {
    for (int x = 0; x < 28; ++x) palette += static_cast<char>(x == y ? 255 : (x * 9 + y) % 21);
    for (int x = 0; x < 28; x += 4) {  // four 2-bit labels a byte, the first in the high bits
      int byte = 0;
      for (int k = 0; k < 4; ++k) byte = byte << 2 | ((x + k + y) % 4);
      two_bit += static_cast<char>(byte);
    }
  }
  std::ofstream(dir_.path() / "m0.png", std::ios::binary) << png_bytes(28, 28, 8, 3, palette, 256);
  std::ofstream(dir_.path() / "m1.png", std::ios::binary) << png_bytes(28, 28, 2, 0, two_bit);
  Pipeline p(28, 28, 1);
  p.resize(28, 28);
  Options o = options(0, p);
  o.shuffle = false;
  Loader loader(o);
  auto b = loader.next();
  for (int k = 0; k < 28 * 28; ++k) {
    const int y = k / 28, x = k % 28;
    ASSERT_EQ(b->masks()[k], x == y ? 255 : (x * 9 + y) % 21) << k;
    ASSERT_EQ(b->masks()[28 * 28 + k], (x + y) % 4) << k;
  }
}

// A PNG mask damaged below every row its crop reads: delivered under Verify::kRegion (only the
// rows the crop needs are decoded), corrupt under kWholeFile.
TEST_F(Masks, DamageBelowTheCropIsSeenOnlyWhenTheWholeFileIsChecked) {
  constexpr int kH = 400, kW = 100;
  std::string labels;
  for (int y = 0; y < kH; ++y) labels.append(kW, static_cast<char>(y % 200));
  const std::string whole = png_bytes(kW, kH, 8, 0, labels);
  // The IDAT data is stored uncompressed, and libpng reads it 8 KiB at a time: cut at 75%,
  // rows 0..240 or so stay readable; the crop reads rows 180..219.
  const std::size_t idat = whole.find("IDAT") + 4;
  const std::size_t iend = whole.find("IEND") - 8;
  std::ofstream(dir_.path() / "damaged.png", std::ios::binary)
      << whole.substr(0, idat + (iend - idat) * 3 / 4);
  ASSERT_TRUE(cv::imwrite((dir_.path() / "tall.png").string(), cv::Mat(kH, kW, CV_8UC1, 90.0)));
  std::ofstream(dir_.path() / "tall.txt") << "tall.png\t0\tdamaged.png\ntall.png\t1\tdamaged.png\n";
  Pipeline p(40, kW, 1);
  p.center_crop(40, kW);
  Options o = options(1, p);
  o.data = (dir_.path() / "tall.txt").string();
  o.batch = 2;
  {
    Loader region(o);
    const test::Delivered d = test::collect(region);
    EXPECT_EQ(region.stats().skipped, 0);
    ASSERT_EQ(d.masks.size(), 2u * 40 * kW);
    for (std::size_t k = 0; k < d.masks.size(); ++k)
      ASSERT_EQ(d.masks[k], (180 + (k % (40 * kW)) / kW) % 200) << k;
  }
  o.verify = Verify::kWholeFile;
  o.on_error = OnError::kError;
  Loader whole_file(o);
  try {
    test::collect(whole_file);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt (its mask "), std::string::npos) << e.what();
  }
}

TEST_F(Masks, BadMasksAreSkippedByReasonOrStopTheLoader) {
  ASSERT_TRUE(cv::imwrite((dir_.path() / "m1.png").string(), cv::Mat(27, 28, CV_8UC1, 0.0)));
  ASSERT_TRUE(cv::imwrite((dir_.path() / "m2.png").string(), cv::Mat(28, 28, CV_8UC3, 0.0)));
  std::filesystem::remove(dir_.path() / "m3.png");
  Pipeline p(28, 28, 1);
  p.resize(28, 28);
  Options o = options(2, p);
  Loader loader(o);
  const test::Delivered d = test::collect(loader);
  for (std::int64_t bad : {1, 2, 3}) EXPECT_EQ(std::count(d.ids.begin(), d.ids.end(), bad), 0);
  const Stats s = loader.stats();
  EXPECT_EQ(s.skipped_by_reason.at("wrong_size"), 1);
  EXPECT_EQ(s.skipped_by_reason.at("bad_mask"), 1);
  EXPECT_EQ(s.skipped_by_reason.at("missing"), 1);
  EXPECT_TRUE(log_.contains("missing (its mask " + (dir_.path() / "m3.png").string() +
                            ") (replaced by sample"));
  o.on_error = OnError::kError;
  o.shuffle = false;
  o.workers = 0;  // in order: with workers, the chunk that finishes first names its sample
  Loader strict(o);
  try {
    while (strict.next()) {
    }
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    // The first bad sample in order is m1's: the image is named, then the mask at fault.
    EXPECT_NE(std::string(e.what()).find("(sample 1): wrong_size (its mask " +
                                         (dir_.path() / "m1.png").string() + ")"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Masks, AListWithAndWithoutMasksAndAMaskFieldOffShardsAreConfigErrors) {
  std::ofstream(dir_.path() / "mixed.txt") << "a.png\t0\tm0.png\nb.png\t1\n";
  Pipeline p(28, 28, 1);
  Options o = options(0, p);
  o.data = (dir_.path() / "mixed.txt").string();
  try {
    Loader loader(o);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("mixed.txt:2: no mask column, but line 1 has one"),
              std::string::npos)
        << e.what();
  }
  o = options(0, p);
  o.mask_field = "seg.png";
  EXPECT_THROW(Loader{o}, ConfigError);
  o = options(0, p);
  o.mask_depth = 12;
  EXPECT_THROW(Loader{o}, ConfigError);
  o.mask_depth = 8;
  o.mask_ignore = 256;
  EXPECT_THROW(Loader{o}, ConfigError);
}

// The list's samples as one shard: key.png, key.cls, key.seg.png and, from sample 1 on, a
// caption key.txt of i * 7 bytes (sample 0's is missing when `all_captions` is false).
std::string write_shard(const std::filesystem::path& dir, bool all_captions) {
  std::vector<std::pair<std::string, std::string>> members;
  std::ifstream list(dir / "list.txt");
  std::string line;
  for (int i = 0; std::getline(list, line); ++i) {
    const auto t1 = line.find('\t'), t2 = line.rfind('\t');
    char key[16];
    std::snprintf(key, sizeof key, "%06d", i);
    members.push_back({key + std::string(".png"), test::read_file(line.substr(0, t1))});
    members.push_back({key + std::string(".cls"), line.substr(t1 + 1, t2 - t1 - 1)});
    members.push_back({key + std::string(".seg.png"), test::read_file(dir / line.substr(t2 + 1))});
    if (i > 0 || all_captions) members.push_back({key + std::string(".txt"), caption(i)});
  }
  const std::filesystem::path path = dir / (all_captions ? "s.tar" : "partial.tar");
  std::ofstream(path, std::ios::binary) << test::tar_archive(members);
  return path.string();
}

// The same samples as shard members (key.png and key.seg.png) give the list file's batches.
TEST_F(Masks, ShardMembersNamedByMaskFieldAreTheSameMasks) {
  Pipeline p(32, 32, 1);
  p.random_resized_crop(32, 32).horizontal_flip(0.5f);
  Options from_list = options(2, p);
  from_list.shuffle = false;
  Options from_shard = from_list;
  from_shard.data = write_shard(dir_.path(), true);
  from_shard.mask_field = "seg.png";
  Loader a(from_list), b(from_shard);
  const test::Delivered x = test::collect(a), y = test::collect(b);
  EXPECT_EQ(x.masks.size(), 40u * 32 * 32);
  EXPECT_TRUE(x.masks == y.masks);
  EXPECT_TRUE(x.pixels == y.pixels);
  EXPECT_TRUE(x.labels == y.labels);
}

TEST_F(Masks, PassThroughBytesArriveUntouchedCutToMaxBytesByPolicy) {
  Pipeline p(28, 28, 1);
  p.resize(28, 28);
  Options o = options(2, p);
  o.data = write_shard(dir_.path(), true);
  o.bytes_field = "txt";
  {
    Loader loader(o);
    while (auto b = loader.next()) {
      ASSERT_EQ(b->max_bytes(), 39 * 7);  // the longest caption
      for (int i = 0; i < b->size(); ++i) {
        const std::string want = caption(static_cast<int>(b->sample_ids()[i]));
        ASSERT_EQ(b->byte_counts()[i], static_cast<int>(want.size()));
        const auto* got = reinterpret_cast<const char*>(b->bytes().data()) + i * b->max_bytes();
        EXPECT_EQ(std::string(got, want.size()), want);
        EXPECT_TRUE(
            std::all_of(got + want.size(), got + b->max_bytes(), [](char c) { return c == 0; }));
      }
    }
  }
  o.max_bytes = 100;  // the captions of samples 15..39 are longer
  {
    Loader loader(o);
    EXPECT_TRUE(log_.contains("25 sample(s) carry more than max_bytes 100 bytes"));
    while (auto b = loader.next()) {
      for (int i = 0; i < b->size(); ++i) {
        const std::string want = caption(static_cast<int>(b->sample_ids()[i])).substr(0, 100);
        ASSERT_EQ(b->byte_counts()[i], static_cast<int>(want.size()));
        EXPECT_EQ(
            std::string(reinterpret_cast<const char*>(b->bytes().data()) + i * 100, want.size()),
            want);
      }
    }
  }
  o.on_error = OnError::kError;
  try {
    Loader strict(o);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    // (The member named: its key read back from the shard's header, the index keeps no names.)
    EXPECT_NE(std::string(e.what()).find(".txt carries 105 bytes, more than max_bytes 100"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(".tar:0000"), std::string::npos) << e.what();
  }
  // A sample without its member is left out while indexing, as missing.
  o.on_error = OnError::kSkip;
  o.max_bytes = 0;
  o.data = write_shard(dir_.path(), false);
  Loader partial(o);
  EXPECT_EQ(partial.dataset_size(), 39);
  EXPECT_TRUE(log_.contains("000000 (no .txt member) while indexing: missing"));
}

}  // namespace
}  // namespace stoke
