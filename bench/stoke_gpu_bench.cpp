// stoke-gpu-bench: the GPU-side measurements of the device check (bench/device_check.sh).
//
//   stoke-gpu-bench h2d [--mib N] [--reps R]
//       Host-to-device bandwidth by cudaMemcpyAsync from (a) a stoke arena (memfd, shared
//       mapping) page-locked with cudaHostRegister, as the loader does, (b) a cudaHostAlloc
//       buffer of the same size, (c) pageable malloc memory, for reference.
//   stoke-gpu-bench normalize [--batch B] [--size HxW|N] [--reps R]
//       The normalize kernel (uint8 NHWC -> float32/float16/bfloat16 NCHW, 3 channels) against
//       a device-to-device copy of the output's size, both as bytes moved per second.
//   stoke-gpu-bench make-corpus --out DIR [--count N] [--seed S] [--jobs J]
//       Writes N synthetic photograph-like JPEGs (gradients, discs and noise, long side
//       400..640, quality 90..95) as DIR/cNN/NNNNN.jpg with J threads (default: all cores),
//       for an end-to-end run on a machine without datasets. Same seed, same corpus.
//
// Every measurement prints one line of JSON ({"test": ..., ...}) on stdout.

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/mman.h>
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
#include <optional>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "stoke/kernels/normalize.hpp"
#include "stoke/kernels/normalize_cuda.hpp"
#include "stoke/names.hpp"
#include "stoke/tools/cli.hpp"
#include "stoke/tools/progress.hpp"

namespace {

namespace fs = std::filesystem;

// Every subcommand's flags, with their defaults.
struct Flags {
  long mib = 256, h2d_reps = 20;                                 // h2d
  long batch = 256, normalize_reps = 50;                         // normalize
  stoke::ImageSize size{224, 224};
  std::string out;                                               // make-corpus
  long count = 1000, seed = 1;
  long jobs = std::max(1u, std::thread::hardware_concurrency());
};

// The one place a CUDA status becomes an exception here ("file:line: expr failed: name: text").
void cuda_check(cudaError_t status, const char* expr, int line) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(line) + ": " + expr +
                             " failed: " + cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status));
}
#define CUDA_CALL(expr) cuda_check((expr), #expr, __LINE__)

// A memfd mapped shared and reserved up front, as the loader lays out its arena: the memory
// cudaHostRegister page-locks in the training process. Built from the system calls rather than
// borrowed from loader/src, so this tool needs only stoke's public headers.
class MemfdBuffer {
 public:
  explicit MemfdBuffer(std::size_t bytes) : bytes_(bytes) {
    fd_ = ::memfd_create("stoke-gpu-bench", MFD_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
    if (const int err = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes)); err != 0) {
      ::close(fd_);
      throw std::runtime_error(std::string("posix_fallocate: ") + std::strerror(err));
    }
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
      ::close(fd_);
      throw std::runtime_error(std::string("mmap: ") + std::strerror(errno));
    }
    base_ = static_cast<std::uint8_t*>(p);
  }
  ~MemfdBuffer() {
    ::munmap(base_, bytes_);
    ::close(fd_);
  }
  MemfdBuffer(const MemfdBuffer&) = delete;
  MemfdBuffer& operator=(const MemfdBuffer&) = delete;
  std::uint8_t* base() const { return base_; }

 private:
  std::size_t bytes_;
  int fd_ = -1;
  std::uint8_t* base_ = nullptr;
};

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
  const std::size_t bytes = static_cast<std::size_t>(f.mib) << 20;
  const int reps = static_cast<int>(f.h2d_reps);
  cudaStream_t stream;
  CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* d_dst = nullptr;
  CUDA_CALL(cudaMalloc(&d_dst, bytes));

  MemfdBuffer arena(bytes);
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
  const int batch = static_cast<int>(f.batch);
  const int reps = static_cast<int>(f.normalize_reps);
  stoke::kernels::NormalizeParams p;
  p.samples = batch;
  p.height = f.size.height;
  p.width = f.size.width;
  p.channels = 3;
  p.layout = stoke::Layout::kNCHW;
  const float mean[3] = {123.675f, 116.28f, 103.53f}, stddev[3] = {58.395f, 57.12f, 57.375f};
  std::copy(mean, mean + 3, p.mean);
  std::copy(stddev, stddev + 3, p.stddev);
  const std::size_t in_bytes = static_cast<std::size_t>(batch) * p.height * p.width * 3;
  // "size": N as before for a square size, "HxW" otherwise.
  const std::string size_json = p.height == p.width ? std::to_string(p.height)
                                                    : "\"" + stoke::size_name(f.size) + "\"";
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
        "{\"test\": \"normalize\", \"dtype\": \"%s\", \"batch\": %d, \"size\": %s, "
        "\"kernel_ms\": %.4f, \"kernel_gbps\": %.1f, \"d2d_copy_gbps\": %.1f, "
        "\"kernel_vs_copy\": %.3f, \"images_per_s\": %.0f}\n",
        stoke::dtype_name(t), batch, size_json.c_str(), kernel_ms, kernel_gbps, copy_gbps,
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
  const fs::path out = f.out;
  if (fs::exists(out) && !fs::is_empty(out))
    throw std::invalid_argument(out.string() + " exists and is not empty");
  const long count = f.count;
  const auto seed = static_cast<std::uint32_t>(f.seed);
  const long jobs = f.jobs;
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
  stoke::tools::TerminalLine terminal(true, std::chrono::milliseconds(200));
  for (long shown = 0, last = 0; shown < count && error.empty();) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    shown = done.load();
    const std::string line = "make-corpus: " + std::to_string(shown) + "/" + std::to_string(count);
    if (terminal.active()) {
      terminal.draw(line, true);
    } else if (shown / 1000 != last / 1000 || shown == count) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    last = shown;
  }
  for (auto& t : threads) t.join();
  terminal.finish();
  if (!error.empty()) throw std::runtime_error(error);
  std::printf("{\"test\": \"make-corpus\", \"images\": %ld, \"out\": \"%s\"}\n", count,
              out.c_str());
  return 0;
}

// The command line; nullopt: go on, else the exit code (see stoke/tools/cli.hpp). Every value
// is a positive count; `command` is the subcommand given.
std::optional<int> parse_args(int argc, char** argv, Flags& f, std::string& command) {
  CLI::App app("The GPU-side measurements of the device check (bench/device_check.sh); each "
               "prints one line of JSON on stdout.",
               "stoke-gpu-bench");
  stoke::tools::configure(app);
  app.require_subcommand(1);
  const auto count = [](CLI::App* c, const char* flag, long& out, const char* help) {
    c->add_option(flag, out, help)->check(CLI::Range(1L, 1L << 40))->capture_default_str();
  };
  CLI::App* h2d_cmd = app.add_subcommand(
      "h2d", "Host-to-device bandwidth from a page-locked memfd arena (as the loader's), a "
             "cudaHostAlloc buffer and pageable memory.");
  count(h2d_cmd, "--mib", f.mib, "bytes to copy, in MiB");
  count(h2d_cmd, "--reps", f.h2d_reps, "copies timed");
  CLI::App* norm_cmd = app.add_subcommand(
      "normalize", "The normalize kernel (uint8 NHWC -> float NCHW, 3 channels) against a "
                   "device-to-device copy of its output.");
  count(norm_cmd, "--batch", f.batch, "samples");
  stoke::tools::add_word(*norm_cmd, "--size", f.size, stoke::parse_size,
                         "image size HxW, or N for NxN (default 224)")
      ->type_name("HxW|N");
  count(norm_cmd, "--reps", f.normalize_reps, "kernel runs timed");
  CLI::App* corpus_cmd = app.add_subcommand(
      "make-corpus", "Writes synthetic photograph-like JPEGs DIR/cNN/NNNNN.jpg for an end-to-end "
                     "run on a machine without datasets. Same seed, same corpus.");
  corpus_cmd->add_option("--out", f.out, "a missing or empty folder")->type_name("DIR")->required();
  count(corpus_cmd, "--count", f.count, "images");
  count(corpus_cmd, "--seed", f.seed, "the corpus's seed");
  count(corpus_cmd, "--jobs", f.jobs, "threads writing (default: all cores)");
  if (const auto code = stoke::tools::parse(app, argc, argv)) return code;
  command = app.get_subcommands().front()->get_name();
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  std::string command;
  if (const auto code = parse_args(argc, argv, flags, command)) return *code;
  try {
    if (command == "h2d") return h2d(flags);
    if (command == "normalize") return normalize(flags);
    return make_corpus(flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoke-gpu-bench %s: %s\n", command.c_str(), e.what());
    return 1;
  }
}
