// Resizing the worker pool, by hand (Loader::resize_workers) or automatically (workers=kAuto,
// prefetch=kAuto): the pool's roles, retirement, and the tuner's measurements and decisions.

#include <algorithm>
#include <cstdio>

#include "loader_impl.hpp"
#include "stoke/names.hpp"
#include "tuning/host_memory.hpp"

namespace stoke {

using namespace detail;

namespace {

// Automatic sizing measures at least this many batches and this long after a change (a new
// worker needs a moment to start) before it decides again.
constexpr int kTuneMinBatches = 10;
constexpr double kTuneSettleS = 0.5;
constexpr std::int64_t kMinWorkerBytes = std::int64_t{16} << 20;  // per worker, when unmeasured
constexpr auto kMemoryEvery = std::chrono::seconds(2);  // how often free memory is re-read

}  // namespace

void Loader::Impl::resize_workers(int n) {
  if (config_.capacity == 0)
    throw ConfigError(
        "this loader runs the pipeline in-process (workers 0); it has no pool to "
        "resize");
  if (n < 1 || n > config_.capacity)
    throw ConfigError("resize_workers: the pool takes 1.." + std::to_string(config_.capacity) +
                      " workers, got " + std::to_string(n));
  {
    MutexLock lock(core_->mutex);
    rethrow_if_failed();
    requested_size_ = n;
    workers_auto_ = false;
  }
  core_->wake();
}

// ---- pool size -----------------------------------------------------------------------------

// Makes n records active: retiring workers not yet told to stop come back first, then idle
// records (lowest first) are queued for spawning; beyond n, the highest active ones retire.
// Work already handed to a retiring worker is finished by it, so no chunk moves and none is
// redone: the delivered bytes cannot change.
void Loader::Impl::resize_pool(int n) {
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
void Loader::Impl::set_pool_size(int n) {
  pool_size_ = n;
  core_->slots.set_chunk(chunk_for(n));
  restart_measurement();
}

// One chunk per worker per batch (the whole batch in-process), unless Options::chunk fixes it.
int Loader::Impl::chunk_for(int pool_size) const {
  const int b = options_.batch;
  if (options_.chunk > 0) return std::min(options_.chunk, b);
  return pool_size == 0 ? b : std::max(1, (b + pool_size - 1) / pool_size);
}

// Tells each retiring worker whose chunks are all done to stop; its exit is then a retirement.
// A record queued for spawning but not yet started simply goes back to idle.
void Loader::Impl::retire_drained() {
  for (std::size_t k = 0; k < members_.size();) {
    const int i = members_[k];
    if (role_[i] != Role::kRetiring || stop_sent_[i] || !in_flight_[i].empty()) {
      ++k;
      continue;
    }
    if (!pool_->running(i)) {
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
void Loader::Impl::retire_record(int i) {
  role_[i] = Role::kIdle;
  stop_sent_[i] = false;
  std::erase(members_, i);
}

// Starts the workers a growth asked for. One that cannot start (out of processes or
// descriptors) shrinks the pool back instead of stopping the loader.
void Loader::Impl::spawn_growth(const std::vector<int>& workers) {
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

void Loader::Impl::restart_measurement() {
  metrics_.restart_measurement(Clock::now());
}

void Loader::Impl::decide(TuneTarget what, int from, int to, const std::string& reason) {
  TuneDecision d;
  d.at_s = seconds(Clock::now() - metrics_.created());
  d.what = what;
  d.from = from;
  d.to = to;
  d.reason = reason;
  char at[32];
  std::snprintf(at, sizeof at, "%.1f", d.at_s);
  log_.post("autotune at " + std::string(at) + " s: " + tune_target_name(what) + " " +
            std::to_string(from) +
            " -> " + std::to_string(to) + ": " + reason);
  metrics_.decided(std::move(d));
}

TunerLimits Loader::Impl::tuner_limits() {
  TunerLimits l;
  l.tune_workers = workers_auto_;
  l.tune_prefetch = config_.prefetch_auto;
  l.target = options_.stall_target;
  l.max_workers = config_.max_workers;
  l.max_workers_reason = config_.max_workers_reason;
  l.max_slots = static_cast<int>(core_->view.header().slot_capacity);
  if (!workers_auto_) return l;
  // Memory: each worker holds its own decode buffers (measured once, on the first worker) and
  // brings two more batch slots; grow only into half of what is free, read every few seconds.
  if (worker_bytes_ < 0 && !members_.empty() && pool_->running(members_.front()))
    worker_bytes_ = anon_rss_bytes(pool_->pid(members_.front()));
  const std::int64_t per_worker = std::max(worker_bytes_, kMinWorkerBytes) +
                                  2 * static_cast<std::int64_t>(core_->view.header().slot_stride);
  const Clock::time_point now = Clock::now();
  if (now >= memory_checked_ + kMemoryEvery) {
    available_bytes_ = available_memory_bytes();
    memory_checked_ = now;
  }
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

void Loader::Impl::tune() {
  if (!workers_auto_ && !config_.prefetch_auto) return;
  const Clock::time_point now = Clock::now();
  if (now < next_tune_) return;
  next_tune_ =
      now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kTuneEveryS));
  const StallMonitor::Totals w = metrics_.window();
  const double since = metrics_.seconds_since_change(now);
  if (w.batches < std::min(options_.monitor_window, kTuneMinBatches) || since < kTuneSettleS)
    return;
  TunerInput in;
  in.now_s = seconds(now - metrics_.created());
  in.batches = w.batches;
  in.wait_fraction = w.wait_fraction();
  in.demand_per_s = w.demand_per_s();
  in.delivered_per_s = w.delivered_per_s();
  in.busy_fraction = metrics_.busy_fraction(now, pool_size_);
  in.worker_per_s = metrics_.worker_rate();
  in.workers = pool_size_;
  in.slots = static_cast<int>(core_->slots.size());
  const std::optional<TunerChange> change = tuner_.evaluate(in, tuner_limits());
  if (!change) return;
  decide(change->what, change->from, change->to, change->reason);
  if (change->what == TuneTarget::kWorkers) {
    const int slots_before = in.slots;
    resize_pool(change->to);
    const int slots_after = std::max(
        slots_before, static_cast<int>(std::min<std::size_t>(
                          slots_wanted_, core_->view.header().slot_capacity)));
    if (slots_after != slots_before)
      decide(
          TuneTarget::kPrefetch, slots_before, slots_after,
          "two slots per worker plus two keep " + std::to_string(change->to) + " workers busy");
  } else {
    slots_wanted_ = std::max(slots_wanted_, static_cast<std::size_t>(change->to));
    restart_measurement();
  }
}

}  // namespace stoke
