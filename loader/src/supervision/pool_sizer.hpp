#pragma once
// Automatic sizing of the pool (workers = kAuto, prefetch = kAuto): the tuner's inputs from the
// loader's measurements, its limits (the memory a worker costs against the memory available),
// its decisions, logged and kept for Stats, and the batch slots a new pool size or depth asks
// for. It decides; the Supervisor carries out a resize (PoolController's roles, spawning) and
// calls publish_slots() on its thread.
//
// Thread-safety: lives in the Supervisor. Each method is given the loader's core and runs under
// its mutex (annotated, checked by clang), except read_memory() and publish_slots(), which take
// it themselves around the slow parts they run without it (/proc reads, reserving arena
// memory). The sizer's own fields are touched only by those methods, so the mutex guards them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "api/config.hpp"
#include "common/time_source.hpp"
#include "consumer/event_log.hpp"
#include "consumer/loader_core.hpp"
#include "supervision/pool_controller.hpp"
#include "supervision/worker_processes.hpp"
#include "tuning/pool_tuner.hpp"

namespace stoke::detail {

// How often automatic sizing looks at its measurements (and so the supervisor's longest sleep).
inline constexpr double kTuneEveryS = 0.25;

class PoolSizer {
 public:
  // `pool` is the Supervisor's, read under the loader's mutex.
  PoolSizer(const ResolvedConfig& config, EventLog& log, const TimeSource& time,
            const PoolController& pool);

  bool tuning(const LoaderCore& core) const REQUIRES(core.mutex);
  bool workers_auto(const LoaderCore& core) const REQUIRES(core.mutex);
  // The pool's size is set by hand from now on (Loader::resize_workers).
  void stop_tuning_workers(const LoaderCore& core) REQUIRES(core.mutex);
  // workers=auto's bound at the last evaluation, and why.
  std::pair<int, std::string> limit(const LoaderCore& core) const REQUIRES(core.mutex);

  // Evaluates the measurements when due; a new pool size for the caller to carry out (its
  // slots are already asked for), or nullopt. A new prefetch depth is asked for here.
  std::optional<int> tune(LoaderCore& core) REQUIRES(core.mutex);
  // The pool became n workers: with the default depth, it wants two slots per worker plus two.
  void want_slots_for(const LoaderCore& core, int n) REQUIRES(core.mutex);
  // The pool changed: the measurements start again.
  void restart_measurement(LoaderCore& core) REQUIRES(core.mutex);

  // Re-reads the memory available (every few seconds) and one worker's, once, for workers=auto.
  void read_memory(LoaderCore& core, const WorkerProcesses& workers) EXCLUDES(core.mutex);
  // Slots asked for since the last call (0: none).
  std::size_t take_slots_wanted(const LoaderCore& core) REQUIRES(core.mutex);
  // Reserves and adds the slots asked for, outside the lock, and records the depth reached.
  void publish_slots(LoaderCore& core, std::size_t wanted) EXCLUDES(core.mutex);

 private:
  TunerLimits limits(const LoaderCore& core) REQUIRES(core.mutex);
  void decide(LoaderCore& core, TuneTarget what, int from, int to, const std::string& reason)
      REQUIRES(core.mutex);

  const ResolvedConfig& config_;
  EventLog& log_;
  const TimeSource& time_;
  const PoolController& pool_;

  // Guarded by the loader's mutex (see above).
  bool workers_auto_;
  PoolTuner tuner_;
  TimeSource::Clock::time_point next_tune_{};
  std::size_t slots_wanted_ = 0;  // reserved outside the lock
  // A resize whose prefetch depth follows it ("two slots per worker plus two"): recorded as a
  // decision once the slots are reserved.
  struct DepthChange {
    int from = 0;
    std::string reason;
  };
  std::optional<DepthChange> depth_follows_;
  std::int64_t worker_bytes_ = -1;     // one worker's memory, measured once
  std::int64_t available_bytes_ = -1;  // free memory, re-read often
  TimeSource::Clock::time_point memory_checked_{};
  int limit_workers_;  // workers=auto's bound (memory included)
  std::string limit_reason_;
};

}  // namespace stoke::detail
