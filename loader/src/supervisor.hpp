#pragma once
// The supervisor: one long-lived thread that starts the worker processes, hands them chunks,
// collects their completions, replaces the ones that die or hang (redoing their work, blaming
// the sample they died on) and sizes the pool, by hand (request_size) or automatically
// (workers/prefetch = kAuto, through the pure PoolTuner).
//
// Thread-safety: request_size() and view() from any thread; everything else runs on the
// supervisor thread. What the supervisor shares with the consumer (the slot table, metrics, the
// loader's stop and error) lives in LoaderCore under its mutex, which also guards the pool state
// below (annotated, checked by clang). `workers_` is touched by the supervisor thread alone:
// workers are spawned and reaped only there, because PR_SET_PDEATHSIG follows the spawning
// thread.
//
// Files: supervisor.cpp (the loop, dispatch, deaths, timeouts), worker_startup.cpp (handshakes
// and the start-up budget), pool_sizing.cpp (carrying out PoolController's resizes and
// retirements, the tuner's inputs and decisions).

#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config.hpp"
#include "event_log.hpp"
#include "loader_core.hpp"
#include "pool_controller.hpp"
#include "sample_blame.hpp"
#include "tuning/pool_tuner.hpp"
#include "worker_processes.hpp"

namespace stoke::detail {

// How often automatic sizing looks at its measurements (and so the supervisor's longest sleep).
inline constexpr double kTuneEveryS = 0.25;

class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;

  // What Stats reports about the pool.
  struct PoolView {
    int workers = 0;   // active records, starting ones included
    int starting = 0;  // of those, not yet past their handshake
    bool workers_auto = false;
    int limit_workers = 0;  // workers=auto's bound at the last evaluation, and why
    std::string limit_reason;
  };

  // `done_fd`: the eventfd workers signal after a completion or their handshake.
  Supervisor(std::shared_ptr<LoaderCore> core, const ResolvedConfig& config, EventLog& log,
             std::unique_ptr<WorkerProcesses> workers, int done_fd);
  // REQUIRES: core->stop was set and the core woken (or start() threw).
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts the thread and waits until the first pool has finished its handshake. Throws Error
  // when it cannot (the thread has ended then).
  void start();
  // Resize the pool to n workers (1..capacity); turns automatic sizing off.
  void request_size(int n) EXCLUDES(core_->mutex);
  PoolView view() const EXCLUDES(core_->mutex);

 private:
  void run(std::promise<void>& started) EXCLUDES(core_->mutex);
  void loop() EXCLUDES(core_->mutex);
  void dispatch() REQUIRES(core_->mutex);
  void drain_completions(int worker) REQUIRES(core_->mutex);
  // A worker's pidfd became readable. True: start a replacement.
  bool handle_exit(int worker) REQUIRES(core_->mutex);
  int poll_timeout_ms() const REQUIRES(core_->mutex);
  void kill_stuck_workers() REQUIRES(core_->mutex);

  // worker_startup.cpp
  void start_workers() EXCLUDES(core_->mutex);
  void spawn(int worker) EXCLUDES(core_->mutex);
  Clock::duration startup_timeout() const;
  void kill_unready_workers() REQUIRES(core_->mutex);
  void count_starting() REQUIRES(core_->mutex);
  // Whether worker `worker` may be restarted after dying before its handshake; else fails.
  bool within_startup_budget(int worker, const WorkerExit& exit, bool timed_out)
      REQUIRES(core_->mutex);

  // pool_sizing.cpp
  void resize_pool(int n) REQUIRES(core_->mutex);
  void pool_resized() REQUIRES(core_->mutex);
  void retire_drained() REQUIRES(core_->mutex);
  void retire_record(int i) REQUIRES(core_->mutex);
  void spawn_growth(const std::vector<int>& workers) EXCLUDES(core_->mutex);
  void tune() REQUIRES(core_->mutex);
  TunerLimits tuner_limits() REQUIRES(core_->mutex);
  void read_memory() EXCLUDES(core_->mutex);
  // Reserves the slots asked for (slots_wanted_) outside the lock, then publishes them.
  void publish_slots(std::size_t wanted) EXCLUDES(core_->mutex);
  void restart_measurement() REQUIRES(core_->mutex);
  void decide(TuneTarget what, int from, int to, const std::string& reason) REQUIRES(core_->mutex);

  const std::shared_ptr<LoaderCore> core_;
  const ResolvedConfig& config_;
  const Options& options_;
  EventLog& log_;
  const int done_fd_;
  std::unique_ptr<WorkerProcesses> workers_;  // supervisor thread only
  std::thread thread_;

  SampleBlame blame_ GUARDED_BY(core_->mutex);
  bool workers_auto_ GUARDED_BY(core_->mutex);  // request_size() turns it off

  // The pool: which records are idle, active or retiring (the rules live in PoolController).
  PoolController pool_ GUARDED_BY(core_->mutex);
  int requested_size_ GUARDED_BY(core_->mutex) = -1;       // from request_size()
  int starting_ GUARDED_BY(core_->mutex) = 0;              // members not yet past their handshake
  std::size_t slots_wanted_ GUARDED_BY(core_->mutex) = 0;  // reserved outside the lock
  // A resize whose prefetch depth follows it ("two slots per worker plus two"): recorded as a
  // decision once the slots are reserved.
  struct DepthChange {
    int from = 0;
    std::string reason;
  };
  std::optional<DepthChange> depth_follows_ GUARDED_BY(core_->mutex);
  Clock::time_point next_tune_ GUARDED_BY(core_->mutex){};
  PoolTuner tuner_ GUARDED_BY(core_->mutex);
  std::int64_t worker_bytes_ GUARDED_BY(core_->mutex) = -1;  // one worker's memory, measured once
  std::int64_t available_bytes_ GUARDED_BY(core_->mutex) = -1;  // free memory, re-read often
  Clock::time_point memory_checked_ GUARDED_BY(core_->mutex){};
  int limit_workers_ GUARDED_BY(core_->mutex) = 0;  // workers=auto's bound (memory included)
  std::string limit_reason_ GUARDED_BY(core_->mutex);

  // Per worker record.
  std::vector<std::deque<Task>> in_flight_ GUARDED_BY(core_->mutex);
  std::vector<Clock::time_point> front_since_ GUARDED_BY(core_->mutex);  // front task started
  std::vector<Clock::time_point> spawned_at_ GUARDED_BY(core_->mutex);   // for the handshake
  std::vector<bool> timed_out_ GUARDED_BY(core_->mutex);      // killed by us (task or handshake)
  std::vector<int> startup_deaths_ GUARDED_BY(core_->mutex);  // before the handshake, in a row
};

}  // namespace stoke::detail
