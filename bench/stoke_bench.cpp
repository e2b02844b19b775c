// stoke-bench: runs a loader over a dataset and reports what it delivered and how fast.
//
//   stoke-bench [--data PATH] [--split train|test] [--batch B] [--devices cpu:G]
//               [--workers N|auto] [--epochs E] [--seed S] [--size HxW|N] [--augment train|eval]
//               [--on-error skip|error] [--verify whole-file|region] [--prefetch S] [--chunk C]
//               [--dtype uint8|float32|float16|bfloat16] [--layout nchw|nhwc] [--json]
//
// `stoke-bench --help` lists every flag; usage errors exit 2 (stoke/tools/cli.hpp).
//
// Without --data it reads Fashion-MNIST from Debian's dataset-fashion-mnist. With --json the
// last line of output is one JSON object (fields documented in docs/BENCHMARKS.md).

#include <unistd.h>
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "stoke/cache.hpp"
#include "stoke/devices.hpp"
#include "stoke/format.hpp"
#include "stoke/loader.hpp"
#include "stoke/names.hpp"
#include "stoke/option_table.hpp"
#include "stoke/tools/cli.hpp"
#include "stoke/tools/cores.hpp"
#include "stoke/tools/fashion_mnist.hpp"
#include "stoke/tools/format.hpp"
#include "stoke/tools/option_flags.hpp"
#include "stoke/tools/proc.hpp"
#include "stoke/tools/progress.hpp"
#include "sweep_plot.hpp"

namespace {

using stoke::tools::children_cpu_s;
using stoke::tools::children_rss_mib;
using stoke::tools::fixed1;
using stoke::tools::own_cpu_s;
using stoke::tools::with_commas;
using Clock = std::chrono::steady_clock;

struct Args {
  stoke::Options options;
  std::int64_t epochs = 1;
  bool json = false;
  bool list_devices = false;
  double consumer_ms = 0;  // simulated trainer time per batch (--consumer-ms, --demand)
  // --sweep-workers: worker counts to try (empty: no sweep); --sweep-prefetch: depths.
  std::vector<int> sweep_workers;
  std::vector<int> sweep_prefetch;
  std::string plot = "stoke-sweep.png";
  std::string pipeline;  // --pipeline; "": the --augment preset
  int channels = 3;      // with --pipeline
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

std::vector<int> sweep_range(int lo, int hi) {
  std::vector<int> v;
  for (int w = lo; w <= hi; ++w) v.push_back(w);
  return v;
}

// --sweep-workers: "" (1..the cores available), "K" (1..K) or "A..K".
std::vector<int> parse_sweep(const std::string& spec) {
  if (spec.empty()) return sweep_range(1, stoke::tools::available_cores());
  std::optional<stoke::tools::CountRange> r = stoke::tools::parse_count_range(spec, 0, 512);
  if (r && r->single) r->lo = 1;  // "K": 1..K
  if (!r || r->hi < std::max(r->lo, 1))
    throw stoke::ConfigError("wants K or A..K (worker counts 0..512, K >= 1 and >= A), got '" +
                             spec + "'");
  return sweep_range(r->lo, r->hi);
}

// The options stoke-bench takes, in its --help's order: each is --name-with-dashes, with its help,
// default and range from the table of options (stoke/option_table.hpp).
constexpr std::string_view kOptionFlags[] = {"data",
                                             "sources",
                                             "epoch_samples",
                                             "split",
                                             "image_root",
                                             "max_boxes",
                                             "box_field",
                                             "mask_field",
                                             "bytes_field",
                                             "max_bytes",
                                             "label_field",
                                             "max_classes",
                                             "shuffle_window",
                                             "cache_dir",
                                             "cache_limit",
                                             "relayout_cache",
                                             "relayout_limit",
                                             "batch",
                                             "devices",
                                             "workers",
                                             "max_workers",
                                             "stall_target",
                                             "seed",
                                             "size",
                                             "pipeline",
                                             "augment",
                                             "on_error",
                                             "verify",
                                             "prefetch",
                                             "chunk",
                                             "dtype",
                                             "layout",
                                             "decode",
                                             "gpu_share",
                                             "max_compressed_bytes",
                                             "mixup_alpha",
                                             "cutmix_alpha",
                                             "mix_prob",
                                             "mix_switch_prob",
                                             "mix_mode",
                                             "mix_rule",
                                             "num_classes",
                                             "label_smoothing",
                                             "repeats"};

// What the loader is asked for, from the command line. The pipeline has no text form in the
// table (it needs the size and the channels): --pipeline keeps its text until parse_args().
void add_loader_flags(CLI::App& app, Args& a) {
  for (std::string_view name : kOptionFlags) {
    if (name != "pipeline") {
      stoke::tools::add_option_flag(app, a.options, name);
      continue;
    }
    std::string steps;  // the vocabulary, from the steps' own records
    for (const stoke::StepFormInfo& f : stoke::step_forms())
      steps += "\n    " + f.name + " " + f.usage;
    app.add_option("--pipeline", a.pipeline,
                   std::string(stoke::find_option("pipeline")->doc) +
                       ", e.g. \"scale_jitter 480 800 | box_crop 512 512 0.5 | horizontal_flip\"; "
                       "the steps and what each takes:" +
                       steps)
        ->type_name("STEPS");
    app.add_option("--channels", a.channels, "with --pipeline: 3 (RGB) or 1 (gray)")
        ->check(CLI::IsMember({1, 3}))
        ->capture_default_str();
  }
}

// What stoke-bench does with the loader: how long, with what consumer, which sweep.
CLI::Option* add_run_flags(CLI::App& app, Args& a, std::string& sweep) {
  app.add_flag("--list-devices", a.list_devices,
               "print the GPUs found (without touching CUDA) and exit");
  app.add_option("--epochs", a.epochs, "epochs to run")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--consumer-ms", a.consumer_ms,
                 "simulate a trainer that needs X ms per batch (it sleeps, as a thread waiting "
                 "on its GPU does)")
      ->check(stoke::tools::positive());
  app.add_option_function<double>(
         "--demand", [&a](double v) { a.consumer_ms = -v; },  // resolved once the batch is known
         "the same, as the images per second the trainer takes")
      ->check(stoke::tools::positive())
      ->type_name("IMG_PER_S");
  CLI::Option* sweep_flag =
      app.add_option("--sweep-workers", sweep,
                     "run once per worker count 1..K or A..K (default K: the cores this process "
                     "may use, after CPU affinity and cgroup limits), print a table and recommend "
                     "the smallest count within 5% of the best throughput; also writes --plot")
          ->expected(0, 1)
          ->type_name("[A..]K");
  app.add_option("--sweep-prefetch", a.sweep_prefetch,
                 "with --sweep-workers: also try these prefetch depths")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 16))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("A,B,...");
  app.add_option("--plot", a.plot, "the sweep's PNG plot")
      ->type_name("FILE")
      ->capture_default_str();
  app.add_flag("--json", a.json, "end the output with one JSON object");
  return sweep_flag;
}

// The command line into `a`; nullopt: go on, else the exit code (see stoke/tools/cli.hpp).
std::optional<int> parse_args(int argc, char** argv, Args& a) {
  a.options.data = stoke::tools::kDefaultFashionMnistDir;
  CLI::App app("Runs a stoke loader over a dataset and reports what it delivered and how fast.",
               "stoke-bench");
  stoke::tools::configure(app);
  add_loader_flags(app, a);
  std::string sweep;
  CLI::Option* sweep_flag = add_run_flags(app, a, sweep);
  app.footer(
      "Without --data it reads Fashion-MNIST from Debian's dataset-fashion-mnist. With "
      "--json the last line of output is one JSON object (docs/BENCHMARKS.md).");
  if (const auto code = stoke::tools::parse(app, argc, argv)) return code;
  if (sweep_flag->count() > 0) {
    try {
      a.sweep_workers = parse_sweep(sweep);
    } catch (const stoke::ConfigError& e) {
      return stoke::tools::usage_error(app, "--sweep-workers", e.what());
    }
  }
  if (!a.pipeline.empty()) {
    if (a.options.height == 0)
      return stoke::tools::usage_error(app, "--pipeline",
                                       "needs --size (the output height and width)");
    try {
      a.options.pipeline = stoke::make_pipeline(a.options.height, a.options.width, a.channels,
                                                stoke::parse_steps(a.pipeline));
    } catch (const stoke::ConfigError& e) {
      return stoke::tools::usage_error(app, "--pipeline", e.what());
    }
  }
  return std::nullopt;
}

// Resident memory of this process in MiB.
double rss_mib(const char* field = "VmRSS:") {
  return stoke::tools::status_mib("self", field);
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

// The progress line on a terminal: "epoch 1/2 [####....] 40/120 batches  12,345 samples/s".
std::string progress_text(std::int64_t done, std::int64_t total, std::int64_t epoch,
                          std::int64_t epochs, double rate) {
  char text[256];
  std::snprintf(text, sizeof text, "epoch %lld/%lld %s %lld/%lld batches  %s samples/s",
                static_cast<long long>(epoch + 1), static_cast<long long>(epochs),
                stoke::tools::meter(done, total, 30).c_str(), static_cast<long long>(done),
                static_cast<long long>(total), with_commas(rate).c_str());
  return text;
}

// One run of a loader over `epochs` epochs, and everything stoke-bench reports about it.
struct Measurement {
  stoke::Stats stats;
  std::int64_t dataset_size = 0, batches_per_epoch = 0;
  int rank = 0, world = 1;
  std::string pipeline;
  double wall_s = 0;
  double cpu_self = 0, cpu_workers = 0;  // seconds during the run
  double rss_mib = 0, rss_peak_mib = 0, worker_rss_mib = 0;
  std::vector<double> rss_per_epoch, worker_rss_per_epoch;
  // Each epoch's samples over its wall time, from set_epoch() to its end (the first epoch's
  // includes the wait for its first batch: a cold shard cache shows there).
  std::vector<double> samples_per_s_per_epoch;
  std::string checksum, output_checksum;
  int max_boxes = 0;
  std::int64_t boxes = 0;  // delivered with real samples (valid == 1)
  int mask_bytes = 0;      // per mask label (0: no masks)
  int max_bytes = 0;       // pass-through bytes per sample (0: none)
};

// Runs the loader; the consumer sleeps consumer_ms after each batch (a simulated trainer).
// `header` is called once the loader exists (to print its configuration).
Measurement measure(const stoke::Options& o, std::int64_t epochs, double consumer_ms,
                    bool progress_bar, const std::function<void(const stoke::Loader&)>& header) {
  const double cpu_before = own_cpu_s();
  stoke::Loader loader(o);
  if (header) header(loader);
  Measurement m;
  m.dataset_size = loader.dataset_size();
  m.batches_per_epoch = loader.batches_per_epoch();
  m.rank = loader.rank();
  m.world = loader.world();
  m.pipeline = loader.pipeline().describe();
  XXH3_state_t* hash = XXH3_createState();
  XXH3_128bits_reset(hash);
  // What the devices received (host devices only: GPU memory is not read back).
  XXH3_state_t* output_hash = XXH3_createState();
  XXH3_128bits_reset(output_hash);
  const bool gpu = o.devices.kind == stoke::DeviceSet::Kind::kCuda;
  const std::int64_t bpe = m.batches_per_epoch;
  stoke::tools::TerminalLine progress(progress_bar, std::chrono::milliseconds(200));
  const auto started = Clock::now();
  // Counted here rather than read from loader.stats() after every batch: the progress output
  // must not add the loader's report (verdict, GPU summary) to the measured loop.
  std::int64_t samples = 0;
  for (std::int64_t e = 0; e < epochs; ++e) {
    const auto epoch_started = Clock::now();
    const std::int64_t samples_before = samples;
    loader.set_epoch(e);
    std::int64_t done = 0;
    while (auto batch = loader.next()) {
      hash_update(hash, batch->pixels().data(), batch->pixels().size_bytes());
      hash_update(hash, batch->labels().data(), batch->labels().size_bytes());
      hash_update(hash, batch->valid().data(), batch->valid().size_bytes());
      m.max_boxes = batch->max_boxes();
      if (m.max_boxes > 0) {
        hash_update(hash, batch->boxes().data(), batch->boxes().size_bytes());
        hash_update(hash, batch->box_classes().data(), batch->box_classes().size_bytes());
        hash_update(hash, batch->box_counts().data(), batch->box_counts().size_bytes());
        for (int i = 0; i < batch->size(); ++i)
          m.boxes += batch->valid()[i] != 0 ? batch->box_counts()[i] : 0;
      }
      // Masks and pass-through bytes, when the data has them (empty spans otherwise).
      hash_update(hash, batch->masks().data(), batch->masks().size_bytes());
      hash_update(hash, batch->bytes().data(), batch->bytes().size_bytes());
      hash_update(hash, batch->byte_counts().data(), batch->byte_counts().size_bytes());
      m.mask_bytes = batch->mask_bytes();
      m.max_bytes = batch->max_bytes();
      for (int d = 0; d < batch->device_count(); ++d) {
        batch->wait(d);  // a GPU batch counts once its bytes are on the device
        const stoke::DeviceChunk c = batch->chunk(d);
        if (!gpu) hash_update(output_hash, c.data, c.bytes);
      }
      if (consumer_ms > 0)
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(consumer_ms));
      ++done;
      samples += batch->size();
      const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
      if (progress.active())
        progress.draw(progress_text(done, bpe, e, epochs,
                                    elapsed > 0 ? static_cast<double>(samples) / elapsed : 0),
                      done == bpe);
    }
    progress.finish();
    if (progress_bar && !progress.active() && epochs > 1) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
      std::fprintf(stderr, "epoch %lld/%lld: %lld batches, %s samples/s so far\n",
                   static_cast<long long>(e + 1), static_cast<long long>(epochs),
                   static_cast<long long>(done),
                   with_commas(static_cast<double>(samples) / elapsed).c_str());
    }
    const double epoch_s = std::chrono::duration<double>(Clock::now() - epoch_started).count();
    m.samples_per_s_per_epoch.push_back(
        epoch_s > 0 ? static_cast<double>(samples - samples_before) / epoch_s : 0);
    m.rss_per_epoch.push_back(rss_mib());
    m.worker_rss_per_epoch.push_back(children_rss_mib());
  }
  m.wall_s = std::chrono::duration<double>(Clock::now() - started).count();
  m.stats = loader.stats();
  m.cpu_self = own_cpu_s() - cpu_before;
  m.cpu_workers = children_cpu_s();
  m.rss_mib = rss_mib();
  m.rss_peak_mib = rss_mib("VmHWM:");
  m.worker_rss_mib = children_rss_mib();
  m.checksum = hex128(XXH3_128bits_digest(hash));
  m.output_checksum = hex128(XXH3_128bits_digest(output_hash));
  XXH3_freeState(hash);
  XXH3_freeState(output_hash);
  return m;
}

// uint8 batches are the pipeline's NHWC bytes whatever Options::layout says.
const char* output_layout_name(const stoke::Options& o) {
  return stoke::layout_name(o.dtype == stoke::DType::kUInt8 ? stoke::Layout::kNHWC : o.layout);
}

// The consumer's simulated time per batch, from --consumer-ms or --demand (stored negative).
double consumer_ms_of(const Args& args) {
  if (args.consumer_ms >= 0) return args.consumer_ms;
  return 1000.0 * args.options.batch / -args.consumer_ms;
}

void print_configuration(const Args& args, const stoke::Loader& loader) {
  const auto& o = args.options;
  std::printf("stoke-bench %s\n", stoke::version());
  std::printf("  data       %s (%lld samples)\n", stoke::shown_name(o.data).c_str(),
              static_cast<long long>(loader.dataset_size()));
  std::string steps = loader.pipeline().describe();
  for (std::size_t at = steps.find('\n'); at != std::string::npos; at = steps.find('\n', at))
    steps.replace(at, 1, " | ");
  std::printf("  pipeline   %s\n", steps.c_str());
  std::printf("  batch      %d per rank (rank %d of %d) on %s, %lld batches per epoch\n", o.batch,
              loader.rank(), loader.world(), o.devices.to_string().c_str(),
              static_cast<long long>(loader.batches_per_epoch()));
  if (o.workers == stoke::kAuto)
    std::printf(
        "  workers    auto (starting with 1, at most %s; stall target %.1f%%)\n",
        o.max_workers > 0
            ? std::to_string(o.max_workers).c_str()
            : (std::to_string(stoke::tools::available_cores()) + ", the cores available").c_str(),
        100 * o.stall_target);
  else
    std::printf("  workers    %d%s\n", o.workers, o.workers == 0 ? " (in-process)" : "");
  if (consumer_ms_of(args) > 0)
    std::printf("  consumer   simulated: %.2f ms per batch\n", consumer_ms_of(args));
  std::fflush(stdout);
}

nlohmann::json stage_json(const stoke::Stats& s) {
  return {{"read_s", s.read_s},
          {"decode_s", s.decode_s},
          {"augment_s", s.augment_s},
          {"wait_s", s.wait_s}};
}

int run(const Args& args) {
  const auto& o = args.options;
  const bool text = !args.json || ::isatty(STDOUT_FILENO);
  const bool gpu = o.devices.kind == stoke::DeviceSet::Kind::kCuda;
  const Measurement m =
      measure(o, args.epochs, consumer_ms_of(args), true, [&](const stoke::Loader& loader) {
        if (text) print_configuration(args, loader);
      });
  const stoke::Stats& s = m.stats;
  const char* dtype = stoke::dtype_name(o.dtype);
  const char* layout = output_layout_name(o);
  const stoke::CacheUsage cache = stoke::cache_usage(o.cache_dir);  // (after the run: its files)
  if (text) {
    std::printf("result\n");
    std::printf("  delivered  %lld batches, %lld samples (%lld padding repeats), %lld skipped\n",
                static_cast<long long>(s.batches), static_cast<long long>(s.samples),
                static_cast<long long>(s.padded), static_cast<long long>(s.skipped));
    for (const auto& [reason, n] : s.skipped_by_reason)
      std::printf("               %s: %lld\n", reason.c_str(), static_cast<long long>(n));
    std::printf("  throughput %s samples/s\n", with_commas(s.samples_per_s).c_str());
    if (m.samples_per_s_per_epoch.size() > 1) {
      std::printf("  per epoch ");
      for (double r : m.samples_per_s_per_epoch) std::printf(" %s", with_commas(r).c_str());
      std::printf(" samples/s (wall time of each epoch)\n");
    }
    std::printf("  startup    %.3f s (construction to first batch)\n", s.startup_s);
    std::printf("  waiting    %.1f%% of the consumer's time (last %d batches: %.1f%%)\n",
                100 * s.wait_fraction, s.window_batches, 100 * s.window_wait_fraction);
    std::printf("  verdict    %s\n", s.verdict.c_str());
    if (s.workers_auto || s.prefetch_auto) {
      std::printf("  autotune   ended with %d workers and %d slots after %zu decision(s)\n",
                  s.workers, s.slots, s.decisions.size());
      for (const stoke::TuneDecision& d : s.decisions)
        std::printf("               at %5.1f s: %s %d -> %d: %s\n", d.at_s,
                    stoke::tune_target_name(d.what), d.from, d.to, d.reason.c_str());
    }
    if (gpu) std::printf("  gpu        monitor: %s\n", s.gpu_monitor.c_str());
    std::printf(
        "  stages     read %.2f s, decode %.2f s, augment %.2f s (worker time); "
        "consumer waited %.2f s\n",
        s.read_s, s.decode_s, s.augment_s, s.wait_s);
    std::printf("  memory     %.1f MiB resident (peak %.1f), workers %.1f MiB, arena %.1f MiB\n",
                m.rss_mib, m.rss_peak_mib, m.worker_rss_mib,
                static_cast<double>(s.arena_bytes) / (1 << 20));
    std::printf("  cpu        %.2f s in this process, %.2f s in the workers\n", m.cpu_self,
                m.cpu_workers);
    std::printf("  restarts   %lld worker restarts\n", static_cast<long long>(s.worker_restarts));
    if (!cache.root.empty()) {
      std::printf("  cache      %s: %s in %llu file(s)", cache.root.c_str(),
                  stoke::tools::bytes_text(cache.bytes).c_str(),
                  static_cast<unsigned long long>(cache.files));
      const char* sep = " (";
      for (const stoke::CacheUsage::Part& p : cache.parts) {
        std::printf("%s%s %s", sep, p.name.c_str(), stoke::tools::bytes_text(p.bytes).c_str());
        sep = ", ";
      }
      std::printf("%s\n", cache.parts.empty() ? "" : ")");
    }
    if (s.shard_cache.starts_with("on"))
      std::printf(
          "  shards     cache %s; fetched %s, %lld hits, %lld misses, %lld evictions, waited "
          "%.2f s for fetches\n",
          s.shard_cache.c_str(),
          stoke::tools::bytes_text(static_cast<std::uint64_t>(s.cache_bytes_fetched)).c_str(),
          static_cast<long long>(s.cache_hits), static_cast<long long>(s.cache_misses),
          static_cast<long long>(s.cache_evictions), s.cache_fetch_wait_s);
    else if (s.shard_cache != stoke::Stats{}.shard_cache)
      std::printf("  shards     cache %s\n", s.shard_cache.c_str());
    for (std::size_t k = 0; k < s.source_samples.size(); ++k)
      std::printf("  source %-3zu %lld samples delivered, %lld of them in the last epoch\n", k,
                  static_cast<long long>(s.source_samples[k]),
                  static_cast<long long>(s.source_samples_epoch[k]));
    if (s.relayout_cache.starts_with("on"))
      std::printf("  relayout   cache %s; %lld samples read from copies, %lld copies made\n",
                  s.relayout_cache.c_str(), static_cast<long long>(s.relayout_hits),
                  static_cast<long long>(s.relayout_stored));
    else if (s.relayout_cache != stoke::Stats{}.relayout_cache)
      std::printf("  relayout   cache %s\n", s.relayout_cache.c_str());
    if (o.decode != stoke::Decode::kCpu)
      std::printf(
          "  decode     %s: %lld samples on the devices (%.2f s), %lld by the workers (%lld "
          "hybrid's share, %lld not JPEG, %lld unsupported JPEG, %lld over "
          "max_compressed_bytes), %lld the devices could not decode\n",
          stoke::decode_name(o.decode), static_cast<long long>(s.device_decoded), s.device_decode_s,
          static_cast<long long>(s.worker_decoded_hybrid + s.worker_decoded_not_jpeg +
                                 s.worker_decoded_unsupported + s.worker_decoded_too_large),
          static_cast<long long>(s.worker_decoded_hybrid),
          static_cast<long long>(s.worker_decoded_not_jpeg),
          static_cast<long long>(s.worker_decoded_unsupported),
          static_cast<long long>(s.worker_decoded_too_large),
          static_cast<long long>(s.device_decode_failed));
    std::printf("  devices    %s %s on %s; staging %s", dtype, layout,
                o.devices.to_string().c_str(), stoke::staging_mode_name(s.staging));
    if (s.dma_copies > 0)
      std::printf(", %lld copies to the devices (%.1f MiB), %.1f MiB copied on the host first",
                  static_cast<long long>(s.dma_copies),
                  static_cast<double>(s.dma_bytes) / (1 << 20),
                  static_cast<double>(s.host_copy_bytes) / (1 << 20));
    std::printf("\n");
    if (!s.staging_note.empty()) std::printf("               %s\n", s.staging_note.c_str());
    if (m.max_boxes > 0)
      std::printf("  boxes      %lld delivered (%.2f per sample), %d rows per sample\n",
                  static_cast<long long>(m.boxes),
                  s.samples > s.padded
                      ? static_cast<double>(m.boxes) / static_cast<double>(s.samples - s.padded)
                      : 0.0,
                  m.max_boxes);
    if (m.mask_bytes > 0) std::printf("  masks      %d-bit labels\n", 8 * m.mask_bytes);
    if (m.max_bytes > 0) std::printf("  bytes      up to %d per sample\n", m.max_bytes);
    std::printf("  checksum   xxh3-128 %s (uint8 pixels, labels, valid%s%s%s)\n",
                m.checksum.c_str(), m.max_boxes > 0 ? ", boxes" : "",
                m.mask_bytes > 0 ? ", masks" : "", m.max_bytes > 0 ? ", bytes" : "");
    if (!gpu)
      std::printf("  output     xxh3-128 %s (what the devices received)\n",
                  m.output_checksum.c_str());
  }
  if (args.json) {
    nlohmann::json j;
    j["version"] = stoke::version();
    j["data"] = o.data;
    j["dataset_size"] = m.dataset_size;
    j["batch"] = o.batch;
    j["devices"] = o.devices.to_string();
    j["workers"] = s.workers;  // the pool's size at the end (workers=auto: where it settled)
    j["workers_auto"] = s.workers_auto;
    j["prefetch_auto"] = s.prefetch_auto;
    j["slots"] = s.slots;
    j["decisions"] = nlohmann::json::array();
    for (const stoke::TuneDecision& d : s.decisions)
      j["decisions"].push_back({{"at_s", d.at_s},
                                {"what", stoke::tune_target_name(d.what)},
                                {"from", d.from},
                                {"to", d.to},
                                {"reason", d.reason}});
    j["epochs"] = args.epochs;
    j["consumer_ms"] = consumer_ms_of(args);
    j["samples"] = s.samples;
    j["batches"] = s.batches;
    j["padded"] = s.padded;
    j["skipped"] = s.skipped;
    j["skipped_by_reason"] = s.skipped_by_reason;
    j["samples_per_s"] = s.samples_per_s;
    j["samples_per_s_per_epoch"] = m.samples_per_s_per_epoch;
    j["shard_cache"] = {{"state", s.shard_cache},         {"bytes_fetched", s.cache_bytes_fetched},
                        {"hits", s.cache_hits},           {"misses", s.cache_misses},
                        {"evictions", s.cache_evictions}, {"fetch_wait_s", s.cache_fetch_wait_s}};
    j["relayout_cache"] = {
        {"state", s.relayout_cache}, {"hits", s.relayout_hits}, {"stored", s.relayout_stored}};
    j["decode"] = {{"mode", stoke::decode_name(o.decode)},
                   {"device_decoded", s.device_decoded},
                   {"device_decode_s", s.device_decode_s},
                   {"device_decode_failed", s.device_decode_failed},
                   {"worker_decoded_hybrid", s.worker_decoded_hybrid},
                   {"worker_decoded_not_jpeg", s.worker_decoded_not_jpeg},
                   {"worker_decoded_unsupported", s.worker_decoded_unsupported},
                   {"worker_decoded_too_large", s.worker_decoded_too_large}};
    if (!s.source_samples.empty()) {
      nlohmann::json sources = nlohmann::json::array();
      for (std::size_t k = 0; k < s.source_samples.size(); ++k)
        sources.push_back(
            {{"samples", s.source_samples[k]}, {"samples_last_epoch", s.source_samples_epoch[k]}});
      j["sources"] = sources;
    }
    j["startup_s"] = s.startup_s;
    j["wait_fraction"] = s.wait_fraction;
    j["window_wait_fraction"] = s.window_wait_fraction;
    j["window_batches"] = s.window_batches;
    j["demand_samples_per_s"] = s.demand_samples_per_s;
    j["worker_busy_fraction"] = s.worker_busy_fraction;
    j["worker_samples_per_s"] = s.worker_samples_per_s;
    j["verdict"] = s.verdict;
    j["gpu_monitor"] = s.gpu_monitor;
    j["gpus"] = nlohmann::json::array();
    for (const stoke::GpuActivity& g : s.gpus)
      j["gpus"].push_back({{"device", g.device},
                           {"samples", g.samples},
                           {"mean_percent", g.mean_percent},
                           {"idle_fraction", g.idle_fraction},
                           {"busy_fraction", g.busy_fraction},
                           {"bursts", g.bursts},
                           {"burst_then_idle", g.burst_then_idle}});
    j["stages"] = stage_json(s);
    j["worker_restarts"] = s.worker_restarts;
    j["cache"] = {{"root", cache.root},
                  {"bytes", cache.bytes},
                  {"files", cache.files},
                  {"parts", nlohmann::json::object()}};
    for (const stoke::CacheUsage::Part& p : cache.parts)
      j["cache"]["parts"][p.name] = {{"bytes", p.bytes}, {"files", p.files}};
    j["cpu_s"] = m.cpu_self;
    j["worker_cpu_s"] = m.cpu_workers;
    j["rss_mib"] = m.rss_mib;
    j["rss_mib_per_epoch"] = m.rss_per_epoch;
    j["worker_rss_mib_per_epoch"] = m.worker_rss_per_epoch;
    j["checksum"] = m.checksum;
    j["boxes"] = {{"max_boxes", m.max_boxes}, {"delivered", m.boxes}};
    j["mask_bits"] = 8 * m.mask_bytes;
    j["max_bytes"] = m.max_bytes;
    j["dtype"] = dtype;
    j["layout"] = layout;
    j["staging"] = stoke::staging_mode_name(s.staging);
    j["staging_note"] = s.staging_note;
    j["dma_copies"] = s.dma_copies;
    j["dma_bytes"] = s.dma_bytes;
    j["host_copy_bytes"] = s.host_copy_bytes;
    j["pinned_bytes"] = s.pinned_bytes;
    if (gpu)
      j["output_checksum"] = nullptr;
    else
      j["output_checksum"] = m.output_checksum;
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

// --sweep-workers: one measurement per (prefetch, workers), a table, the recommendation, the
// plot and (with --json) everything as one JSON object.
int sweep(const Args& args) {
  const double consumer_ms = consumer_ms_of(args);
  const std::vector<int> depths =
      args.sweep_prefetch.empty() ? std::vector<int>{0} : args.sweep_prefetch;
  const int runs = static_cast<int>(depths.size() * args.sweep_workers.size());
  const int cores = stoke::tools::available_cores();
  std::printf("stoke-bench %s: sweeping %d setting(s) on %s, %d core(s) available%s\n",
              stoke::version(), runs, args.options.data.c_str(), cores,
              consumer_ms > 0 ? (", consumer " + fixed1(consumer_ms) + " ms/batch").c_str() : "");
  struct Row {
    int workers, prefetch;
    Measurement m;
  };
  std::vector<Row> rows;
  int n = 0;
  for (int depth : depths) {
    for (int workers : args.sweep_workers) {
      stoke::Options o = args.options;
      o.workers = workers;
      o.prefetch = depth;
      std::fprintf(stderr, "[%d/%d] workers %d, prefetch %s\n", ++n, runs, workers,
                   depth == 0 ? "default" : std::to_string(depth).c_str());
      rows.push_back({workers, depth, measure(o, args.epochs, consumer_ms, true, nullptr)});
    }
  }
  double best = 0;
  for (const Row& r : rows) best = std::max(best, r.m.stats.samples_per_s);
  const Row* pick = nullptr;  // the fewest workers (then the smallest depth) within 5% of best
  for (const Row& r : rows) {
    if (r.m.stats.samples_per_s < 0.95 * best) continue;
    if (pick == nullptr || r.workers < pick->workers ||
        (r.workers == pick->workers && r.prefetch < pick->prefetch))
      pick = &r;
  }
  std::printf("\n%7s %8s %12s %7s %7s %9s %22s\n", "workers", "prefetch", "samples/s", "cpu",
              "stall", "rss MiB", "ms/sample read/dec/aug");
  for (const Row& r : rows) {
    const stoke::Stats& s = r.m.stats;
    const double samples = static_cast<double>(std::max<std::int64_t>(s.samples, 1));
    std::printf("%7d %8s %12s %6.2fc %6.1f%% %9.0f %7.3f/%6.3f/%6.3f%s\n", r.workers,
                r.prefetch == 0 ? "auto" : std::to_string(r.prefetch).c_str(),
                with_commas(s.samples_per_s).c_str(),
                (r.m.cpu_self + r.m.cpu_workers) / std::max(r.m.wall_s, 1e-9),
                100 * s.wait_fraction, r.m.rss_mib + r.m.worker_rss_mib, 1e3 * s.read_s / samples,
                1e3 * s.decode_s / samples, 1e3 * s.augment_s / samples,
                &r == pick ? "  <- recommended" : "");
  }
  std::printf("\nrecommended: %d worker(s)%s, the fewest within 5%% of the best (%s samples/s)%s\n",
              pick->workers,
              pick->prefetch == 0 ? "" : (", prefetch " + std::to_string(pick->prefetch)).c_str(),
              with_commas(best).c_str(),
              consumer_ms > 0 ? "; with the simulated consumer, the stall column says how often "
                                "it waited"
                              : "");
  std::vector<SweepPoint> points;
  for (const Row& r : rows)
    points.push_back({r.workers, r.prefetch, r.m.stats.samples_per_s, r.m.stats.wait_fraction});
  char title[256];
  std::snprintf(title, sizeof title, "stoke-bench sweep: %s, batch %d%s",
                std::filesystem::path(args.options.data).filename().c_str(), args.options.batch,
                consumer_ms > 0 ? (", consumer " + fixed1(consumer_ms) + " ms/batch").c_str() : "");
  const std::string why = write_sweep_plot(args.plot, points, title, pick->workers);
  if (why.empty())
    std::printf("plot: %s\n", args.plot.c_str());
  else
    std::printf("plot: not written (%s)\n", why.c_str());
  if (args.json) {
    nlohmann::json j;
    j["version"] = stoke::version();
    j["data"] = args.options.data;
    j["batch"] = args.options.batch;
    j["cores"] = cores;
    j["consumer_ms"] = consumer_ms;
    j["workers"] = pick->workers;
    j["prefetch"] = pick->prefetch;
    j["best_samples_per_s"] = best;
    j["plot"] = why.empty() ? nlohmann::json(args.plot) : nlohmann::json(nullptr);
    for (const Row& r : rows) {
      const stoke::Stats& s = r.m.stats;
      j["sweep"].push_back(
          {{"workers", r.workers},
           {"prefetch", r.prefetch},
           {"samples_per_s", s.samples_per_s},
           {"cpu_cores", (r.m.cpu_self + r.m.cpu_workers) / std::max(r.m.wall_s, 1e-9)},
           {"wait_fraction", s.wait_fraction},
           {"rss_mib", r.m.rss_mib + r.m.worker_rss_mib},
           {"stages", stage_json(s)},
           {"checksum", r.m.checksum}});
    }
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const auto code = parse_args(argc, argv, args)) return *code;
  try {
    if (args.list_devices) return list_devices();
    // "auto" as the GPUs found, so that the report names the devices the loader drives.
    args.options.devices = args.options.devices.resolve();
    if (!args.sweep_workers.empty()) return sweep(args);
    return run(args);
  } catch (const stoke::ConfigError& e) {
    std::fprintf(stderr, "stoke-bench: invalid configuration: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoke-bench: %s\n", e.what());
    return 1;
  }
}
