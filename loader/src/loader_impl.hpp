#pragma once
// The loader's implementation: the consumer's side (loader.cpp), construction (loader_setup.cpp),
// the supervisor thread (supervisor.cpp) and the live pool (pool_sizing.cpp), around the parts
// that each own one idea: ResolvedConfig (config.hpp), the arena plan (ipc/arena_plan.hpp),
// SlotTable, SampleBlame, EventLog, LoaderMetrics, Stager and WorkerPool.
//
// Thread-safety: see stoke/loader.hpp for the public contract. Three threads run here: the
// consumer (next(), set_epoch(), stats(), resize_workers(), any thread the user likes), the
// supervisor (spawns, feeds and reaps the workers, tunes the pool) and the stager. They share
// LoaderCore::mutex; what it guards is annotated GUARDED_BY and checked by clang. Members
// marked "supervisor thread only" are touched by that thread alone, so they need no lock.

#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config.hpp"
#include "data/dataset_index.hpp"
#include "event_log.hpp"
#include "loader_core.hpp"
#include "loader_metrics.hpp"
#include "sample_blame.hpp"
#include "stager.hpp"
#include "stoke/loader.hpp"
#include "tuning/pool_tuner.hpp"
#include "worker/chunk_runner.hpp"
#include "worker_pool.hpp"

namespace stoke {

namespace detail {

using Clock = std::chrono::steady_clock;

// How often automatic sizing looks at its measurements (and so the supervisor's longest sleep).
inline constexpr double kTuneEveryS = 0.25;

}  // namespace detail

using detail::Clock;

class Loader::Impl {
 public:
  Impl(detail::ResolvedConfig config, detail::DatasetIndex index, Clock::time_point created);
  ~Impl();

  std::optional<Batch> next();
  void set_epoch(std::int64_t epoch);
  LoaderState state() const;
  Stats stats() const;
  void resize_workers(int n);

  std::int64_t batches_per_epoch() const { return config_.batches_per_epoch; }
  std::int64_t dataset_size() const { return config_.plan.samples; }
  int rank() const { return config_.plan.rank; }
  int world() const { return config_.plan.world; }
  const Pipeline& pipeline() const { return config_.pipeline; }

 private:
  enum class Role { kIdle, kActive, kRetiring };

  // ---- construction (loader_setup.cpp)
  void count_rejected(const detail::DatasetIndex& index);
  void lay_out_arena(const detail::DatasetIndex& index);
  void set_up_staging();
  void start_threads();

  // ---- the consumer (loader.cpp)
  std::optional<Batch> next_unflushed();
  Batch deliver(int slot, Clock::time_point entered) REQUIRES(core_->mutex);
  void fill_inline() REQUIRES(core_->mutex);
  // The consumer holds every slot: add one, or throw when the memory budget allows none.
  void grow_for_consumer() REQUIRES(core_->mutex);
  void complete(const detail::Task& task, const detail::Completion& done)
      REQUIRES(core_->mutex);
  std::string describe_sample(std::int64_t sample) const;
  void rethrow_if_failed() const REQUIRES(core_->mutex);

  // ---- the supervisor thread (supervisor.cpp)
  void supervise(std::promise<void>& started) EXCLUDES(core_->mutex);
  void start_workers() EXCLUDES(core_->mutex);
  void supervise_loop() EXCLUDES(core_->mutex);
  void dispatch() REQUIRES(core_->mutex);
  void drain_completions(int worker) REQUIRES(core_->mutex);
  // A worker's pidfd became readable. True: start a replacement.
  bool handle_exit(int worker) REQUIRES(core_->mutex);
  // Whether worker `worker` may be restarted after dying before its handshake.
  bool within_startup_budget(int worker, const detail::WorkerExit& exit, bool timed_out)
      REQUIRES(core_->mutex);
  int poll_timeout_ms() const REQUIRES(core_->mutex);
  void kill_stuck_workers() REQUIRES(core_->mutex);
  void kill_unready_workers() REQUIRES(core_->mutex);
  void count_starting() REQUIRES(core_->mutex);
  void spawn(int worker) EXCLUDES(core_->mutex);
  Clock::duration startup_timeout() const;

  // ---- the live pool (pool_sizing.cpp)
  void resize_pool(int n) REQUIRES(core_->mutex);
  void set_pool_size(int n) REQUIRES(core_->mutex);
  int chunk_for(int pool_size) const;
  void retire_drained() REQUIRES(core_->mutex);
  void retire_record(int i) REQUIRES(core_->mutex);
  void spawn_growth(const std::vector<int>& workers) EXCLUDES(core_->mutex);
  void tune() REQUIRES(core_->mutex);
  detail::TunerLimits tuner_limits() REQUIRES(core_->mutex);
  void restart_measurement() REQUIRES(core_->mutex);
  void decide(TuneTarget what, int from, int to, const std::string& reason)
      REQUIRES(core_->mutex);

  const detail::ResolvedConfig config_;
  const Options& options_ = config_.options;
  mutable detail::EventLog log_;
  std::shared_ptr<detail::LoaderCore> core_;
  std::unique_ptr<detail::DatasetView> dataset_;  // the arena's index, to name bad files

  detail::LoaderMetrics metrics_ GUARDED_BY(core_->mutex);
  std::string data_error_ GUARDED_BY(core_->mutex);  // sticky: OnError::kError stops the loader
  bool workers_auto_ GUARDED_BY(core_->mutex);       // resize_workers() turns it off
  std::unique_ptr<detail::SampleBlame> blame_ PT_GUARDED_BY(core_->mutex);

  // The pool. Worker record i is idle (no process, none wanted), active (receives work) or
  // retiring (finishes its in-flight chunks, then is told to stop). members_ lists the
  // non-idle records in ascending order; pool_size_ counts the active ones.
  int pool_size_ GUARDED_BY(core_->mutex) = 0;
  int requested_size_ GUARDED_BY(core_->mutex) = -1;  // from resize_workers()
  std::vector<Role> role_ GUARDED_BY(core_->mutex);
  std::vector<bool> stop_sent_ GUARDED_BY(core_->mutex);
  std::vector<int> members_ GUARDED_BY(core_->mutex);
  std::vector<int> to_grow_ GUARDED_BY(core_->mutex);  // made active, to be spawned
  int starting_ GUARDED_BY(core_->mutex) = 0;  // members not yet past their handshake
  std::size_t slots_wanted_ GUARDED_BY(core_->mutex) = 0;  // reserved outside the lock
  Clock::time_point next_tune_ GUARDED_BY(core_->mutex){};
  detail::PoolTuner tuner_ GUARDED_BY(core_->mutex);
  std::int64_t worker_bytes_ GUARDED_BY(core_->mutex) = -1;  // one worker's memory, measured once
  std::int64_t available_bytes_ GUARDED_BY(core_->mutex) = -1;  // free memory, re-read often
  Clock::time_point memory_checked_ GUARDED_BY(core_->mutex){};
  int limit_workers_ GUARDED_BY(core_->mutex) = 0;  // workers=auto's bound (memory included)
  std::string limit_reason_ GUARDED_BY(core_->mutex);

  // Per worker record. Written by the supervisor thread under the lock.
  std::vector<std::deque<detail::Task>> in_flight_ GUARDED_BY(core_->mutex);
  std::vector<Clock::time_point> front_since_ GUARDED_BY(core_->mutex);  // front task started
  std::vector<Clock::time_point> spawned_at_ GUARDED_BY(core_->mutex);   // for the handshake
  std::vector<bool> timed_out_ GUARDED_BY(core_->mutex);  // killed by us (task or handshake)
  std::vector<int> startup_deaths_ GUARDED_BY(core_->mutex);  // before the handshake, in a row

  // Supervisor thread only (and construction, before it starts).
  std::unique_ptr<detail::WorkerPool> pool_;
  std::unique_ptr<detail::ChunkRunner> inline_runner_;  // workers == 0: the consumer's thread
  int done_fd_ = -1;
  std::thread supervisor_;
  std::unique_ptr<detail::Stager> stager_;  // when core_->staging is set
};

}  // namespace stoke
