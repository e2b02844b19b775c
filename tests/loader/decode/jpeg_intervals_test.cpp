// Crops decoded from restart intervals (decode/jpeg_intervals.hpp), and the lossless re-layout
// that gives files such intervals (decode/jpeg_relayout.hpp): a region spliced from the
// intervals around it holds the whole decode's pixels at every DCT scale, subsampling, odd size
// and edge, so the pipeline's output is the sequential path's byte for byte; files whose markers
// do not tile their rows, are damaged or missing, or are progressive take the sequential path.
// Files come from libjpeg (through its own API, every subsampling), OpenCV's encoder and
// jpegtran -restart.
#include "decode/jpeg_intervals.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "augment/augment.hpp"
#include "decode/decode.hpp"
#include "decode/jpeg_common.hpp"
#include "decode/jpeg_region.hpp"
#include "decode/jpeg_relayout.hpp"
#include "libjpeg_writer.hpp"
#include "plan/sample_rng.hpp"
#include "test_support.hpp"

namespace stoke::detail {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// A photograph-like image: gradients, edges and noise, so every block has coefficients.
cv::Mat scene(int w, int h, int channels) {
  cv::Mat m(h, w, CV_8UC3);
  cv::RNG rng(11);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int edge = ((x / 23) + (y / 31)) % 2 == 0 ? 50 : 0;
      m.at<cv::Vec3b>(y, x) =
          cv::Vec3b(cv::saturate_cast<std::uint8_t>(x * 180 / w + edge),
                    cv::saturate_cast<std::uint8_t>(y * 190 / h + rng.uniform(0, 30)),
                    cv::saturate_cast<std::uint8_t>(90 + rng.uniform(-40, 40)));
    }
  if (channels == 3) return m;
  cv::Mat gray;
  cv::extractChannel(m, gray, 1);
  return gray;
}

// `m` with luma sampled h x v (chroma 1 x 1), a restart marker every `restart` MCUs or every
// `rows` MCU rows, optionally progressive.
Bytes libjpeg_file(const cv::Mat& m, int h, int v, int restart, int rows = 0,
                   bool progressive = false) {
  return test::libjpeg_compress(m, [&](jpeg_compress_struct& c) {
    if (m.channels() == 3) {
      c.comp_info[0].h_samp_factor = h;
      c.comp_info[0].v_samp_factor = v;
      c.comp_info[1].h_samp_factor = c.comp_info[1].v_samp_factor = 1;
      c.comp_info[2].h_samp_factor = c.comp_info[2].v_samp_factor = 1;
    }
    c.restart_interval = static_cast<unsigned>(restart);
    c.restart_in_rows = rows;
    if (progressive) jpeg_simple_progression(&c);
  });
}

// A window of a region, row by row.
Bytes window(const SourceRegion& r, int x, int y, int w, int h) {
  Bytes out;
  for (int row = y; row < y + h; ++row) {
    const std::uint8_t* p = r.image.data + r.image.stride * static_cast<std::size_t>(row) +
                            static_cast<std::size_t>(x) * r.image.channels;
    out.insert(out.end(), p, p + static_cast<std::size_t>(w) * r.image.channels);
  }
  return out;
}

// Every crop below, at DCT scale num/8, spliced from intervals where they leave some out (else
// sequential) and compared with the whole image decoded at that scale: the same pixels over the
// region. Returns the splices made.
int expect_whole_decode_pixels(const Bytes& j, int channels, int num, const std::string& what) {
  JpegRegionSource whole;
  EXPECT_EQ(whole.open(j.data(), j.size(), channels, kDefaultMaxPixels), BadInput::kNone);
  whole.set_verify(Verify::kRegion);
  const int W = whole.width(), H = whole.height();
  const SourceRegion all =
      whole.region(0, 0, W, H, std::max(1, W * num / 8), std::max(1, H * num / 8));
  EXPECT_EQ(whole.spliced(), 0) << what;
  EXPECT_EQ(all.scale, num / 8.0) << what;
  const int cw = std::max(W / 3, 9), ch = std::max(H / 3, 9);
  const struct {
    int x, y, w, h;
  } crops[] = {
      {0, 0, cw, ch},           {W - cw, 0, cw, ch},    {0, H - ch, cw, ch},
      {W - cw, H - ch, cw, ch}, {W / 3, H / 3, cw, ch}, {W / 2, H / 2, 9, 9},
      {0, H / 4, W, ch},        {W / 4, 0, cw, H},      {W / 5 + 3, H / 7 + 5, W / 2, H / 2}};
  int spliced = 0;
  for (const auto& c : crops) {
    JpegRegionSource source;
    EXPECT_EQ(source.open(j.data(), j.size(), channels, kDefaultMaxPixels), BadInput::kNone);
    source.set_verify(Verify::kRegion);
    const SourceRegion r =
        source.region(c.x, c.y, c.w, c.h, std::max(1, c.w * num / 8), std::max(1, c.h * num / 8));
    spliced += source.spliced();
    EXPECT_EQ(r.scale, num / 8.0) << what;
    // The region's own pixels (scaled, rounded outward; not the margin decoded around them,
    // which crop and skip boundaries touch and the pipeline does not read).
    const int ox = static_cast<int>(r.origin_x * r.scale + 0.5);
    const int oy = static_cast<int>(r.origin_y * r.scale + 0.5);
    const int x0 = c.x * num / 8, y0 = c.y * num / 8;
    const int x1 = std::min((c.x + c.w) * num / 8 + 1, all.image.width);
    const int y1 = std::min((c.y + c.h) * num / 8 + 1, all.image.height);
    EXPECT_TRUE(window(r, x0 - ox, y0 - oy, x1 - x0, y1 - y0) ==
                window(all, x0, y0, x1 - x0, y1 - y0))
        << what << ": crop " << c.x << "," << c.y << " " << c.w << "x" << c.h << " at " << num
        << "/8, " << (source.spliced() ? "spliced" : "sequential");
  }
  return spliced;
}

struct Format {
  const char* name;
  int h, v, channels;
};
constexpr Format kFormats[] = {{"4:4:4", 1, 1, 3},
                               {"4:2:2", 2, 1, 3},
                               {"4:2:0", 2, 2, 3},
                               {"4:4:0", 1, 2, 3},
                               {"gray", 1, 1, 1}};

// Of `n`, a divisor near n / 4 (intervals of about a quarter row), at least 1.
int quarter_divisor(int n) {
  for (int d = std::max(1, n / 4); d >= 1; --d)
    if (n % d == 0) return d;
  return 1;
}

TEST(JpegIntervals, SplicedRegionsHoldTheWholeDecodesPixelsForEverySubsamplingSizeAndScale) {
  const int sizes[][2] = {{333, 251}, {640, 480}, {97, 131}};
  int spliced = 0, cases = 0;
  for (const Format& f : kFormats) {
    for (const auto& size : sizes) {
      const cv::Mat m = scene(size[0], size[1], f.channels);
      const int mcu_w = f.channels == 1 ? 8 : 8 * f.h;
      const int mcus_x = (size[0] + mcu_w - 1) / mcu_w;
      // Intervals within rows (columns skipped too), and of two rows each (rows only).
      for (const Bytes& j :
           {libjpeg_file(m, f.h, f.v, quarter_divisor(mcus_x)), libjpeg_file(m, f.h, f.v, 0, 2)}) {
        JpegIntervals l;
        ASSERT_TRUE(find_jpeg_intervals(j.data(), j.size(), l)) << f.name;
        for (const int num : {1, 2, 4, 8}) {
          const std::string what = std::string(f.name) + " " + std::to_string(size[0]) + "x" +
                                   std::to_string(size[1]) + " restart " +
                                   std::to_string(l.restart);
          spliced += expect_whole_decode_pixels(j, f.channels, num, what);
          cases += 9;
        }
      }
    }
  }
  // Most crops leave whole intervals out (those that span the image cannot).
  EXPECT_GT(spliced, cases / 2);
}

// Pipeline outputs (random-resized-crop + flip, and the v2 recipe's policy and erasing) over the
// JPEG corpus re-laid out by jpegtran -restart: the same bytes with intervals as without.
TEST(JpegIntervals, TheOutputOfAJpegtranRestartCorpusIsTheSequentialPathsByteForByte) {
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(test::testdata("jpeg")))
    if (e.path().extension() == ".jpg") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  ASSERT_GE(paths.size(), 90u);
  test::TempDir dir;
  Pipeline rrc(224, 224, 3);
  rrc.random_resized_crop(224, 224).horizontal_flip(0.5f);
  Pipeline small(64, 64, 3);
  small.random_resized_crop(64, 64).horizontal_flip(0.5f).trivial_augment_wide().random_erasing(
      0.5f);
  int spliced = 0, compared = 0;
  for (std::size_t f = 0; f < paths.size(); f += 3) {
    // One marker every MCU row, or every 4 MCUs ("B": blocks).
    const std::string restart = f % 2 == 0 ? "1" : "4B";
    const fs::path out = dir.path() / "r.jpg";
    test::run("jpegtran -restart " + restart + " -outfile " + out.string() + " " +
              paths[f].string());
    const std::string text = test::read_file(out);
    const Bytes j(text.begin(), text.end());
    for (const Pipeline* p : {&rrc, &small}) {
      const std::vector<Step> steps = p->steps();
      const int oh = p->output_height(), ow = p->output_width();
      for (std::int64_t position = 0; position < 4; ++position) {
        Bytes got[2];
        for (const bool on : {false, true}) {
          JpegRegionSource source;
          ASSERT_EQ(source.open(j.data(), j.size(), 3, kDefaultMaxPixels), BadInput::kNone);
          source.set_verify(Verify::kRegion);
          source.set_intervals(on);
          got[on].resize(static_cast<std::size_t>(oh) * ow * 3);
          SampleRng rng(5, kSampleStream, 0, static_cast<std::int64_t>(f) * 8 + position);
          Augmenter a;
          a.run(steps.data(), static_cast<int>(steps.size()), source, rng, got[on].data(), oh, ow,
                3);
          spliced += source.spliced();
        }
        EXPECT_TRUE(got[0] == got[1])
            << paths[f] << " restart " << restart << " position " << position;
        ++compared;
      }
    }
  }
  // (Files whose rows are not a multiple of 4 MCUs have no layout under "4B".)
  EXPECT_GT(spliced, compared / 3);
}

// OpenCV's encoder's restart interval (libjpeg's restart_interval, in MCUs): found and used.
TEST(JpegIntervals, OpenCvsRestartIntervalIsFound) {
  const cv::Mat m = scene(320, 240, 3);  // 4:2:0: 20 MCUs a row
  Bytes j;
  cv::imencode(".jpg", m, j, {cv::IMWRITE_JPEG_RST_INTERVAL, 5});
  JpegIntervals l;
  ASSERT_TRUE(find_jpeg_intervals(j.data(), j.size(), l));
  EXPECT_EQ(l.restart, 5);
  EXPECT_TRUE(l.columns());
  EXPECT_EQ(l.starts.size(), 20u / 5 * 15);
  EXPECT_EQ(expect_whole_decode_pixels(j, 3, 8, "OpenCV"), 9);  // (each leaves intervals out)
  // An interval that does not tile the rows (7 MCUs of 20): not a layout.
  cv::imencode(".jpg", m, j, {cv::IMWRITE_JPEG_RST_INTERVAL, 7});
  EXPECT_FALSE(find_jpeg_intervals(j.data(), j.size(), l));
}

// What is not a layout takes the sequential path: no markers, a progressive file, a marker
// renumbered or gone, a second scan, a file cut short. Their pixels are the sequential path's.
TEST(JpegIntervals, FilesWithoutAUsableLayoutTakeTheSequentialPath) {
  const cv::Mat m = scene(256, 192, 3);
  const Bytes plain = libjpeg_file(m, 2, 2, 0);
  const Bytes good = libjpeg_file(m, 2, 2, 4);
  JpegIntervals l;
  ASSERT_TRUE(find_jpeg_intervals(good.data(), good.size(), l));
  ASSERT_EQ(l.starts.size(), 16u / 4 * 12);
  // The third marker (RST2) renumbered; the fifth removed (its two bytes dropped).
  Bytes renumbered = good, removed = good;
  renumbered[l.ends[2] + 1] = 0xD5;
  removed.erase(removed.begin() + l.ends[4], removed.begin() + l.ends[4] + 2);
  Bytes cut = good;
  cut.resize(cut.size() - 2);  // no EOI
  const Bytes progressive = libjpeg_file(m, 2, 2, 4, 0, true);
  for (const Bytes* j :
       std::initializer_list<const Bytes*>{&plain, &renumbered, &removed, &cut, &progressive}) {
    JpegIntervals none;
    EXPECT_FALSE(find_jpeg_intervals(j->data(), j->size(), none));
    Bytes got[2];
    BadInput verdict[2];
    for (const bool on : {false, true}) {
      JpegRegionSource source;
      ASSERT_EQ(source.open(j->data(), j->size(), 3, kDefaultMaxPixels), BadInput::kNone);
      source.set_verify(Verify::kRegion);
      source.set_intervals(on);
      try {
        const SourceRegion r = source.region(100, 90, 60, 50, 60, 50);
        got[on] = window(r, 0, 0, r.image.width, r.image.height);
        verdict[on] = BadInput::kNone;
      } catch (const BadImage& e) {
        verdict[on] = e.reason;
      }
      EXPECT_EQ(source.spliced(), 0);
    }
    EXPECT_EQ(verdict[0], verdict[1]);
    EXPECT_TRUE(got[0] == got[1]);
  }
}

// Damage inside a spliced interval is found (the splice is decoded as any JPEG is); damage in an
// interval the crop leaves out is not read at all.
TEST(JpegIntervals, DamageInsideTheCropIsCorruptAndOutsideItIsNotRead) {
  const cv::Mat m = scene(512, 512, 3);
  const Bytes good = libjpeg_file(m, 2, 2, 8);  // 32 MCUs a row: 4 intervals a row
  JpegIntervals l;
  ASSERT_TRUE(find_jpeg_intervals(good.data(), good.size(), l));
  const auto crop = [](const Bytes& j) {
    JpegRegionSource source;
    EXPECT_EQ(source.open(j.data(), j.size(), 3, kDefaultMaxPixels), BadInput::kNone);
    source.set_verify(Verify::kRegion);
    try {
      source.region(0, 0, 100, 100, 100, 100);  // MCU rows 0..7, and 8 around them
      EXPECT_EQ(source.spliced(), 1);
      return BadInput::kNone;
    } catch (const BadImage& e) {
      return e.reason;
    }
  };
  ASSERT_EQ(crop(good), BadInput::kNone);
  const auto garble = [&](std::size_t interval) {
    Bytes j = good;
    // (No 0xFF made or changed, nor the byte after one: no marker made or unmade.)
    for (std::uint32_t i = l.starts[interval] + 1; i + 1 < l.ends[interval]; ++i)
      if (j[i] != 0xFF && j[i + 1] != 0xFF && j[i - 1] != 0xFF) {
        const auto v = static_cast<std::uint8_t>(j[i] * 31 + 7);
        j[i] = v == 0xFF ? 0x7F : v;
      }
    return j;
  };
  EXPECT_EQ(crop(garble(4 * 2)), BadInput::kCorrupt);    // row 2, first interval: inside
  EXPECT_EQ(crop(garble(4 * 20 + 3)), BadInput::kNone);  // row 20, last interval: left out
}

// The interval rule: about an eighth of a row where a divisor allows it, else a row.
TEST(JpegRelayout, RestartIntervalsAreAboutAnEighthOfARowOrARow) {
  EXPECT_EQ(restart_mcus(32), 4);   // 500 px, 4:2:0: 8 intervals a row
  EXPECT_EQ(restart_mcus(125), 5);  // 2000 px: 25 a row
  EXPECT_EQ(restart_mcus(100), 10);
  EXPECT_EQ(restart_mcus(42), 3);     // 14 a row
  EXPECT_EQ(restart_mcus(7), 1);      // 7 a row, of an MCU each
  EXPECT_EQ(restart_mcus(61), 1);     // a prime: an MCU each, 61 a row
  EXPECT_EQ(restart_mcus(67), 67);    // a prime: 67 a row is more than 64
  EXPECT_EQ(restart_mcus(134), 134);  // 67 x 2: 67 a row is more than 64
  EXPECT_EQ(restart_mcus(31), 1);     // 31 a row
  EXPECT_EQ(restart_mcus(1), 1);
}

// Every subsampling, gray, CMYK, progressive, odd sizes and the test corpus: the re-laid-out file
// decodes to the same pixels, is one baseline scan, and has the intervals the rule gives.
TEST(JpegRelayout, ReLaidOutFilesDecodeToTheSamePixelsWithIntervals) {
  std::vector<std::pair<std::string, Bytes>> files;
  for (const Format& f : kFormats)
    for (const bool progressive : {false, true})
      files.emplace_back(std::string(f.name) + (progressive ? " progressive" : ""),
                         libjpeg_file(scene(333, 251, f.channels), f.h, f.v, 0, 0, progressive));
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(test::testdata("jpeg")))
    if (e.path().extension() == ".jpg") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (std::size_t i = 0; i < paths.size(); i += 8) {
    const std::string text = test::read_file(paths[i]);
    files.emplace_back(paths[i].string(), Bytes(text.begin(), text.end()));
  }
  std::size_t before = 0, after = 0;
  for (const auto& [name, bytes] : files) {
    const Relayout r = relayout_jpeg(bytes.data(), bytes.size());
    ASSERT_EQ(r.why, "") << name;
    EXPECT_EQ(r.was_progressive, name.ends_with("progressive")) << name;
    before += bytes.size();
    after += r.bytes.size();
    ImageDecoder decoder;
    DecodedImage a, b;
    ASSERT_EQ(decoder.decode_buffer(bytes.data(), bytes.size(), 3, a), BadInput::kNone) << name;
    ASSERT_EQ(decoder.decode_buffer(r.bytes.data(), r.bytes.size(), 3, b), BadInput::kNone) << name;
    ASSERT_EQ(a.pixels.size(), b.pixels.size()) << name;
    EXPECT_EQ(cv::norm(a.pixels, b.pixels, cv::NORM_INF), 0) << name;
    JpegIntervals l;
    ASSERT_TRUE(find_jpeg_intervals(r.bytes.data(), r.bytes.size(), l)) << name;
    EXPECT_EQ(l.restart, restart_mcus(l.mcus_x)) << name;
  }
  // What the markers cost, less what optimized tables save, on these small files (21 to 42
  // MCUs a row: intervals of one to four MCUs): a few percent. (The corpora's figures are in
  // docs/BENCHMARKS.md.)
  std::printf("re-laid out: %zu -> %zu bytes (%+.1f%%)\n", before, after,
              100.0 * (static_cast<double>(after) / static_cast<double>(before) - 1));
  EXPECT_LT(after, before + before / 10);
}

// A CMYK file (Adobe's marker written anew, not twice) and one with Exif and a comment (kept).
TEST(JpegRelayout, MarkersAreKeptAndAdobesIsWrittenOnce) {
  const Bytes with_markers =
      test::libjpeg_compress(scene(120, 80, 3), {}, [](jpeg_compress_struct& c) {
        const std::string exif = std::string("Exif\0\0", 6) + "not really a TIFF";
        jpeg_write_marker(&c, JPEG_APP0 + 1, reinterpret_cast<const JOCTET*>(exif.data()),
                          static_cast<unsigned>(exif.size()));
        jpeg_write_marker(&c, JPEG_COM, reinterpret_cast<const JOCTET*>("a comment"), 9);
      });
  const Relayout r = relayout_jpeg(with_markers.data(), with_markers.size());
  ASSERT_EQ(r.why, "");
  const std::string text(r.bytes.begin(), r.bytes.end());
  EXPECT_NE(text.find("not really a TIFF"), std::string::npos);
  EXPECT_NE(text.find("a comment"), std::string::npos);
  EXPECT_EQ(text.find("JFIF"), text.rfind("JFIF"));  // once
  // CMYK (YCCK, Adobe's marker): the marker once, the same pixels.
  cv::Mat inks(40, 72, CV_8UC4);
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 72 * 4; ++x) inks.ptr(y)[x] = static_cast<std::uint8_t>(x * 3 + y * 5);
  const Bytes cmyk = test::libjpeg_compress(
      inks, [](jpeg_compress_struct& c) { jpeg_set_colorspace(&c, JCS_YCCK); });
  const Relayout rc = relayout_jpeg(cmyk.data(), cmyk.size());
  ASSERT_EQ(rc.why, "");
  const std::string cmyk_text(rc.bytes.begin(), rc.bytes.end());
  ASSERT_NE(cmyk_text.find("Adobe"), std::string::npos);
  EXPECT_EQ(cmyk_text.find("Adobe"), cmyk_text.rfind("Adobe"));
  ImageDecoder decoder;
  DecodedImage a, b;
  ASSERT_EQ(decoder.decode_buffer(cmyk.data(), cmyk.size(), 3, a), BadInput::kNone);
  ASSERT_EQ(decoder.decode_buffer(rc.bytes.data(), rc.bytes.size(), 3, b), BadInput::kNone);
  EXPECT_EQ(cv::norm(a.pixels, b.pixels, cv::NORM_INF), 0);
  // Damaged input is kept as it is, saying why.
  Bytes cut = with_markers;
  cut.resize(cut.size() * 2 / 3);
  EXPECT_NE(relayout_jpeg(cut.data(), cut.size()).why.find("damaged"), std::string::npos);
  const Bytes junk = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x02, 0x12};
  EXPECT_NE(relayout_jpeg(junk.data(), junk.size()).why, "");
}

}  // namespace
}  // namespace stoke::detail
