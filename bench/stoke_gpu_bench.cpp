// stoke-gpu-bench: the GPU-side measurements of the device check (bench/device_check.sh).
//
//   stoke-gpu-bench h2d [--mib N] [--reps R]
//       Host-to-device bandwidth by cudaMemcpyAsync from (a) a stoke arena (memfd, shared
//       mapping) page-locked with cudaHostRegister, as the loader does, (b) a cudaHostAlloc
//       buffer of the same size, (c) pageable malloc memory, for reference.
//   stoke-gpu-bench normalize [--batch B] [--size S] [--reps R]
//       The normalize kernel (uint8 NHWC -> float32/float16/bfloat16 NCHW, 3 channels) against
//       a device-to-device copy of the output's size, both as bytes moved per second.
//   stoke-gpu-bench make-corpus --out DIR [--count N] [--seed S] [--jobs J]
//       Writes N synthetic photograph-like JPEGs (gradients, discs and noise, long side
//       400..640, quality 90..95) as DIR/cNN/NNNNN.jpg with J threads (default: all cores),
//       for an end-to-end run on a machine without datasets. Same seed, same corpus.
//
// Every measurement prints one line of JSON ({"test": ..., ...}) on stdout.

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdio>
// jpeglib.h uses FILE without including <cstdio>; keep it after.
#include <jpeglib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>  // before jpeglib.h, which uses FILE
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.hpp"
#include "shared_arena.hpp"
#include "stoke/kernels/normalize.hpp"
#include "stoke/kernels/normalize_cuda.hpp"

namespace {

namespace fs = std::filesystem;

using Flags = std::map<std::string, std::string>;

long flag(const Flags& f, const char* name, long fallback) {
  const auto it = f.find(name);
  if (it == f.end()) return fallback;
  char* end = nullptr;
  const long v = std::strtol(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0' || v <= 0)
    throw std::invalid_argument(std::string(name) + " needs a positive integer, got '" +
                                it->second + "'");
  return v;
}

// Milliseconds per repetition of `work` on `stream`, after one warm-up run.
template <class Work>
double time_ms(cudaStream_t stream, int reps, Work work) {
  work();
  cudaEvent_t start, stop;
  CUDA_CALL(cudaEventCreate(&start));
  CUDA_CALL(cudaEventCreate(&stop));
  CUDA_CALL(cudaEventRecord(start, stream));
  for (int i = 0; i < reps; ++i) work();
  CUDA_CALL(cudaEventRecord(stop, stream));
  CUDA_CALL(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_CALL(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CALL(cudaEventDestroy(start));
  CUDA_CALL(cudaEventDestroy(stop));
  return ms / reps;
}

double gbps(std::size_t bytes, double ms) {
  return static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

int h2d(const Flags& f) {
  const std::size_t bytes = static_cast<std::size_t>(flag(f, "--mib", 256)) << 20;
  const int reps = static_cast<int>(flag(f, "--reps", 20));
  cudaStream_t stream;
  CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* d_dst = nullptr;
  CUDA_CALL(cudaMalloc(&d_dst, bytes));

  stoke::detail::SharedArena arena(bytes, bytes);
  std::memset(arena.base(), 7, bytes);
  CUDA_CALL(cudaHostRegister(arena.base(), bytes, cudaHostRegisterPortable));
  const double arena_ms = time_ms(stream, reps, [&] {
    CUDA_CALL(cudaMemcpyAsync(d_dst, arena.base(), bytes, cudaMemcpyHostToDevice, stream));
  });
  CUDA_CALL(cudaHostUnregister(arena.base()));

  void* pinned = nullptr;
  CUDA_CALL(cudaHostAlloc(&pinned, bytes, cudaHostAllocPortable));
  std::memset(pinned, 7, bytes);
  const double pinned_ms = time_ms(stream, reps, [&] {
    CUDA_CALL(cudaMemcpyAsync(d_dst, pinned, bytes, cudaMemcpyHostToDevice, stream));
  });
  CUDA_CALL(cudaFreeHost(pinned));

  std::vector<std::uint8_t> pageable(bytes, 7);
  const double pageable_ms = time_ms(stream, std::max(1, reps / 4), [&] {
    CUDA_CALL(cudaMemcpyAsync(d_dst, pageable.data(), bytes, cudaMemcpyHostToDevice, stream));
  });

  std::printf(
      "{\"test\": \"h2d\", \"bytes\": %zu, \"registered_arena_gbps\": %.2f, "
      "\"host_alloc_gbps\": %.2f, \"pageable_gbps\": %.2f, \"arena_vs_pinned\": %.3f}\n",
      bytes, gbps(bytes, arena_ms), gbps(bytes, pinned_ms), gbps(bytes, pageable_ms),
      pinned_ms / arena_ms);
  CUDA_CALL(cudaFree(d_dst));
  CUDA_CALL(cudaStreamDestroy(stream));
  return 0;
}

int normalize(const Flags& f) {
  const int batch = static_cast<int>(flag(f, "--batch", 256));
  const int size = static_cast<int>(flag(f, "--size", 224));
  const int reps = static_cast<int>(flag(f, "--reps", 50));
  stoke::kernels::NormalizeParams p;
  p.samples = batch;
  p.height = size;
  p.width = size;
  p.channels = 3;
  p.layout = stoke::Layout::kNCHW;
  const float mean[3] = {123.675f, 116.28f, 103.53f}, stddev[3] = {58.395f, 57.12f, 57.375f};
  std::copy(mean, mean + 3, p.mean);
  std::copy(stddev, stddev + 3, p.stddev);
  const std::size_t in_bytes = static_cast<std::size_t>(batch) * size * size * 3;
  cudaStream_t stream;
  CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void *d_src = nullptr, *d_dst = nullptr, *d_copy = nullptr;
  CUDA_CALL(cudaMalloc(&d_src, in_bytes));
  CUDA_CALL(cudaMemset(d_src, 99, in_bytes));
  CUDA_CALL(cudaMalloc(&d_dst, in_bytes * 4));
  CUDA_CALL(cudaMalloc(&d_copy, in_bytes * 4));
  for (stoke::DType t : {stoke::DType::kFloat32, stoke::DType::kFloat16, stoke::DType::kBFloat16}) {
    p.dtype = t;
    const std::size_t out_bytes = stoke::kernels::normalized_bytes(p);
    const double kernel_ms = time_ms(stream, reps, [&] {
      stoke::kernels::normalize_cuda(p, static_cast<const std::uint8_t*>(d_src), d_dst, stream);
    });
    const double copy_ms = time_ms(stream, reps, [&] {
      CUDA_CALL(cudaMemcpyAsync(d_copy, d_dst, out_bytes, cudaMemcpyDeviceToDevice, stream));
    });
    // Bytes moved: the kernel reads in_bytes and writes out_bytes; the copy reads and writes
    // out_bytes.
    const double kernel_gbps = gbps(in_bytes + out_bytes, kernel_ms);
    const double copy_gbps = gbps(2 * out_bytes, copy_ms);
    std::printf(
        "{\"test\": \"normalize\", \"dtype\": \"%s\", \"batch\": %d, \"size\": %d, "
        "\"kernel_ms\": %.4f, \"kernel_gbps\": %.1f, \"d2d_copy_gbps\": %.1f, "
        "\"kernel_vs_copy\": %.3f, \"images_per_s\": %.0f}\n",
        stoke::kernels::dtype_name(t), batch, size, kernel_ms, kernel_gbps, copy_gbps,
        kernel_gbps / copy_gbps, batch / (kernel_ms * 1e-3));
  }
  CUDA_CALL(cudaFree(d_src));
  CUDA_CALL(cudaFree(d_dst));
  CUDA_CALL(cudaFree(d_copy));
  CUDA_CALL(cudaStreamDestroy(stream));
  return 0;
}

// A photograph-like RGB image: a smooth two-colour gradient, a few filled discs and noise, so
// JPEG sizes and decode costs resemble real photographs more than flat colour would.
std::vector<std::uint8_t> synthetic_image(int w, int h, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  const int a[3] = {byte(rng), byte(rng), byte(rng)}, b[3] = {byte(rng), byte(rng), byte(rng)};
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 3);
  std::normal_distribution<float> noise(0.0f, 6.0f);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const float t = (static_cast<float>(x) / w + static_cast<float>(y) / h) / 2;
      for (int c = 0; c < 3; ++c) {
        const float v = a[c] + (b[c] - a[c]) * t + noise(rng);
        px[(static_cast<std::size_t>(y) * w + x) * 3 + c] =
            static_cast<std::uint8_t>(std::clamp(v, 0.0f, 255.0f));
      }
    }
  }
  std::uniform_int_distribution<int> cx(0, w - 1), cy(0, h - 1), radius(10, std::min(w, h) / 4);
  for (int disc = 0; disc < 6; ++disc) {
    const int x0 = cx(rng), y0 = cy(rng), r = radius(rng);
    const int col[3] = {byte(rng), byte(rng), byte(rng)};
    for (int y = std::max(0, y0 - r); y < std::min(h, y0 + r); ++y) {
      for (int x = std::max(0, x0 - r); x < std::min(w, x0 + r); ++x) {
        if ((x - x0) * (x - x0) + (y - y0) * (y - y0) > r * r) continue;
        for (int c = 0; c < 3; ++c) px[(static_cast<std::size_t>(y) * w + x) * 3 + c] = col[c];
      }
    }
  }
  return px;
}

void write_jpeg(const fs::path& path, const std::vector<std::uint8_t>& px, int w, int h,
                int quality) {
  FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) throw std::runtime_error(path.string() + ": " + std::strerror(errno));
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, out);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(px.data() + static_cast<std::size_t>(cinfo.next_scanline) *
                                                        static_cast<std::size_t>(w) * 3);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  if (std::fclose(out) != 0) throw std::runtime_error(path.string() + ": write failed");
}

void write_corpus_image(const fs::path& out, long i, std::uint32_t seed) {
  constexpr int kClasses = 10;
  // Each image has its own generator, so the corpus does not depend on --jobs.
  std::mt19937 rng(seed * 1000003u + static_cast<std::uint32_t>(i));
  std::uniform_int_distribution<int> side(400, 640), quality(90, 95);
  char name[32];
  std::snprintf(name, sizeof name, "c%02d", static_cast<int>(i % kClasses));
  const int longer = side(rng);
  const int shorter = longer * 3 / 4;
  const bool wide = (i / kClasses) % 2 == 0;
  const int w = wide ? longer : shorter, h = wide ? shorter : longer;
  char file[32];
  std::snprintf(file, sizeof file, "%05ld.jpg", i);
  write_jpeg(out / name / file, synthetic_image(w, h, rng), w, h, quality(rng));
}

int make_corpus(const Flags& f) {
  const auto it = f.find("--out");
  if (it == f.end()) throw std::invalid_argument("make-corpus needs --out DIR");
  const fs::path out = it->second;
  if (fs::exists(out) && !fs::is_empty(out))
    throw std::invalid_argument(out.string() + " exists and is not empty");
  const long count = flag(f, "--count", 1000);
  const auto seed = static_cast<std::uint32_t>(flag(f, "--seed", 1));
  const long jobs = flag(f, "--jobs", std::max(1u, std::thread::hardware_concurrency()));
  for (int c = 0; c < 10; ++c) {
    char name[32];
    std::snprintf(name, sizeof name, "c%02d", c);
    fs::create_directories(out / name);
  }
  std::atomic<long> next{0}, done{0};
  std::vector<std::thread> threads;
  std::mutex error_mutex;
  std::string error;
  for (long j = 0; j < jobs; ++j) {
    threads.emplace_back([&] {
      for (long i = next++; i < count; i = next++) {
        try {
          write_corpus_image(out, i, seed);
        } catch (const std::exception& e) {
          std::lock_guard lock(error_mutex);
          if (error.empty()) error = e.what();
          return;
        }
        ++done;
      }
    });
  }
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  for (long shown = 0, last = 0; shown < count && error.empty();) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    shown = done.load();
    if (terminal) {
      std::fprintf(stderr, "\rmake-corpus: %ld/%ld", shown, count);
    } else if (shown / 1000 != last / 1000 || shown == count) {
      std::fprintf(stderr, "make-corpus: %ld/%ld\n", shown, count);
    }
    last = shown;
  }
  for (auto& t : threads) t.join();
  if (terminal) std::fprintf(stderr, "\n");
  if (!error.empty()) throw std::runtime_error(error);
  std::printf("{\"test\": \"make-corpus\", \"images\": %ld, \"out\": \"%s\"}\n", count,
              out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::fprintf(
        argc < 2 ? stderr : stdout,
        "usage: stoke-gpu-bench h2d [--mib N] [--reps R]\n"
        "       stoke-gpu-bench normalize [--batch B] [--size S] [--reps R]\n"
        "       stoke-gpu-bench make-corpus --out DIR [--count N] [--seed S] [--jobs J]\n");
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  Flags flags;
  for (int i = 2; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  try {
    if (command == "h2d") return h2d(flags);
    if (command == "normalize") return normalize(flags);
    if (command == "make-corpus") return make_corpus(flags);
    std::fprintf(stderr, "stoke-gpu-bench: unknown command '%s'\n", command.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoke-gpu-bench %s: %s\n", command.c_str(), e.what());
    return 1;
  }
}
