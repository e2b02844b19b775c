#pragma once
// The loader's implementation: the consumer's side (loader.cpp) and construction
// (loader_setup.cpp), around the parts that each own one idea: ResolvedConfig (config.hpp), the
// arena plan (ipc/arena_plan.hpp), LoaderCore with its SlotTable and LoaderMetrics, EventLog,
// Supervisor (with SampleBlame and the worker processes) and Stager.
//
// Thread-safety: see stoke/loader.hpp for the public contract. These threads run loader code:
// the consumer (next(), set_epoch(), stats(), resize_workers(), any thread the user likes), the
// supervisor, the stager, and with remote shards the prefetcher's coordinator and downloaders;
// the GPU activity monitor samples on a thread of its own (it shares nothing with the rest but
// its own lock). They share LoaderCore::mutex; what it guards is annotated and checked by clang.

#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/config.hpp"
#include "common/time_source.hpp"
#include "consumer/event_log.hpp"
#include "consumer/loader_core.hpp"
#include "consumer/loader_metrics.hpp"
#include "consumer/stager.hpp"
#include "data/dataset_index.hpp"
#include "prefetch/shard_prefetcher.hpp"
#include "stoke/loader.hpp"
#include "supervision/supervisor.hpp"
#include "tuning/gpu_activity.hpp"
#include "worker/chunk_runner.hpp"

namespace stoke {

namespace detail {
using Clock = std::chrono::steady_clock;
struct LoaderEnvironment;
struct ShardCachePlan;
class ShardDiagnosis;
}  // namespace detail

using detail::Clock;

class Loader::Impl {
 public:
  // `indexes`: the dataset's, or a mixture's sources' in order (ResolvedConfig::mixture).
  Impl(detail::ResolvedConfig config,
       std::vector<std::shared_ptr<const detail::MappedIndex>> indexes,
       const detail::LoaderEnvironment& env, Clock::time_point created);
  ~Impl();

  std::optional<Batch> next();
  void set_epoch(std::int64_t epoch);
  LoaderState state() const;
  Stats stats() const;
  void resize_workers(int n);

  std::int64_t batches_per_epoch() const { return config_.batches_per_epoch; }
  std::int64_t dataset_size() const { return config_.plan.samples; }
  const std::vector<std::string>& class_names() const { return config_.class_names; }
  int rank() const { return config_.plan.rank; }
  int world() const { return config_.plan.world; }
  const Pipeline& pipeline() const { return config_.pipeline; }
  detail::LoaderCore& core() const { return *core_; }

 private:
  // ---- construction (loader_setup.cpp)
  // `copies`: whether the workers read remote shards' local copies (the shard cache is on).
  void lay_out_arena(const std::vector<std::shared_ptr<const detail::MappedIndex>>& indexes,
                     bool copies, Clock::time_point created, const detail::LoaderEnvironment& env);
  // What makes the core's staging (LoaderCore::Setup::staging), or nothing when the consumers
  // read the arena itself.
  std::function<std::unique_ptr<detail::Staging>(detail::LoaderCore&)> staging_maker(
      const detail::LoaderEnvironment& env) const;
  // Remote shards: the prefetcher and its gate, when the plan (shard_cache_plan.hpp) caches any.
  void set_up_shard_cache(const detail::ShardCachePlan& plan);
  // The relayout cache's fields of the arena header `h` for the datasets (its folder made here,
  // so that workers only write into it), and relayout_cache_.
  void set_up_relayout_cache(const std::vector<std::shared_ptr<const detail::MappedIndex>>& indexes,
                             detail::ArenaHeader& h);
  void start_threads();

  // ---- the consumer (loader.cpp)
  std::optional<Batch> next_unflushed();
  Batch deliver(int slot, Clock::time_point entered) REQUIRES(core_->mutex);
  void fill_inline() REQUIRES(core_->mutex);
  // The consumer holds every slot: add one, or throw when the memory budget allows none.
  void grow_for_consumer() REQUIRES(core_->mutex);
  // The log callback threw: the loader stops with its error.
  void log_failed(std::exception_ptr error) EXCLUDES(core_->mutex);
  // Delivers the queued log lines; the user's callback, and log_failed(), may take the loader's
  // lock, so the caller must not hold it (checked).
  void flush_log() EXCLUDES(core_->mutex);

  const detail::ResolvedConfig config_;
  const Options& options_ = config_.options;
  // What deadlines read (LoaderEnvironment::time, or the steady clock); before every thread.
  const std::shared_ptr<const detail::TimeSource> time_;
  mutable detail::EventLog log_;
  std::shared_ptr<detail::LoaderCore> core_;

  std::unique_ptr<detail::GpuActivityMonitor> gpus_;    // GPU devices only; thread-safe
  std::unique_ptr<detail::ChunkRunner> inline_runner_;  // workers == 0: the consumer's thread
  int done_fd_ = -1;
  std::unique_ptr<detail::Supervisor> supervisor_;       // workers >= 1
  std::unique_ptr<detail::BatchMixer> mixer_;            // soft labels (num_classes > 0)
  std::unique_ptr<detail::Stager> stager_;               // when core_->staging is set
  std::string shard_cache_ = "off (no remote shards)";   // for Stats::shard_cache
  std::string relayout_cache_ = "off";                   // for Stats::relayout_cache
  std::unique_ptr<detail::ShardPrefetcher> prefetcher_;  // remote shards with a cache
  std::unique_ptr<detail::ShardDiagnosis> diagnosis_;    // a dataset-level index's bad shards
  // A mixture's samples delivered per source (one count per source; none for one dataset): in
  // source_epoch_'s epoch, and in all (Stats).
  std::size_t source_count() const { return config_.mixture ? config_.mixture->sources.size() : 0; }
  std::vector<std::int64_t> source_epoch_samples_ GUARDED_BY(core_->mutex) =
      std::vector<std::int64_t>(source_count());
  std::vector<std::int64_t> source_samples_ GUARDED_BY(core_->mutex) =
      std::vector<std::int64_t>(source_count());
  std::int64_t source_epoch_ GUARDED_BY(core_->mutex) = -1;
  // decode=gpu/hybrid: the delivered samples the devices decoded, and those the workers did,
  // by JpegJob::Why (Stats).
  std::int64_t device_decoded_ GUARDED_BY(core_->mutex) = 0;
  std::int64_t worker_decoded_[5] GUARDED_BY(core_->mutex) = {};
  std::int64_t decode_failures_logged_ GUARDED_BY(core_->mutex) = 0;
};

}  // namespace stoke
