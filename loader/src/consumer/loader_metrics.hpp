#pragma once
// What the loader measures: the counters behind Stats, the stall monitor (consumer side) and the
// workers' producing time since the pool last changed (worker side).
//
// Thread-safety: none of its own; it lives in LoaderCore, guarded by the loader mutex.

#include <chrono>
#include <cstdint>
#include <memory>

#include "data/bad_input.hpp"
#include "ipc/arena_layout.hpp"
#include "stoke/stats.hpp"
#include "tuning/stall_monitor.hpp"

namespace stoke::detail {

class LoaderMetrics {
 public:
  using Clock = std::chrono::steady_clock;
  LoaderMetrics(int monitor_window, Clock::time_point created);

  Clock::time_point created() const { return created_; }

  void skipped(BadInput reason);
  void worker_restarted() { stats_.worker_restarts += 1; }
  void decided(TuneDecision d) { stats_.decisions.push_back(std::move(d)); }
  // A worker finished a chunk of `samples` with `done`'s timings.
  void chunk_done(const Completion& done, int samples);
  // The consumer entered next() at `entered` and received a batch of `samples` (`padded` of
  // them repeats) at `now`.
  void delivered(Clock::time_point entered, Clock::time_point now, int samples, int padded);
  // The consumer's next gap is not batch work (an epoch ended, the position moved).
  void interrupt() { monitor_.interrupt(); }
  // The pool changed: the window and the workers' measurements start afresh.
  void restart_measurement(Clock::time_point now);

  StallMonitor::Totals window() const { return monitor_.window(); }
  double seconds_since_change(Clock::time_point now) const;
  // The workers since the pool last changed: producing time / (workers x elapsed), and one
  // worker's samples per busy second (0 when not yet measured).
  double busy_fraction(Clock::time_point now, int workers) const;
  double worker_rate() const;

  // The counters and every derived rate; the caller adds what it owns (pool, slots, staging,
  // GPUs) and the verdict.
  Stats snapshot(Clock::time_point now, int workers, int batch) const;

 private:
  const Clock::time_point created_;
  Stats stats_;  // counters only: the derived fields are computed by snapshot()
  StallMonitor monitor_;
  bool delivered_any_ = false;
  Clock::time_point first_delivery_{}, last_delivery_{};
  double busy_s_ = 0;  // worker producing time since pool_changed_
  std::int64_t produced_ = 0;
  Clock::time_point pool_changed_;
};

}  // namespace stoke::detail
