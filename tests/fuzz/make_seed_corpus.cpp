// Writes the seed corpus for stoke_decode_fuzzer (tests/fuzz/corpus/decode/) into the directory
// given on the command line. Deterministic: running it again gives the same bytes for the same
// OpenCV and libjpeg builds.
//
// Every file is in the fuzzer's input format: a 5-byte header (control byte, 4-byte generator
// position; see decode_fuzzer.cpp) followed by an encoded image. Control bytes are spread over the
// seeds so that both channel counts and all four pipelines start out covered.
//
//   stoke_fuzz_seedgen tests/fuzz/corpus/decode

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "libjpeg_writer.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;

// A smooth gradient with a little deterministic noise: compresses to a few hundred bytes but is
// not flat, so the decoders' and resizers' arithmetic is exercised.
cv::Mat pattern(int h, int w, int c) {
  cv::Mat m(h, w, CV_8UC(c));
  std::uint32_t s = 12345;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) {
        s = s * 1664525u + 1013904223u;
        const int v = (x * 255 / std::max(w - 1, 1) + y * 97 / std::max(h - 1, 1) + k * 60) % 256;
        m.ptr<std::uint8_t>(y)[x * c + k] = static_cast<std::uint8_t>((v + (s >> 29)) & 0xff);
      }
  return m;
}

Bytes encode(const cv::Mat& m, const std::string& ext, const std::vector<int>& params = {}) {
  Bytes out;
  if (!cv::imencode(ext, m, out, params)) {
    std::cerr << "imencode " << ext << " failed\n";
    std::exit(1);
  }
  return out;
}

// An Adobe CMYK JPEG (OpenCV cannot write one): exercises decode.cpp's CMYK conversion.
Bytes cmyk_jpeg(int h, int w) {
  return stoke::test::libjpeg_compress(pattern(h, w, 4), [](jpeg_compress_struct& c) {
    jpeg_set_colorspace(&c, JCS_YCCK);  // writes the Adobe marker
    jpeg_set_quality(&c, 75, TRUE);
  });
}

void write(const std::string& dir, const std::string& name, std::uint8_t control,
           std::uint32_t position, const Bytes& image) {
  Bytes file = {control, static_cast<std::uint8_t>(position),
                static_cast<std::uint8_t>(position >> 8), static_cast<std::uint8_t>(position >> 16),
                static_cast<std::uint8_t>(position >> 24)};
  file.insert(file.end(), image.begin(), image.end());
  std::ofstream f(dir + "/" + name, std::ios::binary);
  f.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  if (!f) {
    std::cerr << "cannot write " << dir << "/" << name << "\n";
    std::exit(1);
  }
}

// control = channels bit | pipeline << 1
constexpr std::uint8_t ctl(int channels, int pipeline) {
  return static_cast<std::uint8_t>((channels == 3 ? 1 : 0) | (pipeline << 1));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " OUTDIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  const cv::Mat rgb = pattern(40, 48, 3);
  const cv::Mat gray = pattern(36, 30, 1);

  const Bytes baseline = encode(rgb, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 80});
  write(dir, "jpeg_baseline_rgb", ctl(3, 0), 1, baseline);
  write(dir, "jpeg_progressive_rgb", ctl(3, 1), 2,
        encode(rgb, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 80, cv::IMWRITE_JPEG_PROGRESSIVE, 1}));
  write(dir, "jpeg_gray", ctl(1, 2), 3, encode(gray, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 80}));
  write(dir, "jpeg_restart", ctl(1, 3), 4,
        encode(pattern(17, 33, 3), ".jpg",
               {cv::IMWRITE_JPEG_QUALITY, 60, cv::IMWRITE_JPEG_RST_INTERVAL, 1}));
  // Restart intervals a crop is spliced from (decode/jpeg_intervals.hpp): within rows (4:2:0,
  // 8 MCUs a row, 2 an interval) and of two rows (gray, 10 MCUs a row).
  write(dir, "jpeg_restart_columns", ctl(3, 0), 15,
        encode(pattern(96, 128, 3), ".jpg",
               {cv::IMWRITE_JPEG_QUALITY, 70, cv::IMWRITE_JPEG_RST_INTERVAL, 2}));
  write(dir, "jpeg_restart_rows", ctl(1, 0), 16,
        encode(pattern(64, 80, 1), ".jpg",
               {cv::IMWRITE_JPEG_QUALITY, 70, cv::IMWRITE_JPEG_RST_INTERVAL, 20}));
  write(dir, "jpeg_cmyk", ctl(3, 1), 5, cmyk_jpeg(16, 24));
  // Truncated mid-scan: libjpeg warns and pads; the decoder must report it as corrupt.
  write(dir, "jpeg_truncated", ctl(3, 0), 6,
        Bytes(baseline.begin(), baseline.begin() + static_cast<long>(baseline.size() * 2 / 3)));

  write(dir, "png_rgb", ctl(3, 3), 7, encode(rgb, ".png"));
  cv::Mat bgra = pattern(20, 26, 4);
  write(dir, "png_alpha", ctl(3, 2), 8, encode(bgra, ".png"));
  write(dir, "png_gray_small", ctl(1, 2), 9, encode(pattern(28, 28, 1), ".png"));
  cv::Mat deep;
  pattern(12, 10, 1).convertTo(deep, CV_16U, 257.0);
  write(dir, "png_gray16", ctl(1, 1), 10, encode(deep, ".png"));

  write(dir, "bmp_rgb", ctl(3, 1), 11, encode(pattern(15, 21, 3), ".bmp"));
  write(dir, "bmp_gray_wide", ctl(1, 0), 12, encode(pattern(3, 90, 1), ".bmp"));

  // Random-ish bytes, one of them starting like a JPEG so the libjpeg path sees garbage.
  Bytes noise(300);
  std::uint32_t s = 777;
  for (auto& b : noise) b = static_cast<std::uint8_t>((s = s * 1103515245u + 12345u) >> 24);
  write(dir, "noise", ctl(3, 0), 13, noise);
  Bytes soi_noise = {0xFF, 0xD8, 0xFF, 0xE0};
  soi_noise.insert(soi_noise.end(), noise.begin(), noise.begin() + 120);
  write(dir, "jpeg_soi_then_noise", ctl(1, 1), 14, soi_noise);
  return 0;
}
