#pragma once
// The supervisor: one long-lived thread that starts the worker processes, hands them chunks,
// collects their completions, replaces the ones that die or hang (redoing their work, blaming
// the sample they died on) and carries out the pool's resizes, by hand (request_size) or
// decided by PoolSizer (workers/prefetch = kAuto).
//
// Thread-safety: request_size() and view() from any thread; everything else runs on the
// supervisor thread. What the supervisor shares with the consumer (the slot table, metrics, the
// loader's stop and error) lives in LoaderCore under its mutex, which also guards the pool state
// below (annotated, checked by clang). `workers_` is touched by the supervisor thread alone:
// workers are spawned and reaped only there, because PR_SET_PDEATHSIG follows the spawning
// thread. Every deadline reads `time_` (LoaderEnvironment::time), whose jumps wake the loop.
//
// Files: supervisor.cpp (the loop, dispatch, deaths, timeouts, resizes), worker_startup.cpp
// (spawning, the first pool's handshake). What a death means (its log line, its blame, whether
// it fails the loader, the start-up budget) is WorkerExits' (worker_exits.hpp).

#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/config.hpp"
#include "common/time_source.hpp"
#include "consumer/event_log.hpp"
#include "consumer/loader_core.hpp"
#include "supervision/pool_controller.hpp"
#include "supervision/pool_sizer.hpp"
#include "supervision/worker_exits.hpp"
#include "supervision/worker_ledger.hpp"
#include "supervision/worker_processes.hpp"

namespace stoke::detail {

inline constexpr const char* kPollFailure = "the loader's supervisor could not poll its workers";

class Supervisor {
 public:
  using Clock = TimeSource::Clock;

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
             std::unique_ptr<WorkerProcesses> workers, int done_fd, const TimeSource& time);
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
  void kill_overdue_workers() REQUIRES(core_->mutex);
  bool ready(int worker) const;  // past its handshake
  // The user's log callback may take the loader's lock (and a throwing one fails the loader).
  void flush_log() EXCLUDES(core_->mutex);

  // Carrying out resizes (PoolController's roles; PoolSizer's or request_size()'s decisions).
  void resize_pool(int n) REQUIRES(core_->mutex);
  void pool_resized() REQUIRES(core_->mutex);
  void retire_drained() REQUIRES(core_->mutex);
  void retire_record(int i) REQUIRES(core_->mutex);
  void spawn_growth(const std::vector<int>& workers) EXCLUDES(core_->mutex);

  // worker_startup.cpp
  void start_workers() EXCLUDES(core_->mutex);
  void spawn(int worker) EXCLUDES(core_->mutex);
  void count_starting() REQUIRES(core_->mutex);

  const std::shared_ptr<LoaderCore> core_;
  const ResolvedConfig& config_;
  const Options& options_;
  EventLog& log_;
  const int done_fd_;
  const TimeSource& time_;
  const TimeSource::Listener time_jumps_;     // wakes the loop
  std::unique_ptr<WorkerProcesses> workers_;  // supervisor thread only
  std::thread thread_;

  WorkerExits exits_ GUARDED_BY(core_->mutex);  // what a death or an overrun means
  // The pool: which records are idle, active or retiring (the rules live in PoolController).
  PoolController pool_ GUARDED_BY(core_->mutex);
  PoolSizer sizer_;                                   // its methods require core_->mutex or take it
  int requested_size_ GUARDED_BY(core_->mutex) = -1;  // from request_size()
  int starting_ GUARDED_BY(core_->mutex) = 0;         // members not yet past their handshake
  WorkerLedger ledger_ GUARDED_BY(core_->mutex);      // each record's chunks and deadlines
};

}  // namespace stoke::detail
