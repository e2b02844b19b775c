// Google Benchmark micro-benchmarks of the JPEG decode paths, on a corpus held in memory, one
// thread, the default training augmentation (random-resized-crop 224 + flip) where it applies:
//
//   BM_TurboJpegFullDecode   TurboJPEG tjDecompress2 to RGB with the accurate (ISLOW) IDCT,
//                            no augmentation: the practical limit of a full decode.
//   BM_FullDecode            stoke's whole-image decoder (libjpeg-turbo, every warning checked).
//   BM_FullDecodeAugment     whole-image decode, then the pipeline (the general path).
//   BM_RegionDecodeAugment   the fast path: the pipeline plans its crop from the header, then
//                            only that region is decoded at the smallest DCT scale that still
//                            gives 224 pixels, resampled and flipped into the output.
//                            --pipeline runs the steps given instead (stoke-bench's vocabulary,
//                            e.g. a recipe's policy after the crop), --size sets the output.
//   BM_ImageOp/<op>          one photometric or geometric op (photometric.hpp) on a 224x224
//                            RGB image made from the first file, in place; each iteration first
//                            copies the image back, which BM_ImageOp/copy alone measures. The
//                            *_bilinear warps sample bilinearly (geometric_ops.hpp); fill=None
//                            but for affine_bilinear (random_affine_bilinear's, fill 0).
//   BM_AffineMask            random_affine's warp of a 224x224 uint8 label map (what a mask
//                            costs beside its image), with BM_ImageOp/affine's numbers.
//   BM_AugMix/<settings>     torchvision's AugMix (augmix.hpp) on that image: each iteration a
//                            new sample's draws (included) and mix, so the figure is the mean
//                            over its ops, depths and widths.
//
//   stoke-decode-benchmarks [--corpus DIR] [--limit N] [--iterations I] [--pipeline STEPS]
//                           [--size N] [google benchmark flags]
//   stoke-decode-benchmarks --sweep [--corpus DIR] [--limit N] [--passes P]
//   stoke-decode-benchmarks --interval-share [--corpus DIR] [--limit N] [--pipeline STEPS]
//
// --sweep, instead of the benchmarks, measures what chooses the fast path's defaults, in one
// run, one thread: for each DCT-scale margin k (1, 1.5, 2, 4: the smallest scale whose region
// is still k x the output each way) the mean absolute difference of its output against the
// general path's (whole decode + OpenCV area resize, the same crops; random-resized-crop to
// RGB 224 and to gray 64), and its images/s (RGB 224) with
// Verify::kWholeFile and Verify::kRegion; then the same for baseline and progressive files
// apart, TurboJPEG's full decode for scale, and the entropy-decoding floor: for one crop per
// file, the fast path's time against libjpeg-turbo's entropy decoding alone down to the crop's
// last row (what no libjpeg-based loader can skip) and over the whole image. Passes over the corpus
// alternate between the configurations; each rate is the median of P passes. Prints a Markdown
// table.
//
// DIR defaults to $STOKE_BENCH_CORPUS, else build/default/testdata/jpeg (made by the tests). Each
// iteration handles one image, cycling through the corpus; items_per_second is images per second
// per core.
// --iterations fixes the iteration count, e.g. for instruction counts under
// `valgrind --tool=callgrind --toggle-collect='*BM_*'`.

#include <benchmark/benchmark.h>
#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "augment/augment.hpp"
#include "augment/augmix.hpp"
#include "augment/geometric_ops.hpp"
#include "augment/op_sequence.hpp"
#include "augment/photometric.hpp"
#include "augment/steps/step_def.hpp"
#include "decode/decode.hpp"
#include "decode/jpeg_common.hpp"
#include "decode/jpeg_intervals.hpp"
#include "decode/jpeg_region.hpp"
#include "plan/sample_rng.hpp"
#include "stoke/names.hpp"
#include "stoke/pipeline.hpp"
#include "stoke/tools/cli.hpp"

namespace {

namespace fs = std::filesystem;
using stoke::detail::Augmenter;
using stoke::detail::BadInput;
using stoke::detail::ImageRef;
using stoke::detail::SampleRng;

std::vector<std::vector<std::uint8_t>>& corpus() {
  static std::vector<std::vector<std::uint8_t>> files;
  return files;
}

void load_corpus(const std::string& dir, std::size_t limit) {
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".jpg") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.size() > limit) paths.resize(limit);
  for (const fs::path& p : paths) {
    std::ifstream in(p, std::ios::binary);
    corpus().emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
}

// BM_FullDecodeAugment's and BM_RegionDecodeAugment's pipeline (--pipeline, --size): empty
// steps give the training pipeline (random-resized-crop and flip), RGB.
struct PipelineFlags {
  std::string steps;
  int size = 224;
};

PipelineFlags& pipeline_flags() {
  static PipelineFlags flags;
  return flags;
}

const stoke::Pipeline& pipeline() {
  static const stoke::Pipeline p = [] {
    const PipelineFlags& f = pipeline_flags();
    if (f.steps.empty()) return stoke::Pipeline::training(f.size, f.size, 3, false);
    return stoke::make_pipeline(f.size, f.size, 3, stoke::parse_steps(f.steps));
  }();
  return p;
}

std::vector<std::uint8_t> output_buffer() {
  const stoke::Pipeline& p = pipeline();
  return std::vector<std::uint8_t>(static_cast<std::size_t>(p.output_height()) *
                                   static_cast<std::size_t>(p.output_width()) *
                                   static_cast<std::size_t>(p.output_channels()));
}

void BM_TurboJpegFullDecode(benchmark::State& state) {
  tjhandle tj = tjInitDecompress();
  std::vector<std::uint8_t> rgb;
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& f = corpus()[i++ % corpus().size()];
    int w = 0, h = 0, sub = 0, space = 0;
    tjDecompressHeader3(tj, f.data(), static_cast<unsigned long>(f.size()), &w, &h, &sub, &space);
    rgb.resize(static_cast<std::size_t>(w) * h * 3);
    if (tjDecompress2(tj, f.data(), static_cast<unsigned long>(f.size()), rgb.data(), w, 0, h,
                      TJPF_RGB, TJFLAG_ACCURATEDCT) != 0) {
      state.SkipWithError(tjGetErrorStr2(tj));
      break;
    }
    benchmark::DoNotOptimize(rgb.data());
  }
  tjDestroy(tj);
  state.SetItemsProcessed(state.iterations());
}

void BM_FullDecode(benchmark::State& state) {
  stoke::detail::ImageDecoder decoder;
  stoke::detail::DecodedImage img;
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& f = corpus()[i++ % corpus().size()];
    if (decoder.decode_buffer(f.data(), f.size(), 3, img) != BadInput::kNone) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::DoNotOptimize(img.pixels.data);
  }
  state.SetItemsProcessed(state.iterations());
}

// A configuration of the fast path: the DCT-scale margin and floor, and the Verify mode.
struct FastPath {
  double k = stoke::detail::kDefaultAreaOversample;
  stoke::Verify verify = stoke::Verify::kWholeFile;
  int floor = stoke::detail::kDefaultAreaFloor;
};
FastPath& fast_path_flags();

// Runs the training pipeline once per iteration on the next file, from the source `open`
// makes of its bytes (nullptr when it cannot).
template <class Open>
void augment_each(benchmark::State& state, Open open) {
  Augmenter augmenter;
  augmenter.set_area_oversample(fast_path_flags().k, fast_path_flags().floor);
  auto out = output_buffer();
  const std::vector<stoke::Step> steps = pipeline().steps();
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& f = corpus()[i % corpus().size()];
    SampleRng rng(1, stoke::detail::kSampleStream, 0, static_cast<std::int64_t>(i++));
    stoke::detail::ImageSource* source = open(f);
    if (source == nullptr) {
      state.SkipWithError("decode failed");
      break;
    }
    augmenter.run(steps.data(), static_cast<int>(steps.size()), *source, rng, out.data(),
                  pipeline().output_height(), pipeline().output_width(),
                  pipeline().output_channels());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_FullDecodeAugment(benchmark::State& state) {
  stoke::detail::ImageDecoder decoder;
  stoke::detail::DecodedImage img;
  std::optional<stoke::detail::PlainSource> plain;
  augment_each(state, [&](const std::vector<std::uint8_t>& f) -> stoke::detail::ImageSource* {
    if (decoder.decode_buffer(f.data(), f.size(), 3, img) != BadInput::kNone) return nullptr;
    plain.emplace(ImageRef{img.pixels.data, img.pixels.rows, img.pixels.cols, 3, img.pixels.step[0],
                           img.bgr});
    return &*plain;
  });
}

// The fast path's configuration for BM_RegionDecodeAugment (--oversample, --verify).
FastPath& fast_path_flags() {
  static FastPath flags;
  return flags;
}

void BM_RegionDecodeAugment(benchmark::State& state) {
  stoke::detail::JpegRegionSource source;
  source.set_verify(fast_path_flags().verify);
  augment_each(state, [&](const std::vector<std::uint8_t>& f) -> stoke::detail::ImageSource* {
    const BadInput r = source.open(f.data(), f.size(), 3, stoke::detail::kDefaultMaxPixels);
    return r == BadInput::kNone ? &source : nullptr;
  });
}

// ---- --sweep ---------------------------------------------------------------------------------

// Whether a JPEG is progressive, as libjpeg reads its header (false when it cannot).
bool progressive(const std::vector<std::uint8_t>& f) {
  jpeg_decompress_struct cinfo{};
  stoke::detail::JpegErrors errors;
  cinfo.err = stoke::detail::install_jpeg_errors(errors);
  if (setjmp(errors.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, f.data(), static_cast<unsigned long>(f.size()));
  const bool yes = jpeg_read_header(&cinfo, TRUE) == JPEG_HEADER_OK && cinfo.progressive_mode;
  jpeg_destroy_decompress(&cinfo);
  return yes;
}

// A pipeline with its wire steps, for the sweep's outputs.
struct SweepPipeline {
  const char* name;
  stoke::Pipeline pipeline;
  std::vector<stoke::Step> steps = pipeline.steps();
  std::size_t bytes() const {
    return static_cast<std::size_t>(pipeline.output_height()) * pipeline.output_width() *
           pipeline.output_channels();
  }
};

// The fast path's output for file f at `position`.
bool fast_output(const FastPath& c, const std::vector<std::uint8_t>& f, std::int64_t position,
                 Augmenter& augmenter, stoke::detail::JpegRegionSource& source,
                 const SweepPipeline& p, std::vector<std::uint8_t>& out) {
  const int ch = p.pipeline.output_channels();
  if (source.open(f.data(), f.size(), ch, stoke::detail::kDefaultMaxPixels) != BadInput::kNone)
    return false;
  source.set_verify(c.verify);
  augmenter.set_area_oversample(c.k, c.floor);
  SampleRng rng(1, stoke::detail::kSampleStream, 0, position);
  augmenter.run(p.steps.data(), static_cast<int>(p.steps.size()), source, rng, out.data(),
                p.pipeline.output_height(), p.pipeline.output_width(), ch);
  return true;
}

// The general path: whole decode, then the pipeline on the pixels (OpenCV's area resize). Its
// decoder lives as long as the sweep, as a worker's does (BM_FullDecodeAugment's too), so its
// buffers are not allocated again for every image.
struct GeneralPath {
  stoke::detail::ImageDecoder decoder;
  stoke::detail::DecodedImage img;
  Augmenter augmenter;
};

bool general_output(const std::vector<std::uint8_t>& f, std::int64_t position, GeneralPath& g,
                    const SweepPipeline& p, std::vector<std::uint8_t>& out) {
  const int ch = p.pipeline.output_channels();
  stoke::detail::DecodedImage& img = g.img;
  if (g.decoder.decode_buffer(f.data(), f.size(), ch, img) != BadInput::kNone) return false;
  const ImageRef whole{img.pixels.data,    img.pixels.rows, img.pixels.cols, ch,
                       img.pixels.step[0], img.bgr};
  SampleRng rng(1, stoke::detail::kSampleStream, 0, position);
  g.augmenter.run(p.steps.data(), static_cast<int>(p.steps.size()), whole, rng, out.data(),
                  p.pipeline.output_height(), p.pipeline.output_width(), ch);
  return true;
}

// An ImageSource that only records where the pipeline's crop ends (its last row), handing back
// a blank region: how far down a file the fast path must entropy-decode for that crop.
class CropEndRecorder final : public stoke::detail::ImageSource {
 public:
  CropEndRecorder(int width, int height) : width_(width), height_(height) {}
  int width() const override { return width_; }
  int height() const override { return height_; }
  bool partial() const override { return true; }
  stoke::detail::SourceRegion region(int x, int y, int w, int h, int, int) override {
    end_ = y + h;
    // A blank region at scale 1/8 around the window, as a JPEG at its smallest scale would be.
    const int bw = (w + 7) / 8 + 2, bh = (h + 7) / 8 + 2;
    blank_.assign(static_cast<std::size_t>(bw) * bh * 3, 128);
    stoke::detail::SourceRegion r;
    r.image = ImageRef{blank_.data(), bh, bw, 3, static_cast<std::size_t>(bw) * 3, false};
    r.scale = 1.0 / 8;
    r.origin_x = std::max(0, x - 8);
    r.origin_y = std::max(0, y - 8);
    return r;
  }
  ImageRef whole() override {
    end_ = height_;
    blank_.assign(static_cast<std::size_t>(width_) * height_ * 3, 128);
    return ImageRef{blank_.data(), height_, width_, 3, static_cast<std::size_t>(width_) * 3, false};
  }
  int end() const { return end_; }

 private:
  int width_, height_, end_ = 0;
  std::vector<std::uint8_t> blank_;
};

// libjpeg-turbo's entropy decoding alone of a file's first `rows` rows (jpeg_skip_scanlines:
// no inverse DCT, colour conversion or resize): the least a libjpeg-based loader must spend to
// reach a crop ending there.
void entropy_decode_rows(const std::vector<std::uint8_t>& f, int rows) {
  jpeg_decompress_struct cinfo{};
  stoke::detail::JpegErrors errors;
  cinfo.err = stoke::detail::install_jpeg_errors(errors);
  if (setjmp(errors.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    return;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, f.data(), static_cast<unsigned long>(f.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const auto skip = std::min<JDIMENSION>(static_cast<JDIMENSION>(rows), cinfo.output_height - 1);
  if (skip > 0) jpeg_skip_scanlines(&cinfo, skip);
  jpeg_destroy_decompress(&cinfo);  // aborts the rest
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0
         : v.size() % 2 ? v[v.size() / 2]
                        : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// ---- --interval-share ------------------------------------------------------------------------

// For each file and 4 draws of the pipeline, under Verify::kRegion: the crop's share of the
// image's area and, where the crop was spliced from restart intervals, the share of the file's
// entropy-coded bytes decoded; then the time of the fast path per crop, and of the walk that
// finds a file's restart markers (find_jpeg_intervals, which the fast path runs once a crop):
// what recording the markers' offsets ahead of time could save at most. Each time is the median
// of 5 passes over the files, the two alternated. Prints a Markdown table.
int interval_share() {
  const SweepPipeline p{"RGB", pipeline()};
  FastPath c = fast_path_flags();
  c.verify = stoke::Verify::kRegion;
  Augmenter augmenter;
  stoke::detail::JpegRegionSource source;
  std::vector<std::uint8_t> out(p.bytes());
  const auto& files = corpus();
  double area = 0, kept = 0, share = 0;
  int crops = 0, spliced = 0;
  for (std::size_t f = 0; f < files.size(); ++f) {
    for (std::int64_t position = 0; position < 4; ++position) {
      try {
        if (!fast_output(c, files[f], static_cast<std::int64_t>(f) * 4 + position, augmenter,
                         source, p, out))
          continue;
      } catch (const std::exception&) {
        continue;  // (a damaged file: no crop to count)
      }
      const auto& s = source.last_share();
      ++crops;
      area += s.area;
      if (s.total == 0) continue;
      ++spliced;
      kept += static_cast<double>(s.kept);
      share += s.area * static_cast<double>(s.total);
    }
  }
  // The times: the fast path over every file's 4 crops, and the marker walk over every file
  // 4 times, alternated, 5 passes each.
  using Clock = std::chrono::steady_clock;
  std::vector<double> decode_us, walk_us;
  std::size_t found = 0;
  for (int pass = 0; pass < 5; ++pass) {
    auto t0 = Clock::now();
    int n = 0;
    for (std::size_t f = 0; f < files.size(); ++f)
      for (std::int64_t position = 0; position < 4; ++position) try {
          n += fast_output(c, files[f], static_cast<std::int64_t>(f) * 4 + position, augmenter,
                           source, p, out);
        } catch (const std::exception&) {
        }
    const auto t1 = Clock::now();
    stoke::detail::JpegIntervals intervals;
    found = 0;
    for (std::size_t f = 0; f < files.size(); ++f)
      for (int r = 0; r < 4; ++r)
        found += stoke::detail::find_jpeg_intervals(files[f].data(), files[f].size(), intervals);
    const auto t2 = Clock::now();
    decode_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() /
                        std::max(n, 1));
    walk_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count() /
                      static_cast<double>(std::max<std::size_t>(files.size() * 4, 1)));
  }
  std::sort(decode_us.begin(), decode_us.end());
  std::sort(walk_us.begin(), walk_us.end());
  const double decode = decode_us[2], walk = walk_us[2];
  std::printf(
      "| crops | spliced | crop's share of the area | bytes decoded / the crops' share of the "
      "bytes | fast path, us a crop | marker walk, us a file (files with markers that tile) | "
      "walk / fast path |\n|---|---|---|---|---|---|---|\n| %d | %d | %.3f | %.2f | %.1f | %.2f "
      "(%zu of %zu) | %.1f%% |\n",
      crops, spliced, crops ? area / crops : 0.0, share > 0 ? kept / share : 0.0, decode, walk,
      found / 4, files.size(), decode > 0 ? 100.0 * walk / decode : 0.0);
  return 0;
}

int sweep(int passes) {
  const SweepPipeline rgb{"RGB 224", pipeline()};
  const SweepPipeline gray{"gray 64", stoke::Pipeline::training(64, 64, 1, false)};
  const auto& files = corpus();
  std::vector<std::size_t> baseline, prog, all;
  for (std::size_t i = 0; i < files.size(); ++i) {
    (progressive(files[i]) ? prog : baseline).push_back(i);
    all.push_back(i);
  }
  std::fprintf(stderr, "sweep: %zu files (%zu progressive), %d passes each\n", files.size(),
               prog.size(), passes);
  // The margins alone, then the shipped rule (the default margin with its pixel floor).
  const FastPath rows[] = {{1, stoke::Verify::kWholeFile, 0},
                           {1.5, stoke::Verify::kWholeFile, 0},
                           {2, stoke::Verify::kWholeFile, 0},
                           {4, stoke::Verify::kWholeFile, 0},
                           FastPath{}};
  // Quality: two crops per file, against the general path, for both pipelines.
  Augmenter augmenter;
  GeneralPath reference;
  stoke::detail::JpegRegionSource source;
  std::vector<double> mad_mean[2], mad_worst[2];
  for (const FastPath& row : rows) {
    for (int q = 0; q < 2; ++q) {
      const SweepPipeline& p = q == 0 ? rgb : gray;
      std::vector<std::uint8_t> fast(p.bytes()), general(p.bytes());
      double sum = 0, worst = 0;
      int n = 0;
      for (std::size_t i : all) {
        for (std::int64_t pos = 0; pos < 2; ++pos) {
          const std::int64_t position = static_cast<std::int64_t>(i) * 2 + pos;
          if (!fast_output(row, files[i], position, augmenter, source, p, fast) ||
              !general_output(files[i], position, reference, p, general))
            continue;
          double d = 0;
          for (std::size_t b = 0; b < fast.size(); ++b)
            d += std::abs(int{fast[b]} - int{general[b]});
          d /= static_cast<double>(fast.size());
          sum += d;
          worst = std::max(worst, d);
          ++n;
        }
      }
      mad_mean[q].push_back(n > 0 ? sum / n : 0);
      mad_worst[q].push_back(worst);
      std::fprintf(stderr, "  k %.1f floor %d, %s: quality measured over %d crops\n", row.k,
                   row.floor, p.name, n);
    }
  }
  std::vector<std::uint8_t> fast(rgb.bytes()), general(rgb.bytes());
  // Speed: every configuration once per pass, in turn, on the same files.
  struct Config {
    FastPath c;
    const std::vector<std::size_t>* files;
    std::vector<double> rates;
  };
  std::vector<Config> configs;
  for (const FastPath& row : rows) {
    for (stoke::Verify v : {stoke::Verify::kWholeFile, stoke::Verify::kRegion})
      configs.push_back({{row.k, v, row.floor}, &all, {}});
  }
  const std::size_t kinds = configs.size();
  for (const auto* set : {&baseline, &prog}) {
    if (set->empty()) continue;
    for (stoke::Verify v : {stoke::Verify::kWholeFile, stoke::Verify::kRegion})
      configs.push_back({{.verify = v}, set, {}});
  }
  // The entropy-decoding floor: for one crop per file (position = file index), where the crop
  // ends, then per pass the fast path on those crops and the entropy decoding they need.
  std::vector<int> crop_end(files.size()), crop_height(files.size());
  for (std::size_t i : all) {
    if (source.open(files[i].data(), files[i].size(), 3, stoke::detail::kDefaultMaxPixels) !=
        BadInput::kNone)
      continue;
    CropEndRecorder r(source.width(), source.height());
    SampleRng rng(1, stoke::detail::kSampleStream, 0, static_cast<std::int64_t>(i));
    augmenter.set_area_oversample(stoke::detail::kDefaultAreaOversample);
    augmenter.run(rgb.steps.data(), static_cast<int>(rgb.steps.size()), r, rng, fast.data(), 224,
                  224, 3);
    crop_end[i] = r.end();
    crop_height[i] = source.height();
  }
  std::vector<double> floor_fast, floor_to_end, floor_whole;  // seconds per pass
  const FastPath shipped{.verify = stoke::Verify::kRegion};
  std::vector<double> general_rates, turbo_rates;
  tjhandle tj = tjInitDecompress();
  std::vector<std::uint8_t> decoded;
  std::int64_t position = 0;
  using Clock = std::chrono::steady_clock;
  for (int p = 0; p < passes; ++p) {
    for (Config& cfg : configs) {
      const auto t0 = Clock::now();
      for (std::size_t i : *cfg.files)
        fast_output(cfg.c, files[i], position++, augmenter, source, rgb, fast);
      cfg.rates.push_back(cfg.files->size() /
                          std::chrono::duration<double>(Clock::now() - t0).count());
    }
    auto t0 = Clock::now();
    for (std::size_t i : all) general_output(files[i], position++, reference, rgb, general);
    general_rates.push_back(all.size() / std::chrono::duration<double>(Clock::now() - t0).count());
    t0 = Clock::now();
    for (std::size_t i : all) {
      const auto& f = files[i];
      int w = 0, h = 0, sub = 0, space = 0;
      tjDecompressHeader3(tj, f.data(), static_cast<unsigned long>(f.size()), &w, &h, &sub, &space);
      decoded.resize(static_cast<std::size_t>(w) * h * 3);
      tjDecompress2(tj, f.data(), static_cast<unsigned long>(f.size()), decoded.data(), w, 0, h,
                    TJPF_RGB, TJFLAG_ACCURATEDCT);
    }
    turbo_rates.push_back(all.size() / std::chrono::duration<double>(Clock::now() - t0).count());
    t0 = Clock::now();
    for (std::size_t i : all)
      fast_output(shipped, files[i], static_cast<std::int64_t>(i), augmenter, source, rgb, fast);
    floor_fast.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    t0 = Clock::now();
    for (std::size_t i : all) entropy_decode_rows(files[i], crop_end[i]);
    floor_to_end.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    t0 = Clock::now();
    for (std::size_t i : all) entropy_decode_rows(files[i], crop_height[i]);
    floor_whole.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    std::fprintf(stderr, "  pass %d/%d done\n", p + 1, passes);
  }
  tjDestroy(tj);
  const double turbo = median(turbo_rates);
  std::printf(
      "| DCT margin k | MAD mean (worst), RGB 224 | MAD mean (worst), gray 64 | "
      "img/s, whole-file | img/s, region | region / whole-file |\n"
      "|---|---|---|---|---|---|\n");
  for (std::size_t j = 0; j < std::size(rows); ++j) {
    const double whole = median(configs[2 * j].rates), region = median(configs[2 * j + 1].rates);
    char label[64];
    if (rows[j].floor > 0)
      std::snprintf(label, sizeof label, "%.1f, floor %d px (default)", rows[j].k, rows[j].floor);
    else
      std::snprintf(label, sizeof label, "%.1f", rows[j].k);
    std::printf("| %s | %.3f (%.3f) | %.3f (%.3f) | %.1f | %.1f | %.2f |\n", label, mad_mean[0][j],
                mad_worst[0][j], mad_mean[1][j], mad_worst[1][j], whole, region, region / whole);
  }
  std::printf(
      "\n| files (default rule) | count | img/s, whole-file | img/s, region |\n"
      "|---|---|---|---|\n");
  for (std::size_t j = kinds; j + 1 < configs.size(); j += 2) {
    std::printf("| %s | %zu | %.1f | %.1f |\n",
                configs[j].files == &baseline ? "baseline" : "progressive",
                configs[j].files->size(), median(configs[j].rates), median(configs[j + 1].rates));
  }
  std::printf(
      "\n| reference | img/s |\n|---|---|\n| general path (whole decode + OpenCV "
      "resize) | %.1f |\n| TurboJPEG full decode | %.1f |\n",
      median(general_rates), turbo);
  double ends = 0;
  for (std::size_t i : all) ends += crop_height[i] > 0 ? double(crop_end[i]) / crop_height[i] : 0;
  const double ms = 1e3 / static_cast<double>(all.size());
  std::printf(
      "\n| per image, the same crops (ending at %.1f%% of the height on average) | ms |\n"
      "|---|---|\n| the fast path, default rule, region | %.3f |\n"
      "| entropy decoding alone, down to the crop's last row | %.3f |\n"
      "| entropy decoding alone, the whole image | %.3f |\n",
      100 * ends / static_cast<double>(all.size()), median(floor_fast) * ms,
      median(floor_to_end) * ms, median(floor_whole) * ms);
  return 0;
}

// Registered in main so that --iterations can fix the count (for valgrind's instruction counts).
// The 224x224 RGB image the op benchmarks work on: the corpus's first file, resized.
const cv::Mat& op_image() {
  static const cv::Mat image = [] {
    stoke::detail::ImageDecoder decoder;
    stoke::detail::DecodedImage img;
    const auto& f = corpus().front();
    if (decoder.decode_buffer(f.data(), f.size(), 3, img) != BadInput::kNone)
      throw std::runtime_error("the corpus's first file does not decode");
    cv::Mat rgb, out;
    if (img.bgr)
      cv::cvtColor(img.pixels, rgb, cv::COLOR_BGR2RGB);
    else
      rgb = img.pixels;
    cv::resize(rgb, out, cv::Size(224, 224), 0, 0, cv::INTER_AREA);
    return out;
  }();
  return image;
}

void BM_ImageOp(benchmark::State& state, stoke::AppliedOp op, stoke::Interpolation interpolation) {
  const cv::Mat& source = op_image();
  cv::Mat work = source.clone();
  const stoke::detail::Pixels px{work.data, work.rows, work.cols, 3, work.step[0]};
  stoke::detail::PhotometricScratch scratch;
  for (auto _ : state) {
    source.copyTo(work);
    if (op.op != stoke::ImageOp::kNone)
      stoke::detail::apply_color_op(op, px, scratch, interpolation);
    benchmark::DoNotOptimize(work.data);
  }
  state.SetItemsProcessed(state.iterations());
}

// AugMix with `text`'s settings on the 224x224 image, a new sample's draws each iteration (the
// draws included), as torchvision's AugMix draws anew on each call.
void BM_AugMix(benchmark::State& state, const char* text) {
  const cv::Mat& source = op_image();
  cv::Mat work = source.clone();
  const stoke::detail::Pixels px{work.data, work.rows, work.cols, 3, work.step[0]};
  const stoke::Pipeline p = stoke::make_pipeline(224, 224, 3, stoke::parse_steps(text));
  const stoke::Step step = p.steps().back();
  stoke::detail::PhotometricScratch scratch;
  std::vector<stoke::AppliedOp> ops;
  std::int64_t position = 0;
  for (auto _ : state) {
    source.copyTo(work);
    stoke::detail::SampleRng rng(1, stoke::detail::kSampleStream, 0, position++);
    ops.clear();
    stoke::detail::draw_pixel_ops(step, rng, 224, 224, ops);
    stoke::detail::apply_ops(ops, px, scratch);
    benchmark::DoNotOptimize(work.data);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_AffineMask(benchmark::State& state) {
  cv::Mat source(224, 224, CV_8UC1);
  for (int y = 0; y < 224; ++y)
    for (int x = 0; x < 224; ++x)
      source.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>((x / 16 + y / 16) % 21);
  cv::Mat work = source.clone();
  const stoke::AppliedOp op{stoke::ImageOp::kAffine, {15.f, 10.f, -5.f, 1.1f, 5.f, 3.f, 0.f}};
  std::vector<std::uint8_t> copy;
  for (auto _ : state) {
    source.copyTo(work);
    stoke::detail::affine_labels(stoke::detail::LabelImage{work.data, 224, 224, 1, work.step[0]},
                                 op, 255, copy);
    benchmark::DoNotOptimize(work.data);
  }
  state.SetItemsProcessed(state.iterations());
}

// A timm step as one sample gets it: drawn from sample `i`'s generator (a new sample each
// iteration), then applied, so the figure is the step's mean cost over its draws.
void BM_TimmStep(benchmark::State& state, const char* config) {
  const cv::Mat& source = op_image();
  cv::Mat work = source.clone();
  const stoke::detail::Pixels px{work.data, work.rows, work.cols, 3, work.step[0]};
  stoke::detail::PhotometricScratch scratch;
  stoke::Pipeline p(224, 224, 3);
  p.timm_augment(config, stoke::TimmInterpolation::kBicubic);
  const stoke::Step step = p.steps().back();
  std::vector<stoke::AppliedOp> ops;
  std::int64_t i = 0;
  for (auto _ : state) {
    source.copyTo(work);
    stoke::detail::SampleRng rng(1, stoke::detail::kSampleStream, 0, i++);
    ops.clear();
    stoke::detail::draw_pixel_ops(step, rng, 224, 224, ops);
    stoke::detail::apply_ops(ops, px, scratch);
    benchmark::DoNotOptimize(work.data);
  }
  state.SetItemsProcessed(state.iterations());
}

void register_ops(long iterations) {
  using stoke::ImageOp;
  const std::pair<const char*, stoke::AppliedOp> ops[] = {
      {"copy", {ImageOp::kNone}},
      {"brightness", {ImageOp::kBrightness, {1.3f}}},
      {"contrast", {ImageOp::kContrast, {1.3f}}},
      {"saturation", {ImageOp::kSaturation, {1.3f}}},
      {"hue", {ImageOp::kHue, {0.1f}}},
      {"grayscale", {ImageOp::kGrayscale}},
      {"solarize", {ImageOp::kSolarize, {128.f}}},
      {"posterize", {ImageOp::kPosterize, {4.f}}},
      {"equalize", {ImageOp::kEqualize}},
      {"autocontrast", {ImageOp::kAutocontrast}},
      {"sharpness", {ImageOp::kSharpness, {1.5f}}},
      {"invert", {ImageOp::kInvert}},
      {"gaussian_blur_5", {ImageOp::kGaussianBlur, {5.f, 5.f, 1.f}}},
      {"gaussian_blur_23", {ImageOp::kGaussianBlur, {23.f, 23.f, 1.f}}},
      {"affine", {ImageOp::kAffine, {15.f, 10.f, -5.f, 1.1f, 5.f, 3.f, 0.f}}},
      {"affine_bilinear", {ImageOp::kAffineBilinear, {15.f, 10.f, -5.f, 1.1f, 5.f, 3.f, 0.f}}},
      {"shear", {ImageOp::kShear, {0.3f, 0.f, 0.f}}},
      {"rotate", {ImageOp::kRotate, {30.f, 0.f}}},
      // timm's ops (Pillow's arithmetic), fill (124, 116, 104); 2 bilinear, 3 bicubic.
      {"pil_autocontrast", {ImageOp::kPilAutocontrast}},
      {"pil_equalize", {ImageOp::kPilEqualize}},
      {"pil_invert", {ImageOp::kPilInvert}},
      {"pil_posterize", {ImageOp::kPilPosterize, {4.f}}},
      {"pil_solarize", {ImageOp::kPilSolarize, {128.f}}},
      {"pil_solarize_add", {ImageOp::kPilSolarizeAdd, {55.f, 128.f}}},
      {"pil_color", {ImageOp::kPilColor, {1.3f}}},
      {"pil_contrast", {ImageOp::kPilContrast, {1.3f}}},
      {"pil_brightness", {ImageOp::kPilBrightness, {1.3f}}},
      {"pil_sharpness", {ImageOp::kPilSharpness, {1.5f}}},
      {"pil_rotate_bilinear", {ImageOp::kPilRotate, {30.f, 2.f, 124.f, 116.f, 104.f}}},
      {"pil_rotate_bicubic", {ImageOp::kPilRotate, {30.f, 3.f, 124.f, 116.f, 104.f}}},
      {"pil_shear_x_bicubic", {ImageOp::kPilShearX, {0.3f, 3.f, 124.f, 116.f, 104.f}}},
      {"pil_translate_x_rel_bicubic",
       {ImageOp::kPilTranslateXRel, {0.3f, 3.f, 124.f, 116.f, 104.f}}}};
  const auto add = [&](const std::string& name, const stoke::AppliedOp& op,
                       stoke::Interpolation interpolation) {
    auto* b =
        benchmark::RegisterBenchmark(("BM_ImageOp/" + name).c_str(), BM_ImageOp, op, interpolation)
            ->Unit(benchmark::kMillisecond);
    if (iterations > 0) b->Iterations(iterations);
  };
  for (const auto& [name, op] : ops) add(name, op, stoke::Interpolation::kNearest);
  // The warps as AugMix takes them by default: bilinear, fill=None.
  const std::pair<const char*, stoke::AppliedOp> bilinear[] = {
      {"shear_bilinear", {ImageOp::kShear, {0.3f, 0.f, stoke::kNoFill}}},
      {"rotate_bilinear", {ImageOp::kRotate, {30.f, stoke::kNoFill}}},
      {"rotate_bilinear_fill", {ImageOp::kRotate, {30.f, 0.f}}}};
  for (const auto& [name, op] : bilinear) add(name, op, stoke::Interpolation::kBilinear);
  const std::pair<const char*, const char*> augmix[] = {
      {"BM_AugMix/default", "augmix"}, {"BM_AugMix/nearest", "augmix interpolation=nearest"}};
  for (const auto& [name, text] : augmix) {
    auto* b = benchmark::RegisterBenchmark(name, BM_AugMix, text)->Unit(benchmark::kMillisecond);
    if (iterations > 0) b->Iterations(iterations);
  }
  for (const char* config : {"rand-m9-mstd0.5-inc1", "augmix-m5-w3"}) {
    auto* b = benchmark::RegisterBenchmark((std::string("BM_TimmStep/") + config).c_str(),
                                           BM_TimmStep, config)
                  ->Unit(benchmark::kMillisecond);
    if (iterations > 0) b->Iterations(iterations);
  }
  auto* mask =
      benchmark::RegisterBenchmark("BM_AffineMask", BM_AffineMask)->Unit(benchmark::kMillisecond);
  if (iterations > 0) mask->Iterations(iterations);
}

void register_all(long iterations) {
  const std::pair<const char*, void (*)(benchmark::State&)> all[] = {
      {"BM_TurboJpegFullDecode", BM_TurboJpegFullDecode},
      {"BM_FullDecode", BM_FullDecode},
      {"BM_FullDecodeAugment", BM_FullDecodeAugment},
      {"BM_RegionDecodeAugment", BM_RegionDecodeAugment}};
  for (const auto& [name, fn] : all) {
    auto* b = benchmark::RegisterBenchmark(name, fn)->Unit(benchmark::kMillisecond);
    if (iterations > 0) b->Iterations(iterations);
  }
  register_ops(iterations);
}

}  // namespace

// The command line; nullopt: go on, else the exit code (see stoke/tools/cli.hpp). Google
// Benchmark's own flags pass through to `benchmark_args`, which it checks itself.
std::optional<int> parse_args(int argc, char** argv, std::string& dir, std::size_t& limit,
                              long& iterations, int& sweep_passes,
                              std::vector<std::string>& benchmark_args) {
  CLI::App app("Micro-benchmarks of stoke's JPEG decode paths on a corpus held in memory.",
               "stoke-decode-benchmarks");
  stoke::tools::configure(app);
  app.allow_extras();
  app.add_option("--corpus", dir,
                 "JPEG files to decode (default: $STOKE_BENCH_CORPUS, else "
                 "build/default/testdata/jpeg)")
      ->type_name("DIR");
  app.add_option("--limit", limit, "at most N files of the corpus")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
      ->capture_default_str();
  app.add_option("--iterations", iterations, "a fixed iteration count (e.g. under callgrind)")
      ->check(CLI::Range(1L, 1L << 40));
  app.add_option("--oversample", fast_path_flags().k,
                 "BM_RegionDecodeAugment's DCT-scale margin k (default: the library's)")
      ->check(CLI::Range(1.0, 16.0));
  stoke::tools::add_word(app, "--verify", fast_path_flags().verify, stoke::parse_verify,
                         "BM_RegionDecodeAugment's Verify mode (default whole-file)")
      ->type_name("whole-file|region");
  CLI::Option* steps =
      app.add_option("--pipeline", pipeline_flags().steps,
                     "BM_FullDecodeAugment's and BM_RegionDecodeAugment's steps, as stoke-bench's "
                     "--pipeline (default: random_resized_crop and horizontal_flip)")
          ->type_name("STEPS");
  CLI::Option* size = app.add_option("--size", pipeline_flags().size, "their output's side")
                          ->check(CLI::Range(1, 8192))
                          ->capture_default_str();
  bool share = false;
  app.add_flag("--interval-share", share,
               "instead of the benchmarks: of files with restart intervals, the entropy-coded "
               "bytes a crop decodes against its share of the image")
      ->excludes(size);
  bool sweep = false;
  app.add_flag("--sweep", sweep,
               "instead of the benchmarks: DCT-scale margin and Verify mode, quality and speed")
      ->excludes(steps)
      ->excludes(size);
  app.add_option("--passes", sweep_passes, "--sweep: passes over the corpus per configuration")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.footer(
      "Google Benchmark's flags pass through: --benchmark_filter=REGEX, "
      "--benchmark_format=json, --benchmark_list_tests=true, ...");
  if (const auto code = stoke::tools::parse(app, argc, argv)) return code;
  if (!sweep) sweep_passes = 0;
  if (share) sweep_passes = -1;
  benchmark_args = app.remaining();
  return std::nullopt;
}

int main(int argc, char** argv) {
  std::string dir;
  if (const char* env = std::getenv("STOKE_BENCH_CORPUS")) dir = env;
  std::size_t limit = 1000;
  long iterations = 0;
  int sweep_passes = 5;
  std::vector<std::string> extras;
  if (const auto code = parse_args(argc, argv, dir, limit, iterations, sweep_passes, extras))
    return *code;
  std::vector<char*> rest{argv[0]};
  for (std::string& e : extras) rest.push_back(e.data());
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  // What Google Benchmark did not take either is a misspelled flag: a usage error, as elsewhere.
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return stoke::tools::kUsageError;
  if (dir.empty()) dir = "build/default/testdata/jpeg";
  try {
    load_corpus(dir, limit);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoke-decode-benchmarks: cannot read the corpus %s: %s\n", dir.c_str(),
                 e.what());
    return 2;
  }
  if (corpus().empty()) {
    std::fprintf(stderr, "stoke-decode-benchmarks: no .jpg files under %s\n", dir.c_str());
    return 2;
  }
  std::fprintf(stderr, "corpus: %zu JPEG files from %s\n", corpus().size(), dir.c_str());
  try {
    pipeline();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoke-decode-benchmarks: --pipeline: %s\n", e.what());
    return stoke::tools::kUsageError;
  }
  if (sweep_passes > 0) return sweep(sweep_passes);
  if (sweep_passes < 0) return interval_share();
  register_all(iterations);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
