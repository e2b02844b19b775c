#pragma once
// Loader statistics. Thread-safety: value type (a snapshot).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace stoke {

// One GPU's utilization over the monitor's window, sampled through NVML in the background
// (NVML's "GPU busy" percentage: the share of time a kernel was running).
struct GpuActivity {
  int device = 0;                // CUDA ordinal
  int samples = 0;               // utilization readings in the window
  double mean_percent = 0;       // mean utilization, 0..100
  double idle_fraction = 0;      // readings at or below 10%
  double busy_fraction = 0;      // readings at or above 50%
  int bursts = 0;                // busy stretches that fell back to idle
  bool burst_then_idle = false;  // bursts alternate with idle gaps: the starved-GPU pattern
};

// What a decision of the automatic sizing changed (names.hpp: tune_target_name).
enum class TuneTarget { kWorkers, kPrefetch };

// How batches reach the devices (names.hpp: staging_mode_name).
//   kNone:           host devices, uint8: the consumer reads the arena itself
//   kHost:           normalized on host devices
//   kRegistered:     DMA straight from the page-locked arena
//   kPinnedFallback: page-locking failed (Stats::staging_note says why); each chunk is copied on
//                    the host into a pinned buffer first, counted in host_copy_bytes
enum class StagingMode { kNone, kHost, kRegistered, kPinnedFallback };

// One decision of the automatic pool sizing (Options::workers or prefetch = kAuto).
struct TuneDecision {
  double at_s = 0;  // seconds since the loader was constructed
  TuneTarget what = TuneTarget::kWorkers;
  int from = 0, to = 0;
  std::string reason;  // the measurements behind it, in words
};

struct Stats {
  std::int64_t batches = 0;  // delivered
  std::int64_t samples = 0;  // delivered, padding included
  std::int64_t padded = 0;   // delivered padding repeats
  std::int64_t skipped = 0;  // samples replaced under OnError::kSkip, index rejects included
  std::map<std::string, std::int64_t> skipped_by_reason;
  // A mixture (Options::sources): each source's samples delivered (padding not counted) in the
  // epoch of the last batch delivered, and since the loader was made. Empty for one dataset.
  std::vector<std::int64_t> source_samples_epoch;
  std::vector<std::int64_t> source_samples;
  std::int64_t worker_restarts = 0;

  double startup_s = 0;      // construction to first delivered batch
  double active_s = 0;       // first to last delivered batch
  double samples_per_s = 0;  // samples delivered after the first batch / active_s
  double wait_s = 0;         // time the consumer spent inside next() after the first batch
  double wait_fraction = 0;  // wait_s / active_s: the data-stall fraction of the whole run

  // The stall monitor. For each delivered batch after the first, the consumer's wait (inside
  // next()) and its compute (from the previous next() returning to this call; the gap across an
  // epoch end or set_epoch() is not counted). The window is the last Options::monitor_window
  // such batches.
  double compute_s = 0;             // consumer compute, whole run
  int window_batches = 0;           // batches in the window (fewer early in the run)
  double window_wait_fraction = 0;  // wait / (wait + compute) over the window
  double window_samples_per_s = 0;  // delivered: samples / (wait + compute) over the window
  double demand_samples_per_s = 0;  // what the consumer could take if it never waited:
                                    // samples / compute over the window (0: unknown)
  // How busy the workers were over the window: their producing time / (workers x elapsed),
  // and one worker's rate while producing (samples per busy second).
  double worker_busy_fraction = 0;
  double worker_samples_per_s = 0;
  // GPU utilization, when the devices are GPUs and NVML can be loaded. gpu_monitor says which:
  // "nvml", "off (host devices)", or why NVML is unavailable.
  std::string gpu_monitor = "off (host devices)";
  std::vector<GpuActivity> gpus;
  // One line a person can act on: "input-bound: ..., try N workers" or "not input-bound: ...".
  std::string verdict;

  // Automatic sizing: whether the pool (workers) and the prefetch depth are tuned live, and
  // every decision so far, in order.
  bool workers_auto = false;
  bool prefetch_auto = false;
  std::vector<TuneDecision> decisions;

  // Delivered batches the consumer has released (each counted once, whatever its copies).
  std::int64_t released = 0;

  // Staging to the devices (GPUs, or host devices with a float dtype): see StagingMode.
  StagingMode staging = StagingMode::kNone;
  std::string staging_note;
  std::int64_t staged_batches = 0;
  std::int64_t dma_copies = 0;  // host-to-device copies
  std::int64_t dma_bytes = 0;
  std::int64_t host_copy_bytes = 0;  // 0 on the registered path
  std::int64_t pinned_bytes = 0;     // arena bytes page-locked
  std::int64_t device_bytes = 0;     // batch buffers allocated on the devices

  // Decoding (Options::decode), over the delivered batches (padding included): samples the
  // devices decoded; under decode=gpu/hybrid the samples the workers decoded instead, by
  // reason. Over the batches staged: samples the devices could not decode (damage past the
  // header, which is all a worker reads of them: their pixels are 0), and the devices' decode
  // and resize time (docs/USAGE.md, "Decoding on the GPU", says what each counts).
  std::int64_t device_decoded = 0;
  std::int64_t worker_decoded_hybrid = 0;       // decode=hybrid's share for the workers
  std::int64_t worker_decoded_not_jpeg = 0;     // PNG and other formats, raw pixels
  std::int64_t worker_decoded_unsupported = 0;  // CMYK/YCCK, 12-bit, arithmetic-coded JPEGs
  std::int64_t worker_decoded_too_large = 0;    // files over max_compressed_bytes
  std::int64_t device_decode_failed = 0;
  double device_decode_s = 0;

  // Where the producers' time went, summed over workers (seconds of their threads): reading
  // files, decoding them, and augmenting (everything else, writing the slot included). With
  // wait_s, the consumer's time spent waiting, these say which stage to speed up.
  double read_s = 0;
  double decode_s = 0;
  double augment_s = 0;

  // Shards on HTTP or S3 (Options::cache_dir, cache_limit): "off (no remote shards)", "on:
  // FOLDER, limit 16 GiB", or why it is off (then workers read byte ranges from the server).
  std::string shard_cache = "off (no remote shards)";
  std::int64_t cache_bytes_fetched = 0;  // downloaded into the cache by this loader
  // Each shard counts once per epoch, when the consumer's epoch first wants it: a hit when it
  // is on local disk then (kept from an earlier epoch, or fetched ahead), else a miss.
  std::int64_t cache_hits = 0;
  std::int64_t cache_misses = 0;
  std::int64_t cache_evictions = 0;  // copies this loader removed to stay under the limit
  double cache_fetch_wait_s = 0;  // time the next batch for the workers waited for its shards

  // The relayout cache (Options::relayout_cache): "on: FOLDER, progressive JPEGs, limit 16 GiB",
  // "off", or why it is off; samples read from its copies, and copies made, by this loader's
  // workers.
  std::string relayout_cache = "off";
  std::int64_t relayout_hits = 0;
  std::int64_t relayout_stored = 0;

  int workers = 0;  // the pool's size: active workers, ones still starting included (retiring
                    // ones excluded)
  int workers_starting = 0;  // of those, processes not yet past their start-up handshake
  int slots = 0;             // batch slots in the arena now
  std::int64_t arena_bytes = 0;
};

}  // namespace stoke
