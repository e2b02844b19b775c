#pragma once
// The data-stall monitor: per-batch consumer timings, their moving window, and the verdict.
//
// Thread-safety: none; the loader calls StallMonitor under its mutex. verdict() is pure.
//
// For each batch the consumer receives, `wait` is the time it spent inside next() and `compute`
// the time between the previous next() returning and this call: what the consumer did with the
// batch before (training step, metrics, anything). A gap that is not the consumer working on
// batches (the first batch, the pause across an epoch end or set_epoch()) is not measured.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "stoke/stats.hpp"

namespace stoke::detail {

// A steady-clock duration in seconds, and back.
inline double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
inline std::chrono::steady_clock::duration from_seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

class StallMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  // REQUIRES: window >= 1 (batches).
  explicit StallMonitor(int window) : window_(window) {}

  // The consumer entered next() at `entered` and got a batch of `samples` at `returned`.
  void delivered(Clock::time_point entered, Clock::time_point returned, int samples);
  // The consumer's next gap is not batch work (an epoch ended, the position moved).
  void interrupt() { last_return_.reset(); }
  // Starts the window afresh (the pool changed size: old measurements describe another pool).
  void restart_window() {
    window_entries_.clear();
    sums_ = Totals{};
  }

  struct Totals {
    int batches = 0;
    std::int64_t samples = 0;
    double wait_s = 0, compute_s = 0;
    void add(double wait, double compute, int n, int sign);
    double wait_fraction() const;
    double delivered_per_s() const;  // samples / (wait + compute)
    double demand_per_s() const;     // samples / compute; 0 when compute is 0 (unbounded)
  };
  Totals window() const { return sums_; }
  double compute_s() const { return compute_s_; }  // whole run

 private:
  struct Entry {
    double wait_s, compute_s;
    int samples;
  };
  const int window_;
  std::deque<Entry> window_entries_;
  Totals sums_;  // over window_entries_, kept as they come and go
  std::optional<Clock::time_point> last_return_;
  double compute_s_ = 0;
};

// What the verdict needs beyond the Stats snapshot.
struct VerdictContext {
  int cores = 1;         // available to this process
  double target = 0.02;  // stall fraction above which the consumer is input-bound
  int max_workers = 0;   // workers=auto's bound now (0: not auto)
  std::string limit_reason =
      "";  // what sets it: "2 cores available", "max_workers 4", "memory: ..."
};

// Workers busy less than this share of the time while the consumer waits, with enough of them
// on average, mean a consumer that takes batches in bursts: deeper prefetch is the cure.
inline constexpr double kBurstyBusy = 0.8;

// One line a person can act on, from the window figures of `s` (window_*, demand, worker
// rate and busy fraction, workers, gpus):
//   "input-bound: the consumer waited 37% of the time over the last 50 batches; 2 workers
//    delivered 1,900 img/s, the consumer took up to 3,000 img/s; try 4 workers"
//   "not input-bound: the consumer waited 0.4% of the time over the last 50 batches; ..."
std::string stall_verdict(const Stats& s, const VerdictContext& c);

// The workers needed to deliver `demand` samples/s when one worker delivers `per_worker`
// while busy, with 10% headroom; 0 when either is unknown.
int workers_needed(double demand, double per_worker);

// "37%", or "0.4%" below 10%.
std::string percent(double fraction);

}  // namespace stoke::detail
