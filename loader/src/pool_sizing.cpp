// Resizing the worker pool, by hand (Loader::resize_workers) or automatically (workers=kAuto,
// prefetch=kAuto): carrying out PoolController's resizes and retirements, and the tuner's
// measurements and decisions.

#include <algorithm>
#include <cstdio>

#include "stoke/error.hpp"
#include "stoke/names.hpp"
#include "supervisor.hpp"
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

void Supervisor::request_size(int n) {
  {
    MutexLock lock(core_->mutex);
    if (core_->fatal) std::rethrow_exception(core_->fatal);
    requested_size_ = n;
    workers_auto_ = false;
  }
  core_->wake();
}

Supervisor::PoolView Supervisor::view() const {
  MutexLock lock(core_->mutex);
  return {pool_.size(), starting_, workers_auto_, limit_workers_, limit_reason_};
}

// ---- pool size -----------------------------------------------------------------------------

// PoolController decides which records become active or retire; the supervisor carries it out:
// the chunk size, the measurements, slots for the new workers (spawned by the loop).
void Supervisor::resize_pool(int n) {
  n = pool_.resize(n);
  pool_resized();
  if (options_.prefetch <= 0)
    slots_wanted_ = std::max(slots_wanted_, 2 * static_cast<std::size_t>(n) + 2);
}

// What follows from the pool's size: the chunk size (one chunk per worker per batch, unless
// fixed by Options::chunk) and a fresh start for the measurements.
void Supervisor::pool_resized() {
  core_->slots.set_chunk(chunk_for(options_, pool_.size()));
  restart_measurement();
}

// Tells each retiring worker whose chunks are all done to stop; its exit is then a retirement.
// A record queued for spawning but not yet started simply goes back to idle.
void Supervisor::retire_drained() {
  for (int i : pool_.retiring_not_stopped()) {
    if (!in_flight_[i].empty()) continue;
    if (!workers_->running(i)) {
      retire_record(i);
      continue;
    }
    WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(i));
    Task stop;
    stop.kind = Task::kStop;
    if (r.tasks.push(stop)) {
      r.tasks_posted.post();
      pool_.stop_sent(i);
    }
  }
}

// Record i has no process any more (it retired, died while retiring, or was never started).
void Supervisor::retire_record(int i) {
  pool_.retired(i);
  startup_deaths_[i] = 0;  // a later occupant's start-up is a new run
}

// Starts the workers a growth asked for. One that cannot start (out of processes or
// descriptors) shrinks the pool back instead of stopping the loader.
void Supervisor::spawn_growth(const std::vector<int>& workers) {
  for (int i : workers) {
    try {
      spawn(i);
    } catch (const Error& e) {
      MutexLock lock(core_->mutex);
      pool_.spawn_failed(i);
      startup_deaths_[i] = 0;
      pool_resized();
      log_.post(std::string("could not add a worker (") + e.what() + "); the pool stays at " +
                std::to_string(pool_.size()));
    }
  }
  log_.flush();
}

void Supervisor::restart_measurement() {
  core_->metrics.restart_measurement(Clock::now());
}

void Supervisor::decide(TuneTarget what, int from, int to, const std::string& reason) {
  TuneDecision d;
  d.at_s = seconds(Clock::now() - core_->metrics.created());
  d.what = what;
  d.from = from;
  d.to = to;
  d.reason = reason;
  char at[32];
  std::snprintf(at, sizeof at, "%.1f", d.at_s);
  log_.post("autotune at " + std::string(at) + " s: " + tune_target_name(what) + " " +
            std::to_string(from) + " -> " + std::to_string(to) + ": " + reason);
  core_->metrics.decided(std::move(d));
}

// One worker's private memory (measured once, on the first worker) and the memory available
// (re-read every few seconds), for workers=auto's bound. /proc reads take a while: they run
// without the lock, and their results are published under it.
void Supervisor::read_memory() {
  pid_t measure = -1;
  bool due = false;
  {
    MutexLock lock(core_->mutex);
    if (!workers_auto_) return;
    const std::vector<int>& members = pool_.members();
    if (worker_bytes_ < 0 && !members.empty() && workers_->running(members.front()))
      measure = workers_->pid(members.front());
    due = Clock::now() >= memory_checked_ + kMemoryEvery;
  }
  const std::int64_t worker_bytes = measure > 0 ? anon_rss_bytes(measure) : -1;
  const std::int64_t available = due ? available_memory_bytes() : -1;
  MutexLock lock(core_->mutex);
  if (measure > 0 && worker_bytes_ < 0) worker_bytes_ = worker_bytes;
  if (due) {
    available_bytes_ = available;
    memory_checked_ = Clock::now();
  }
}

TunerLimits Supervisor::tuner_limits() {
  TunerLimits l;
  l.tune_workers = workers_auto_;
  l.tune_prefetch = config_.prefetch_auto;
  l.target = options_.stall_target;
  l.max_workers = config_.max_workers;
  l.max_workers_reason = config_.max_workers_reason;
  l.max_slots = static_cast<int>(core_->view.header().slot_capacity);
  if (!workers_auto_) return l;
  // Memory (read by read_memory()): each worker holds its own decode buffers and brings two
  // more batch slots; grow only into half of what is free.
  const std::int64_t per_worker = std::max(worker_bytes_, kMinWorkerBytes) +
                                  2 * static_cast<std::int64_t>(core_->view.header().slot_stride);
  const std::int64_t available = available_bytes_;
  if (available >= 0) {
    const auto more = static_cast<int>(available / 2 / per_worker);
    if (pool_.size() + more < l.max_workers) {
      l.max_workers = std::max(1, pool_.size() + more);
      l.max_workers_reason = "memory: " + std::to_string(available >> 20) +
                             " MiB available, about " + std::to_string(per_worker >> 20) +
                             " MiB per worker";
    }
  }
  limit_workers_ = l.max_workers;
  limit_reason_ = l.max_workers_reason;
  return l;
}

void Supervisor::tune() {
  if (!workers_auto_ && !config_.prefetch_auto) return;
  const Clock::time_point now = Clock::now();
  if (now < next_tune_) return;
  next_tune_ = now + from_seconds(kTuneEveryS);
  const StallMonitor::Totals w = core_->metrics.window();
  const double since = core_->metrics.seconds_since_change(now);
  if (w.batches < std::min(options_.monitor_window, kTuneMinBatches) || since < kTuneSettleS)
    return;
  TunerInput in;
  in.now_s = seconds(now - core_->metrics.created());
  in.batches = w.batches;
  in.wait_fraction = w.wait_fraction();
  in.demand_per_s = w.demand_per_s();
  in.delivered_per_s = w.delivered_per_s();
  in.busy_fraction = core_->metrics.busy_fraction(now, pool_.size());
  in.worker_per_s = core_->metrics.worker_rate();
  in.workers = pool_.size();
  in.slots = static_cast<int>(core_->slots.size());
  const std::optional<TunerChange> change = tuner_.evaluate(in, tuner_limits());
  if (!change) return;
  decide(change->what, change->from, change->to, change->reason);
  if (change->what == TuneTarget::kWorkers) {
    const int slots_before = in.slots;
    resize_pool(change->to);
    // Recorded once the slots exist (publish_slots), with the depth reached.
    if (slots_wanted_ > static_cast<std::size_t>(slots_before))
      depth_follows_ = DepthChange{slots_before, "two slots per worker plus two keep " +
                                                     std::to_string(change->to) + " workers busy"};
  } else {
    slots_wanted_ = std::max(slots_wanted_, static_cast<std::size_t>(change->to));
    restart_measurement();
  }
}

}  // namespace stoke::detail
