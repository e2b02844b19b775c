// Resizing the worker pool, by hand (Loader::resize_workers) or automatically (workers=kAuto,
// prefetch=kAuto): the pool's roles, retirement, and the tuner's measurements and decisions.

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
  return {pool_size_, starting_, workers_auto_, limit_workers_, limit_reason_};
}

// ---- pool size -----------------------------------------------------------------------------

// Makes n records active: retiring workers not yet told to stop come back first, then idle
// records (lowest first) are queued for spawning; beyond n, the highest active ones retire.
// Work already handed to a retiring worker is finished by it, so no chunk moves and none is
// redone: the delivered bytes cannot change.
void Supervisor::resize_pool(int n) {
  n = std::clamp(n, 1, config_.capacity);
  int active = 0;  // (a loop, not count_if: a lambda would be analysed as holding no lock)
  for (int i : members_) active += role_[i] == Role::kActive ? 1 : 0;
  for (int i : members_) {
    if (active >= n) break;
    if (role_[i] == Role::kRetiring && !stop_sent_[i]) {
      role_[i] = Role::kActive;
      ++active;
    }
  }
  for (int i = 0; i < config_.capacity && active < n; ++i) {
    if (role_[i] != Role::kIdle) continue;
    role_[i] = Role::kActive;
    stop_sent_[i] = false;
    members_.insert(std::upper_bound(members_.begin(), members_.end(), i), i);
    to_grow_.push_back(i);
    ++active;
  }
  for (auto it = members_.rbegin(); it != members_.rend() && active > n; ++it) {
    if (role_[*it] != Role::kActive) continue;
    role_[*it] = Role::kRetiring;
    --active;
  }
  set_pool_size(n);
  if (options_.prefetch <= 0)
    slots_wanted_ = std::max(slots_wanted_, 2 * static_cast<std::size_t>(n) + 2);
}

// The pool's size, and what follows from it: the chunk size (one chunk per worker per batch,
// unless fixed by Options::chunk) and a fresh start for the measurements.
void Supervisor::set_pool_size(int n) {
  pool_size_ = n;
  core_->slots.set_chunk(chunk_for(options_, n));
  restart_measurement();
}

// Tells each retiring worker whose chunks are all done to stop; its exit is then a retirement.
// A record queued for spawning but not yet started simply goes back to idle.
void Supervisor::retire_drained() {
  for (std::size_t k = 0; k < members_.size();) {
    const int i = members_[k];
    if (role_[i] != Role::kRetiring || stop_sent_[i] || !in_flight_[i].empty()) {
      ++k;
      continue;
    }
    if (!workers_->running(i)) {
      retire_record(i);  // members_[k] is now the next record
      std::erase(to_grow_, i);
      continue;
    }
    WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(i));
    Task stop;
    stop.kind = Task::kStop;
    if (r.tasks.push(stop)) {
      r.tasks_posted.post();
      stop_sent_[i] = true;
    }
    ++k;
  }
}

// Record i has no process any more (it retired, died while retiring, or was never started):
// the record is idle.
void Supervisor::retire_record(int i) {
  role_[i] = Role::kIdle;
  startup_deaths_[i] = 0;  // a later occupant's start-up is a new run
  stop_sent_[i] = false;
  std::erase(members_, i);
}

// Starts the workers a growth asked for. One that cannot start (out of processes or
// descriptors) shrinks the pool back instead of stopping the loader.
void Supervisor::spawn_growth(const std::vector<int>& workers) {
  for (int i : workers) {
    try {
      spawn(i);
    } catch (const Error& e) {
      MutexLock lock(core_->mutex);
      retire_record(i);
      set_pool_size(std::max(1, pool_size_ - 1));
      log_.post(std::string("could not add a worker (") + e.what() + "); the pool stays at " +
                std::to_string(pool_size_));
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
    if (worker_bytes_ < 0 && !members_.empty() && workers_->running(members_.front()))
      measure = workers_->pid(members_.front());
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
    if (pool_size_ + more < l.max_workers) {
      l.max_workers = std::max(1, pool_size_ + more);
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
  in.busy_fraction = core_->metrics.busy_fraction(now, pool_size_);
  in.worker_per_s = core_->metrics.worker_rate();
  in.workers = pool_size_;
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
