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
//
//   stoke-decode-benchmarks [--corpus DIR] [--limit N] [--iterations I] [google benchmark flags]
//
// DIR defaults to $STOKE_BENCH_CORPUS, else build/default/testdata/jpeg (made by the tests). Each
// iteration handles one image, cycling through the corpus; items_per_second is images per second
// per core.
// --iterations fixes the iteration count, e.g. for instruction counts under
// `valgrind --tool=callgrind --toggle-collect='*BM_*'`.

#include <benchmark/benchmark.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "augment/augment.hpp"
#include "data/sample_rng.hpp"
#include "decode/decode.hpp"
#include "decode/jpeg_region.hpp"
#include "stoke/tools/cli.hpp"
#include "stoke/pipeline.hpp"

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

const stoke::Pipeline& pipeline() {
  static const stoke::Pipeline p = stoke::Pipeline::training(224, 224, 3, false);
  return p;
}

std::vector<std::uint8_t> output_buffer() {
  return std::vector<std::uint8_t>(224 * 224 * 3);
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

// Runs the training pipeline once per iteration on the next file, from the source `open`
// makes of its bytes (nullptr when it cannot).
template <class Open>
void augment_each(benchmark::State& state, Open open) {
  Augmenter augmenter;
  auto out = output_buffer();
  const std::vector<stoke::detail::WireStep> steps = stoke::detail::wire_steps(pipeline());
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& f = corpus()[i % corpus().size()];
    SampleRng rng(1, stoke::detail::kSampleStream, 0, static_cast<std::int64_t>(i++));
    stoke::detail::ImageSource* source = open(f);
    if (source == nullptr) {
      state.SkipWithError("decode failed");
      break;
    }
    augmenter.run(steps.data(), static_cast<int>(steps.size()), *source, rng, out.data(), 224, 224,
                  3);
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

void BM_RegionDecodeAugment(benchmark::State& state) {
  stoke::detail::JpegRegionSource source;
  augment_each(state, [&](const std::vector<std::uint8_t>& f) -> stoke::detail::ImageSource* {
    const BadInput r = source.open(f.data(), f.size(), 3, stoke::detail::kDefaultMaxPixels);
    return r == BadInput::kNone ? &source : nullptr;
  });
}

// Registered in main so that --iterations can fix the count (for valgrind's instruction counts).
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
}

}  // namespace

// The command line; nullopt: go on, else the exit code (see stoke/tools/cli.hpp). Google
// Benchmark's own flags pass through to `benchmark_args`, which it checks itself.
std::optional<int> parse_args(int argc, char** argv, std::string& dir, std::size_t& limit,
                              long& iterations, std::vector<std::string>& benchmark_args) {
  CLI::App app("Micro-benchmarks of stoke's JPEG decode paths on a corpus held in memory.",
               "stoke-decode-benchmarks");
  stoke::tools::configure(app);
  app.allow_extras();
  app.add_option("--corpus", dir,
                 "JPEG files to decode (default: $STOKE_BENCH_CORPUS, else "
                 "build/default/testdata/jpeg)")
      ->type_name("DIR");
  app.add_option("--limit", limit, "at most N files of the corpus")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))->capture_default_str();
  app.add_option("--iterations", iterations, "a fixed iteration count (e.g. under callgrind)")
      ->check(CLI::Range(1L, 1L << 40));
  app.footer("Google Benchmark's flags pass through: --benchmark_filter=REGEX, "
             "--benchmark_format=json, --benchmark_list_tests=true, ...");
  if (const auto code = stoke::tools::parse(app, argc, argv)) return code;
  benchmark_args = app.remaining();
  return std::nullopt;
}

int main(int argc, char** argv) {
  std::string dir;
  if (const char* env = std::getenv("STOKE_BENCH_CORPUS")) dir = env;
  std::size_t limit = 1000;
  long iterations = 0;
  std::vector<std::string> extras;
  if (const auto code = parse_args(argc, argv, dir, limit, iterations, extras)) return *code;
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
  register_all(iterations);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
