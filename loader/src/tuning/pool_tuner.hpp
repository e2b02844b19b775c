#pragma once
// Automatic sizing of the worker pool and the prefetch depth (Options::workers/prefetch = kAuto).
//
// Thread-safety: none; the loader calls it under its mutex, from the supervisor thread.
//
// The tuner is a pure decision rule over measurements the loader takes since the pool last
// changed: it sees the consumer's wait fraction and demand (from the stall monitor) and the
// workers' busy fraction and per-worker rate (from their completions). It aims at the fewest
// workers that keep the wait under the target:
//  - waiting, and the demand is above 95% of what the pool delivers while busy (workers x one
//    worker's rate per busy second), or unbounded: grow to the count the demand needs
//    (ceil(demand * 1.1 / one worker's rate), at least one more), within the limit;
//  - waiting although the pool keeps up on average and the workers sit idle part of the time
//    (busy under 80%): the consumer takes batches in bursts faster than the slots hold them:
//    add prefetch slots, within the memory budget;
//  - wait under half the target, and one worker fewer would still deliver 1.2x the demand:
//    retire one worker. A count that had to grow back after a retirement is not tried again for
//    a while (30 s, doubling each time), so the pool does not oscillate.

#include <map>
#include <optional>
#include <string>

#include "stoke/stats.hpp"

namespace stoke::detail {

struct TunerInput {
  double now_s = 0;            // since the loader started
  int batches = 0;             // consumer batches measured since the pool last changed
  double wait_fraction = 0;    // the consumer's, over those batches
  double demand_per_s = 0;     // samples/s the consumer could take; 0 = unbounded
  double delivered_per_s = 0;  // samples/s it got
  double busy_fraction = 0;    // the workers' producing time / (workers x elapsed)
  double worker_per_s = 0;     // one worker's samples per busy second
  int workers = 1;
  int slots = 1;
};

struct TunerLimits {
  bool tune_workers = false;
  bool tune_prefetch = false;
  double target = 0.02;
  int max_workers = 1;
  std::string max_workers_reason;  // "2 cores available", "max_workers 4", "memory: ..."
  int max_slots = 1;
};

struct TunerChange {
  TuneTarget what = TuneTarget::kWorkers;
  int from = 0, to = 0;
  std::string reason;
};

class PoolTuner {
 public:
  // A change to make now, or nullopt to keep measuring.
  std::optional<TunerChange> evaluate(const TunerInput& in, const TunerLimits& limits);

 private:
  std::optional<TunerChange> grow(const TunerInput& in, const TunerLimits& limits,
                                  const std::string& why);
  std::optional<TunerChange> shrink(const TunerInput& in, const TunerLimits& limits);

  int last_retired_to_ = 0;              // the count the last retirement went down to
  std::map<int, double> blocked_until_;  // count -> time before which it is not retried
  std::map<int, double> backoff_s_;      // count -> its next blocking period
};

}  // namespace stoke::detail
