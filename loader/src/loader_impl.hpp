#pragma once
// The loader's implementation object, shared by loader.cpp (construction, slots, the consumer,
// the supervisor) and pool_sizing.cpp (resizing the worker pool and tuning it automatically).
//
// Thread-safety: see stoke/loader.hpp. Members are guarded as their comments say: most by
// core_->mutex, some touched only by the supervisor thread.

#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "worker/chunk_runner.hpp"
#include "data/dataset_index.hpp"
#include "device/device_backend.hpp"
#include "data/epoch_plan.hpp"
#include "tuning/gpu_activity.hpp"
#include "loader_core.hpp"
#include "tuning/pool_tuner.hpp"
#include "tuning/stall_monitor.hpp"
#include "stoke/loader.hpp"
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
  Impl(Options options, detail::DatasetIndex index, Clock::time_point created);
  ~Impl();

  std::optional<Batch> next();
  void set_epoch(std::int64_t epoch);
  LoaderState state() const;
  Stats stats() const;
  void resize_workers(int n);

  std::int64_t batches_per_epoch() const { return bpe_; }
  std::int64_t dataset_size() const { return plan_.config().samples; }
  int rank() const { return plan_.config().rank; }
  int world() const { return plan_.config().world; }
  const Pipeline& pipeline() const { return pipeline_; }

 private:
  static Pipeline choose_pipeline(const Options& o, const detail::DatasetIndex& index);
  static detail::PlanConfig plan_config(const Options& o, std::int64_t samples);
  void lay_out_arena(const detail::DatasetIndex& index);
  void set_up_staging();
  void start_stager();
  void stage_loop();

  // Everything named *_locked runs with core_->mutex held.
  int free_slot_locked() const;
  int slot_of_locked(std::int64_t seq) const;
  void assign_locked(int slot, std::int64_t seq);
  void assign_free_slots_locked();
  bool grow_locked();
  void add_slots_locked(std::size_t n);
  void reposition_locked(std::int64_t epoch, std::int64_t batch);
  void complete_locked(const detail::Task& task, const detail::Completion& done);
  void fill_inline(std::unique_lock<std::mutex>& lock);
  Batch deliver_locked(int slot);
  std::string describe_sample(std::int64_t sample) const;

  // Supervisor thread.
  void supervise(std::promise<void>& started);
  void start_workers();
  void dispatch_locked();
  void drain_completions_locked(int worker);
  bool handle_exit_locked(int worker);  // true: start a replacement
  int poll_timeout_ms() const;
  void kill_stuck_workers_locked();
  bool blame_sample_locked(std::int64_t sample, const detail::WorkerExit& exit, bool timed_out);
  void retire_record_locked(int i);
  void resize_pool_locked(int n);
  void set_pool_size_locked(int n);
  int chunk_for(int pool_size) const;
  void try_add_slots_locked(std::size_t n);
  // The workers since the pool last changed: producing time / (workers x elapsed), and one
  // worker's samples per busy second (0 when not yet measured).
  double busy_fraction_locked(Clock::time_point now) const;
  double worker_rate_locked() const;
  void retire_drained_locked();
  void tune_locked();
  detail::TunerLimits tuner_limits_locked();
  void restart_measurement_locked();
  void decide_locked(const std::string& what, int from, int to, const std::string& reason);
  void spawn_growth(const std::vector<int>& workers);
  void log(const std::string& line) const;
  // The user's log callback never runs under the mutex (it may call stats() or drop a Batch):
  // lines are queued under the lock and emitted by flush_log() after it is released.
  void log_locked(std::string line) {
    log_queue_.push_back(std::move(line));
    log_pending_.store(true, std::memory_order_release);
  }
  void flush_log();
  std::optional<Batch> next_unflushed();
  void supervise_loop();
  void fail_locked(std::exception_ptr error);

  Options options_;
  Pipeline pipeline_;
  detail::EpochPlan plan_;
  const std::int64_t bpe_;  // batches per epoch
  bool workers_auto_;       // guarded by the mutex: resize_workers() turns it off
  const bool prefetch_auto_;
  const int capacity_;   // worker records in the arena (0: in-process)
  const int cores_;      // available to this process
  int max_workers_ = 0;  // workers=auto's bound, and why
  std::string max_workers_reason_;
  int chunk_ = 1;  // guarded by the mutex
  std::size_t slot_capacity_ = 0;
  std::shared_ptr<detail::LoaderCore> core_;
  std::unique_ptr<detail::DatasetView> dataset_;  // the arena's index, to name bad files
  const Clock::time_point created_;

  // Guarded by core_->mutex.
  std::int64_t epoch_ = 0;       // consumer position: the next batch is (epoch_, next_batch_)
  std::int64_t next_batch_ = 0;  // in [0, bpe_]; bpe_ means "epoch exhausted, say so next"
  std::int64_t assign_seq_ = 0;  // next batch sequence (epoch * bpe_ + index) to give a slot
  std::uint64_t next_task_seq_ = 1;
  std::deque<detail::Task> pending_;  // tasks not yet handed to a worker
  std::vector<std::string> log_queue_;
  std::mutex log_call_mutex_;  // serializes Options::log calls (taken without core_->mutex)
  std::atomic<bool> log_pending_{false};  // lets flush_log skip the lock when nothing is queued
  std::string data_error_;                // sticky: OnError::kError stops the loader
  std::exception_ptr fatal_;              // sticky: the supervisor could not keep workers alive
  bool stop_ = false;
  Stats stats_;
  bool delivered_any_ = false;
  Clock::time_point first_delivery_{}, last_delivery_{};
  // The pool. Worker record i is idle (no process, none wanted), active (receives work) or
  // retiring (finishes its in-flight chunks, then is told to stop). members_ lists the
  // non-idle records in ascending order; pool_size_ counts the active ones.
  enum class Role { kIdle, kActive, kRetiring };
  int pool_size_ = 0;
  int requested_size_ = -1;  // from resize_workers(), applied by the supervisor
  std::vector<Role> role_;
  std::vector<bool> stop_sent_;
  std::vector<int> members_;
  std::vector<int> to_grow_;  // records made active that the supervisor must spawn
  // Measurements since the pool last changed size: the stall monitor's window (consumer side)
  // and the workers' producing time and output.
  detail::StallMonitor monitor_;
  double busy_s_ = 0;
  std::int64_t produced_ = 0;
  Clock::time_point pool_changed_{};
  Clock::time_point next_tune_{};
  detail::PoolTuner tuner_;
  std::int64_t worker_bytes_ = -1;     // one worker's private memory, measured once
  std::int64_t available_bytes_ = -1;  // free memory, re-read every few seconds
  Clock::time_point memory_checked_{};
  int limit_workers_ = 0;  // workers=auto's bound at the last evaluation (memory included)
  std::string limit_reason_;

  // Supervisor thread only.
  std::unique_ptr<detail::ChunkRunner>
      inline_runner_;  // workers == 0 (used by the consumer thread)
  std::unique_ptr<detail::WorkerPool> pool_;
  std::vector<std::deque<detail::Task>>
      in_flight_;                               // guarded by the mutex too (read by reposition)
  std::map<std::int64_t, int> sample_deaths_;   // dataset index -> blame (a crash counts 4,
                                                // an external SIGKILL 1; 12 is too many)
  std::vector<Clock::time_point> front_since_;  // per worker: when its front task started
  std::vector<bool> timed_out_;                 // per worker: killed for exceeding the timeout
  std::vector<int> deaths_without_progress_;    // per worker: deaths before the handshake, in a row
  int done_fd_ = -1;
  std::thread supervisor_;
  std::thread stager_;                                       // when core_->staging is set
  std::unique_ptr<detail::GpuActivityMonitor> gpu_monitor_;  // GPU devices only
};

}  // namespace stoke
