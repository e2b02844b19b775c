// stoke-bench: runs a loader over a dataset and reports what it delivered and how fast.
//
//   stoke-bench [--data PATH] [--split train|test] [--batch B] [--devices cpu:G]
//               [--workers N] [--epochs E] [--seed S] [--size HxW] [--augment default|none]
//               [--on-error skip|error] [--prefetch S] [--chunk C]
//               [--dtype uint8|float32|float16|bfloat16] [--layout nchw|nhwc] [--json]
//
// Without --data it reads Fashion-MNIST from Debian's dataset-fashion-mnist. With --json the
// last line of output is one JSON object (fields documented in docs/BENCHMARKS.md).

#include <sys/resource.h>
#include <unistd.h>
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "stoke/devices.hpp"
#include "stoke/kernels/normalize.hpp"
#include "stoke/loader.hpp"
#include "stoke/mnist.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  stoke::Options options;
  std::int64_t epochs = 1;
  bool json = false;
  bool list_devices = false;
};

int list_devices() {
  const stoke::DeviceDiscovery& d = stoke::devices();
  std::printf("%zu GPU(s) found by %s (%s)\n", d.gpus.size(), d.method.c_str(), d.detail.c_str());
  for (const stoke::GpuInfo& g : d.gpus) {
    std::string memory = "memory unknown";
    if (g.memory_bytes > 0) memory = std::to_string(g.memory_bytes >> 20) + " MiB";
    std::printf("  cuda:%d  %s  %s  pci %s  %s\n", g.index, g.name.c_str(), memory.c_str(),
                g.pci_bus_id.empty() ? "?" : g.pci_bus_id.c_str(), g.uuid.c_str());
  }
  if (d.gpus.empty()) std::printf("  --devices auto means cpu:1 here\n");
  return 0;
}

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: stoke-bench [options]\n"
               "  --data PATH            image folder root/<class>/<image>, list file "
               "(path<TAB>label), or IDX folder\n"
               "                         (default: %s)\n"
               "  --split train|test     IDX split (default train)\n"
               "  --batch B              samples per batch per rank (default 256)\n"
               "  --devices SPEC         cpu:G, cuda:0,1 or auto: devices the batch is split over\n"
               "                         (default cpu:1)\n"
               "  --list-devices         print the GPUs found (without touching CUDA) and exit\n"
               "  --workers N            worker processes; 0 = in-process (default 2)\n"
               "  --epochs E             epochs to run (default 1)\n"
               "  --seed S               shuffle and augmentation seed (default 0)\n"
               "  --size HxW             output size (default: 28x28 for IDX, 224x224 for images)\n"
               "  --augment default|none training augmentation, or resize + centre crop\n"
               "  --on-error skip|error  bad input: replace and count, or stop (default skip)\n"
               "  --prefetch S           batch slots (default 2 x workers + 2)\n"
               "  --chunk C              samples per unit of work (default batch / workers)\n"
               "  --dtype T              uint8 (default), float32, float16 or bfloat16: anything\n"
               "                         but uint8 normalizes on the devices (ImageNet mean/std\n"
               "                         for RGB, 0.5/0.5 otherwise), host devices included\n"
               "  --layout nchw|nhwc     layout of normalized output (default nchw)\n"
               "  --json                 end the output with one JSON object\n",
               stoke::kDefaultFashionMnistDir);
  std::exit(code);
}

long long parse_number(const std::string& flag, const std::string& v, long long lo) {
  try {
    std::size_t used = 0;
    const long long n = std::stoll(v, &used);
    if (used == v.size() && n >= lo) return n;
  } catch (const std::exception&) {
  }
  std::fprintf(stderr, "stoke-bench: %s needs an integer >= %lld, got '%s'\n", flag.c_str(), lo,
               v.c_str());
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  a.options.data = stoke::kDefaultFashionMnistDir;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") usage(0);
    if (flag == "--json") {
      a.json = true;
      continue;
    }
    if (flag == "--list-devices") {
      a.list_devices = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "stoke-bench: %s needs a value\n", flag.c_str());
      usage(2);
    }
    const std::string v = argv[++i];
    auto& o = a.options;
    if (flag == "--data") {
      o.data = v;
    } else if (flag == "--split") {
      if (v != "train" && v != "test") usage(2);
      o.split = v == "train" ? stoke::Split::kTrain : stoke::Split::kTest;
    } else if (flag == "--batch") {
      o.batch = static_cast<int>(parse_number(flag, v, 1));
    } else if (flag == "--devices") {
      o.devices = stoke::DeviceSet::parse(v);
    } else if (flag == "--workers") {
      o.workers = static_cast<int>(parse_number(flag, v, 0));
    } else if (flag == "--epochs") {
      a.epochs = parse_number(flag, v, 1);
    } else if (flag == "--seed") {
      o.seed = static_cast<std::uint64_t>(parse_number(flag, v, 0));
    } else if (flag == "--size") {
      const auto x = v.find('x');
      if (x == std::string::npos) {
        std::fprintf(stderr, "stoke-bench: --size wants HxW (e.g. 224x224), got '%s'\n", v.c_str());
        std::exit(2);
      }
      o.height = static_cast<int>(parse_number(flag, v.substr(0, x), 1));
      o.width = static_cast<int>(parse_number(flag, v.substr(x + 1), 1));
    } else if (flag == "--augment") {
      if (v != "default" && v != "none") usage(2);
      o.augment = v == "default" ? stoke::Augment::kTraining : stoke::Augment::kEvaluation;
    } else if (flag == "--on-error") {
      if (v != "skip" && v != "error") usage(2);
      o.on_error = v == "skip" ? stoke::OnError::kSkip : stoke::OnError::kError;
    } else if (flag == "--prefetch") {
      o.prefetch = static_cast<int>(parse_number(flag, v, 1));
    } else if (flag == "--chunk") {
      o.chunk = static_cast<int>(parse_number(flag, v, 1));
    } else if (flag == "--dtype") {
      try {
        o.dtype = stoke::kernels::parse_dtype(v);
      } catch (const std::invalid_argument& e) {
        throw stoke::ConfigError(std::string("--dtype: ") + e.what());
      }
    } else if (flag == "--layout") {
      if (v != "nchw" && v != "nhwc")
        throw stoke::ConfigError("--layout must be nchw or nhwc, got '" + v + "'");
      o.layout = v == "nchw" ? stoke::Layout::kNCHW : stoke::Layout::kNHWC;
    } else {
      std::fprintf(stderr, "stoke-bench: unknown option %s\n", flag.c_str());
      usage(2);
    }
  }
  return a;
}

// A "VmRSS:"-style field of /proc/<pid>/status in MiB (0 when missing).
double status_mib(const std::string& pid, const char* field) {
  std::ifstream in("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(std::strlen(field))) / 1024.0;
  }
  return 0;
}

// Resident memory of this process in MiB.
double rss_mib(const char* field = "VmRSS:") {
  return status_mib("self", field);
}

// The pids of this process's children (the workers), from every thread's children list.
std::vector<std::string> child_pids() {
  std::vector<std::string> pids;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream children(task.path() / "children");
    std::string pid;
    while (children >> pid) pids.push_back(pid);
  }
  return pids;
}

// Resident memory of the workers in MiB, summed.
double children_rss_mib() {
  double total = 0;
  for (const std::string& pid : child_pids()) total += status_mib(pid, "VmRSS:");
  return total;
}

// CPU seconds (user + system) used so far by this process, and by its children (the workers,
// read from /proc before they exit).
double own_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double children_cpu_s() {
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double total = 0;
  for (const std::string& pid : child_pids()) {
    std::ifstream in("/proc/" + pid + "/stat");
    std::string line;
    std::getline(in, line);
    std::istringstream fields(line.substr(line.rfind(')') + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    total += (utime + stime) / tick;
  }
  return total;
}

std::string with_commas(double v) {
  const std::string digits = std::to_string(static_cast<long long>(v + 0.5));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// XXH3-128; on x86-64 libxxhash picks the widest vector unit (AVX2, AVX-512) at run time, which
// keeps the consumer's checksum from being the bottleneck at millions of samples per second.
void hash_update(XXH3_state_t* state, const void* data, std::size_t bytes) {
#if defined(__x86_64__)
  XXH3_128bits_update_dispatch(state, data, bytes);
#else
  XXH3_128bits_update(state, data, bytes);
#endif
}

std::string hex128(const XXH128_hash_t& h) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

class Progress {
 public:
  Progress(std::int64_t total, bool enabled) : total_(total), enabled_(enabled) {}
  bool on_terminal() const { return enabled_; }
  void update(std::int64_t done, std::int64_t epoch, std::int64_t epochs, double rate) {
    const auto now = Clock::now();
    if (!enabled_ || (now - last_ < std::chrono::milliseconds(200) && done != total_)) return;
    last_ = now;
    const int width = 30;
    const int filled = static_cast<int>(width * done / std::max<std::int64_t>(total_, 1));
    std::fprintf(stderr, "\repoch %lld/%lld [%s%s] %lld/%lld batches  %s samples/s   ",
                 static_cast<long long>(epoch + 1), static_cast<long long>(epochs),
                 std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_),
                 with_commas(rate).c_str());
    if (done == total_) std::fprintf(stderr, "\n");
  }

 private:
  std::int64_t total_;
  bool enabled_;
  Clock::time_point last_{};
};

int run(const Args& args) {
  stoke::Loader loader(args.options);
  const auto& o = args.options;
  const std::int64_t bpe = loader.batches_per_epoch();
  if (!args.json || ::isatty(STDOUT_FILENO)) {
    std::printf("stoke-bench %s\n", stoke::version());
    std::printf("  data       %s (%lld samples)\n", o.data.c_str(),
                static_cast<long long>(loader.dataset_size()));
    std::printf("  pipeline   ");
    std::string steps = loader.pipeline().describe();
    for (std::size_t at = steps.find('\n'); at != std::string::npos; at = steps.find('\n', at))
      steps.replace(at, 1, " | ");
    std::printf("%s\n", steps.c_str());
    std::printf("  batch      %d per rank (rank %d of %d) on %s, %lld batches per epoch\n", o.batch,
                loader.rank(), loader.world(), o.devices.to_string().c_str(),
                static_cast<long long>(bpe));
    std::printf("  workers    %d%s\n", o.workers, o.workers == 0 ? " (in-process)" : "");
    std::fflush(stdout);
  }

  XXH3_state_t* hash = XXH3_createState();
  XXH3_128bits_reset(hash);
  // What the devices received (host devices only: GPU memory is not read back).
  XXH3_state_t* output_hash = XXH3_createState();
  XXH3_128bits_reset(output_hash);
  const bool gpu = o.devices.kind == stoke::DeviceSet::Kind::kCuda;
  std::vector<double> rss_per_epoch, worker_rss_per_epoch;
  Progress progress(bpe, ::isatty(STDERR_FILENO) != 0);
  const auto started = Clock::now();
  for (std::int64_t e = 0; e < args.epochs; ++e) {
    loader.set_epoch(e);
    std::int64_t done = 0;
    while (auto batch = loader.next()) {
      hash_update(hash, batch->pixels().data(), batch->pixels().size_bytes());
      hash_update(hash, batch->labels().data(), batch->labels().size_bytes());
      hash_update(hash, batch->valid().data(), batch->valid().size_bytes());
      for (int d = 0; d < batch->device_count(); ++d) {
        batch->wait(d);  // a GPU batch counts once its bytes are on the device
        const stoke::DeviceChunk c = batch->chunk(d);
        if (!gpu) hash_update(output_hash, c.data, c.bytes);
      }
      ++done;
      const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
      progress.update(done, e, args.epochs,
                      elapsed > 0 ? static_cast<double>(loader.stats().samples) / elapsed : 0);
    }
    if (!progress.on_terminal() && args.epochs > 1) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
      std::fprintf(stderr, "epoch %lld/%lld: %lld batches, %s samples/s so far\n",
                   static_cast<long long>(e + 1), static_cast<long long>(args.epochs),
                   static_cast<long long>(done),
                   with_commas(static_cast<double>(loader.stats().samples) / elapsed).c_str());
    }
    rss_per_epoch.push_back(rss_mib());
    worker_rss_per_epoch.push_back(children_rss_mib());
  }
  const stoke::Stats s = loader.stats();
  const double cpu_self = own_cpu_s(), cpu_workers = children_cpu_s();
  const std::string checksum = hex128(XXH3_128bits_digest(hash));
  const std::string output_checksum = hex128(XXH3_128bits_digest(output_hash));
  XXH3_freeState(hash);
  XXH3_freeState(output_hash);
  const char* dtype = stoke::kernels::dtype_name(o.dtype);
  const char* layout =
      o.dtype == stoke::DType::kUInt8 || o.layout == stoke::Layout::kNHWC ? "nhwc" : "nchw";

  if (!args.json || ::isatty(STDOUT_FILENO)) {
    std::printf("result\n");
    std::printf("  delivered  %lld batches, %lld samples (%lld padding repeats), %lld skipped\n",
                static_cast<long long>(s.batches), static_cast<long long>(s.samples),
                static_cast<long long>(s.padded), static_cast<long long>(s.skipped));
    for (const auto& [reason, n] : s.skipped_by_reason)
      std::printf("               %s: %lld\n", reason.c_str(), static_cast<long long>(n));
    std::printf("  throughput %s samples/s\n", with_commas(s.samples_per_s).c_str());
    std::printf("  startup    %.3f s (construction to first batch)\n", s.startup_s);
    std::printf("  waiting    %.1f%% of the consumer's time\n", 100 * s.wait_fraction);
    std::printf("  memory     %.1f MiB resident (peak %.1f), workers %.1f MiB, arena %.1f MiB\n",
                rss_mib(), rss_mib("VmHWM:"), children_rss_mib(),
                static_cast<double>(s.arena_bytes) / (1 << 20));
    std::printf("  cpu        %.2f s in this process, %.2f s in the workers\n", cpu_self,
                cpu_workers);
    std::printf("  restarts   %lld worker restarts\n", static_cast<long long>(s.worker_restarts));
    std::printf("  devices    %s %s on %s; staging %s", dtype, layout,
                o.devices.to_string().c_str(), s.staging.c_str());
    if (s.dma_copies > 0)
      std::printf(", %lld copies to the devices (%.1f MiB), %.1f MiB copied on the host first",
                  static_cast<long long>(s.dma_copies),
                  static_cast<double>(s.dma_bytes) / (1 << 20),
                  static_cast<double>(s.host_copy_bytes) / (1 << 20));
    std::printf("\n");
    if (!s.staging_note.empty()) std::printf("               %s\n", s.staging_note.c_str());
    std::printf("  checksum   xxh3-128 %s (uint8 pixels, labels, valid)\n", checksum.c_str());
    if (!gpu)
      std::printf("  output     xxh3-128 %s (what the devices received)\n",
                  output_checksum.c_str());
  }
  if (args.json) {
    nlohmann::json j;
    j["version"] = stoke::version();
    j["data"] = o.data;
    j["dataset_size"] = loader.dataset_size();
    j["batch"] = o.batch;
    j["devices"] = o.devices.to_string();
    j["workers"] = o.workers;
    j["epochs"] = args.epochs;
    j["samples"] = s.samples;
    j["batches"] = s.batches;
    j["padded"] = s.padded;
    j["skipped"] = s.skipped;
    j["skipped_by_reason"] = s.skipped_by_reason;
    j["samples_per_s"] = s.samples_per_s;
    j["startup_s"] = s.startup_s;
    j["wait_fraction"] = s.wait_fraction;
    j["worker_restarts"] = s.worker_restarts;
    j["cpu_s"] = cpu_self;
    j["worker_cpu_s"] = cpu_workers;
    j["rss_mib"] = rss_mib();
    j["rss_mib_per_epoch"] = rss_per_epoch;
    j["worker_rss_mib_per_epoch"] = worker_rss_per_epoch;
    j["checksum"] = checksum;
    j["dtype"] = dtype;
    j["layout"] = layout;
    j["staging"] = s.staging;
    j["staging_note"] = s.staging_note;
    j["dma_copies"] = s.dma_copies;
    j["dma_bytes"] = s.dma_bytes;
    j["host_copy_bytes"] = s.host_copy_bytes;
    j["pinned_bytes"] = s.pinned_bytes;
    if (gpu)
      j["output_checksum"] = nullptr;
    else
      j["output_checksum"] = output_checksum;
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    if (args.list_devices) return list_devices();
    return run(args);
  } catch (const stoke::ConfigError& e) {
    std::fprintf(stderr, "stoke-bench: invalid configuration: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoke-bench: %s\n", e.what());
    return 1;
  }
}
