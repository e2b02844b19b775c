#pragma once
// Every validation of Options and every default the loader derives from them, in one place.
//
// Thread-safety: plain functions and an immutable value.
//
// check_options() runs before the dataset is indexed (so a typo costs no directory walk);
// resolve() runs after, when the dataset's size and kind are known. Both throw ConfigError with
// a message that says what to change; the words are part of the interface (tests match them).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "data/dataset_index.hpp"
#include "data/index_file.hpp"
#include "plan/epoch_plan.hpp"
#include "plan/mixture_plan.hpp"
#include "remote/remote.hpp"
#include "stoke/options.hpp"

namespace stoke::detail {

inline constexpr int kMaxWorkers = 512;
inline constexpr std::int64_t kMaxEpoch = std::int64_t{1} << 32;  // keeps epoch * batches in range
inline constexpr int kMaxSoftClasses = 1 << 20;                   // soft labels: num_classes' bound
inline constexpr int kMaxRepeats = 64;
inline constexpr std::size_t kDefaultMemoryBudget = std::size_t{2} << 30;

// Remote shards: how every request to a server behaves, and where shard copies may be kept. Read
// from Options and the environment once, in the training process, before the dataset is indexed
// (indexing asks the servers), then handed to whatever reaches a server or the cache: the index,
// the shard cache's plan and prefetcher (shard_cache_plan.hpp, shard_prefetcher.hpp) and, through
// the arena (ArenaHeader::remote_deadline_s), the workers' reads.
struct RemoteConfig {
  RemotePolicy policy;            // its deadline from STOKE_REMOTE_DEADLINE_S; no cancel flag
  std::string cache_root;         // cache_root(Options::cache_dir): "" when none can be named
  std::uint64_t cache_limit = 0;  // Options::cache_limit; 0: no shard copies
};

struct ResolvedConfig {
  ResolvedConfig(Options o, Pipeline p) : options(std::move(o)), pipeline(std::move(p)) {}

  Options options;  // as given (the log callback, paths, dtype, ...), devices resolved
  Pipeline pipeline;
  PlanConfig plan;  // rank and world resolved from the environment
  RemoteConfig remote;
  std::int64_t batches_per_epoch = 0;
  // The consumer's first position: (0, 0), or where Options::resume says.
  std::int64_t start_epoch = 0;
  std::int64_t start_batch = 0;

  bool workers_auto = false;
  bool prefetch_auto = false;
  int initial_workers = 0;  // 0: the pipeline runs in-process
  int capacity = 0;         // worker records in the arena (0 in-process)
  int cores = 1;            // available to this process (affinity and cgroup quota)
  int max_workers = 0;      // workers=auto's bound, and why
  std::string max_workers_reason;
  std::size_t initial_slots = 0;
  std::size_t memory_budget = 0;    // bytes for batch slots
  int max_boxes = 0;                // per sample in a slot (0: the dataset has no boxes)
  std::int64_t over_max_boxes = 0;  // images with more annotated boxes than max_boxes
  int max_bytes = 0;                // pass-through bytes per sample in a slot (0: none)
  std::int64_t over_max_bytes = 0;  // samples whose bytes are cut to max_bytes
  // The classes' names where the dataset names them (Loader::class_names()).
  std::vector<std::string> class_names;
  // A mixture (Options::sources): its plan (then `plan` holds only what every source shares,
  // its samples the sources' in all), each source's data as names show it, and the offset added
  // to each source's labels.
  std::optional<MixtureConfig> mixture;
  std::vector<std::string> source_data;
  std::vector<std::int32_t> label_offsets;

  // Options::mean/stddev in uint8 units, one per output channel (float dtypes only).
  float mean[4] = {0, 0, 0, 0};
  float stddev[4] = {1, 1, 1, 1};
};

// Whether the options ask for MixUp or CutMix (either alpha above 0).
inline bool mixing_on(const Options& o) {
  return o.mixup_alpha > 0 || o.cutmix_alpha > 0;
}

// Samples per unit of work: one chunk per worker per batch (the whole batch in-process), unless
// Options::chunk fixes it. Fewer, larger units cost less coordination, and with several batches
// in flight every worker stays busy (measured on Fashion-MNIST with 2 workers: batch/4-sized
// chunks delivered 10-25% fewer samples per second).
int chunk_for(const Options& o, int pool_size);

// Options::cache_dir and cache_limit, STOKE_REMOTE_DEADLINE_S and the cache root's variables
// (data/cache_folder.hpp): the one reading of them, before the dataset is indexed.
RemoteConfig resolve_remote(const Options& o);

// The checks that need no dataset: ranges of the pool, monitor, timeout and prefetch options,
// and the open-file limit for the workers asked for.
void check_options(const Options& o);

// Everything else: the devices ("auto" becomes the GPUs found, or cpu:1: DeviceSet::resolve),
// the pipeline (explicit, or the augment preset at the requested size), the epoch plan's
// configuration, files the index rejected (a DataError under OnError::kError), boxes per
// sample, normalization constants, the resume position; `remote` (resolve_remote(), as the
// index was built with it) is kept as it is. Reads the index's per-sample arrays only for what
// the options ask of them (labels for num_classes, boxes, bytes).
ResolvedConfig resolve(Options o, const MappedIndex& index, RemoteConfig remote);

// A mixture's label offsets, source by source in order (MixtureSource::label_offset): a source's
// own, or (kAutoLabelOffset) after the classes of the sources before it.
struct LabelOffsets {
  std::int64_t of(const MixtureSource& source) const {
    return source.label_offset == kAutoLabelOffset ? next : source.label_offset;
  }
  // The source at `offset` names `classes` classes.
  void add(std::int64_t offset, std::size_t classes) {
    next = std::max(next, offset + static_cast<std::int64_t>(classes));
  }
  std::int64_t next = 0;  // after the classes of the sources so far
};

// The checks of a mixture's options that need no index: at most kMaxDatasets sources, no
// source option set on the loader itself (each source has its own), label offsets in range.
// Throws ConfigError naming the problem.
void check_mixture_options(const Options& o);

// A mixture's (Options::sources, one index per source in order): each source resolved as a
// loader of it alone would be, with the loader's other options, then combined. Throws
// ConfigError for sources that cannot share one loader (their pipelines' outputs, their fields:
// boxes, masks, bytes), naming them, and for what a mixture does not do yet (repeats).
ResolvedConfig resolve_mixture(Options o,
                               const std::vector<std::shared_ptr<const MappedIndex>>& indexes,
                               RemoteConfig remote);

}  // namespace stoke::detail
