// Automatic sizing: the tuner's measurements, limits and decisions, and the slots they ask for.

#include "supervision/pool_sizer.hpp"

#include <algorithm>
#include <cstdio>

#include "stoke/error.hpp"
#include "stoke/names.hpp"
#include "tuning/host_memory.hpp"

namespace stoke::detail {

namespace {

// Automatic sizing measures at least this many batches and this long after a change (a new
// worker needs a moment to start) before it decides again.
constexpr int kTuneMinBatches = 10;
constexpr double kTuneSettleS = 0.5;
constexpr std::int64_t kMinWorkerBytes = std::int64_t{16} << 20;  // per worker, when unmeasured
constexpr auto kMemoryEvery = std::chrono::seconds(2);  // how often free memory is re-read

}  // namespace

// (Clang's thread-safety analysis does not look inside constructors: no other thread exists.)
PoolSizer::PoolSizer(const ResolvedConfig& config, EventLog& log, const TimeSource& time,
                     const PoolController& pool)
    : config_(config),
      log_(log),
      time_(time),
      pool_(pool),
      workers_auto_(config.workers_auto),
      limit_workers_(config.max_workers),
      limit_reason_(config.max_workers_reason) {}

bool PoolSizer::tuning(const LoaderCore&) const {
  return workers_auto_ || config_.prefetch_auto;
}

bool PoolSizer::workers_auto(const LoaderCore&) const {
  return workers_auto_;
}

void PoolSizer::stop_tuning_workers(const LoaderCore&) {
  workers_auto_ = false;
}

std::pair<int, std::string> PoolSizer::limit(const LoaderCore&) const {
  return {limit_workers_, limit_reason_};
}

std::size_t PoolSizer::take_slots_wanted(const LoaderCore&) {
  return std::exchange(slots_wanted_, 0);
}

void PoolSizer::want_slots_for(const LoaderCore&, int n) {
  if (config_.options.prefetch <= 0)
    slots_wanted_ = std::max(slots_wanted_, 2 * static_cast<std::size_t>(n) + 2);
}

void PoolSizer::restart_measurement(LoaderCore& core) {
  core.metrics.restart_measurement(time_.now());
}

void PoolSizer::decide(LoaderCore& core, TuneTarget what, int from, int to,
                       const std::string& reason) {
  TuneDecision d;
  d.at_s = seconds(time_.now() - core.metrics.created());
  d.what = what;
  d.from = from;
  d.to = to;
  d.reason = reason;
  char at[32];
  std::snprintf(at, sizeof at, "%.1f", d.at_s);
  log_.post("autotune at " + std::string(at) + " s: " + tune_target_name(what) + " " +
            std::to_string(from) + " -> " + std::to_string(to) + ": " + reason);
  core.metrics.decided(std::move(d));
}

// One worker's private memory (measured once, on the first worker) and the memory available
// (re-read every few seconds), for workers=auto's bound. /proc reads take a while: they run
// without the lock, and their results are published under it.
void PoolSizer::read_memory(LoaderCore& core, const WorkerProcesses& workers) {
  pid_t measure = -1;
  bool due = false;
  {
    MutexLock lock(core.mutex);
    if (!workers_auto_) return;
    const std::vector<int>& members = pool_.members();
    if (worker_bytes_ < 0 && !members.empty() && workers.running(members.front()))
      measure = workers.pid(members.front());
    due = time_.now() >= memory_checked_ + kMemoryEvery;
  }
  const std::int64_t worker_bytes = measure > 0 ? anon_rss_bytes(measure) : -1;
  const std::int64_t available = due ? available_memory_bytes() : -1;
  MutexLock lock(core.mutex);
  if (measure > 0 && worker_bytes_ < 0) worker_bytes_ = worker_bytes;
  if (due) {
    available_bytes_ = available;
    memory_checked_ = time_.now();
  }
}

void PoolSizer::publish_slots(LoaderCore& core, std::size_t wanted) {
  std::string failure;
  try {
    core.add_slots(wanted);
  } catch (const Error& e) {
    failure = e.what();
  }
  MutexLock lock(core.mutex);
  const int now = static_cast<int>(core.slots.size());
  if (!failure.empty())
    log_.post("kept " + std::to_string(now) + " batch slots instead of " + std::to_string(wanted) +
              ": " + failure);
  if (depth_follows_ && now != depth_follows_->from)
    decide(core, TuneTarget::kPrefetch, depth_follows_->from, now, depth_follows_->reason);
  depth_follows_.reset();
}

TunerLimits PoolSizer::limits(const LoaderCore& core) {
  const ArenaHeader& h = core.view.header();
  TunerLimits l;
  l.tune_workers = workers_auto_;
  l.tune_prefetch = config_.prefetch_auto;
  l.target = config_.options.stall_target;
  l.max_workers = config_.max_workers;
  l.max_workers_reason = config_.max_workers_reason;
  l.max_slots = static_cast<int>(h.slot_capacity);
  if (!workers_auto_) return l;
  // Memory (read by read_memory()): each worker holds its own decode buffers and brings two
  // more batch slots; grow only into half of what is free.
  const std::int64_t per_worker =
      std::max(worker_bytes_, kMinWorkerBytes) + 2 * static_cast<std::int64_t>(h.slot_stride);
  if (available_bytes_ >= 0) {
    const auto more = static_cast<int>(available_bytes_ / 2 / per_worker);
    if (pool_.size() + more < l.max_workers) {
      l.max_workers = std::max(1, pool_.size() + more);
      l.max_workers_reason = "memory: " + std::to_string(available_bytes_ >> 20) +
                             " MiB available, about " + std::to_string(per_worker >> 20) +
                             " MiB per worker";
    }
  }
  limit_workers_ = l.max_workers;
  limit_reason_ = l.max_workers_reason;
  return l;
}

std::optional<int> PoolSizer::tune(LoaderCore& core) {
  if (!tuning(core)) return std::nullopt;
  const TimeSource::Clock::time_point now = time_.now();
  if (now < next_tune_) return std::nullopt;
  next_tune_ = now + from_seconds(kTuneEveryS);
  const StallMonitor::Totals w = core.metrics.window();
  const double since = core.metrics.seconds_since_change(now);
  if (w.batches < std::min(config_.options.monitor_window, kTuneMinBatches) || since < kTuneSettleS)
    return std::nullopt;
  TunerInput in;
  in.now_s = seconds(now - core.metrics.created());
  in.batches = w.batches;
  in.wait_fraction = w.wait_fraction();
  in.demand_per_s = w.demand_per_s();
  in.delivered_per_s = w.delivered_per_s();
  in.busy_fraction = core.metrics.busy_fraction(now, pool_.size());
  in.worker_per_s = core.metrics.worker_rate();
  in.workers = pool_.size();
  in.slots = static_cast<int>(core.slots.size());
  const std::optional<TunerChange> change = tuner_.evaluate(in, limits(core));
  if (!change) return std::nullopt;
  decide(core, change->what, change->from, change->to, change->reason);
  if (change->what == TuneTarget::kPrefetch) {
    slots_wanted_ = std::max(slots_wanted_, static_cast<std::size_t>(change->to));
    restart_measurement(core);
    return std::nullopt;
  }
  want_slots_for(core, change->to);
  // Recorded once the slots exist (publish_slots), with the depth reached.
  if (slots_wanted_ > static_cast<std::size_t>(in.slots))
    depth_follows_ = DepthChange{in.slots, "two slots per worker plus two keep " +
                                               std::to_string(change->to) + " workers busy"};
  return change->to;
}

}  // namespace stoke::detail
