// The supervisor thread: starts the workers, hands them chunks, collects their completions,
// and replaces the ones that die or hang, redoing their work without changing a byte.

#include "supervision/supervisor.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <future>

#include "common/poll_wait.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

Supervisor::Supervisor(std::shared_ptr<LoaderCore> core, const ResolvedConfig& config,
                       EventLog& log, std::unique_ptr<WorkerProcesses> workers, int done_fd,
                       const TimeSource& time)
    : core_(std::move(core)),
      config_(config),
      options_(config.options),
      log_(log),
      done_fd_(done_fd),
      time_(time),
      time_jumps_(time.listen([c = core_.get()] { c->wake(); })),
      workers_(std::move(workers)),
      exits_(*core_, config.options, log, workers_->executable()),
      pool_(config.capacity, config.initial_workers),
      sizer_(config, log, time, pool_),
      ledger_(config.capacity, from_seconds(std::max(0.0, config.options.task_timeout_s)),
              from_seconds(config.options.startup_timeout_s)) {}

Supervisor::~Supervisor() {
  if (thread_.joinable()) thread_.join();
}

void Supervisor::flush_log() {
  log_.flush();
}

void Supervisor::start() {
  std::promise<void> started;
  auto ready = started.get_future();
  thread_ = std::thread([this, &started] { run(started); });
  try {
    ready.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

void Supervisor::run(std::promise<void>& started) {
  try {
    start_workers();
  } catch (...) {
    workers_.reset();
    started.set_exception(std::current_exception());
    return;
  }
  started.set_value();
  try {
    loop();
  } catch (...) {
    MutexLock lock(core_->mutex);
    core_->fail(std::current_exception());
  }
  flush_log();
  // Workers are stopped from this thread, the one that spawned them, before it exits.
  workers_->stop_all(std::chrono::milliseconds(1000));
  workers_.reset();
}

void Supervisor::loop() {
  std::vector<pollfd> fds;
  std::vector<int> watched, respawn, grow;
  for (;;) {
    int timeout_ms = 0;
    std::size_t slots_wanted = 0;
    {
      MutexLock lock(core_->mutex);
      if (core_->stop) return;
      if (requested_size_ > 0) {
        if (requested_size_ != pool_.size())
          log_.post("resizing the worker pool from " + std::to_string(pool_.size()) + " to " +
                    std::to_string(requested_size_) + " workers (requested)");
        resize_pool(requested_size_);
        requested_size_ = -1;
      }
      core_->collect_transfers();
      core_->slots.assign_free();
      retire_drained();
      dispatch();
      watched = pool_.members();
      count_starting();
      timeout_ms = poll_timeout_ms();
      slots_wanted = sizer_.take_slots_wanted(*core_);
      grow = pool_.take_growth();
    }
    if (slots_wanted > 0) {
      sizer_.publish_slots(*core_, slots_wanted);
      timeout_ms = 0;  // assign the new slots straight away
    }
    flush_log();
    spawn_growth(grow);
    fds.assign({{done_fd_, POLLIN, 0}, {core_->wake_fd, POLLIN, 0}});
    std::erase_if(watched, [&](int i) { return !workers_->running(i); });
    for (int i : watched) fds.push_back({workers_->pidfd(i), POLLIN, 0});
    poll_or_throw(fds, grow.empty() ? timeout_ms : 0, kPollFailure);
    drain_eventfd(done_fd_);
    drain_eventfd(core_->wake_fd);
    respawn.clear();
    sizer_.read_memory(*core_, *workers_);
    {
      MutexLock lock(core_->mutex);
      for (int i : pool_.members()) drain_completions(i);
      // Exits first: a worker that died just at its deadline is a death, not our timeout kill.
      for (std::size_t k = 0; k < watched.size() && !core_->stop; ++k) {
        if ((fds[k + 2].revents & POLLIN) && handle_exit(watched[k])) respawn.push_back(watched[k]);
      }
      kill_overdue_workers();
      if (!core_->stop)
        if (const std::optional<int> n = sizer_.tune(*core_)) resize_pool(*n);
      count_starting();
      // A dead worker whose record the tuner has just retired needs no replacement.
      // (A loop, not erase_if: a lambda would be analysed as holding no lock.)
      std::vector<int> still_active;
      for (int i : respawn)
        if (pool_.active(i)) still_active.push_back(i);
      respawn.swap(still_active);
    }
    flush_log();
    // Spawning takes a while; consumers releasing batches must not wait for it.
    for (int i : respawn) spawn(i);
  }
}

// Work goes only to workers that finished the handshake: one still starting (or hanging at
// start-up) holds nothing that another worker could have done.
void Supervisor::dispatch() {
  std::vector<int> open;
  for (int i : pool_.members())
    if (pool_.active(i) && workers_->running(i) && ready(i)) open.push_back(i);
  while (core_->slots.has_task()) {
    const int best = ledger_.least_loaded(open);
    if (best < 0) return;
    WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(best));
    const Task t = core_->slots.next_task();
    if (!r.tasks.push(t)) return;
    core_->slots.take_task();
    ledger_.hand(best, t, time_.now());
    r.tasks_posted.post();
  }
}

void Supervisor::drain_completions(int worker) {
  WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(worker));
  Completion done;
  while (r.done.pop(done)) {
    const std::optional<Task> task = ledger_.complete(worker, done.seq, time_.now());
    if (!task) {
      core_->fail(std::make_exception_ptr(Error("internal error: worker " + std::to_string(worker) +
                                                " completed task " + std::to_string(done.seq) +
                                                " out of order; please report this")));
      return;
    }
    core_->complete(*task, done);
  }
}

int Supervisor::poll_timeout_ms() const {
  // With automatic sizing, evaluate even when nothing happens (a consumer that stopped asking).
  int ms = sizer_.tuning(*core_) ? static_cast<int>(kTuneEveryS * 1000) : 1000;
  const Clock::time_point now = time_.now();
  for (int i : pool_.members()) {
    if (!workers_->running(i)) continue;
    if (const auto deadline = ledger_.deadline(i, ready(i)))
      ms = std::min(ms, ms_until(*deadline, now));
  }
  return ms;
}

// A worker past a deadline is killed; the exit path then replaces it and redoes its work:
//   - one that has spent longer than the task timeout on one chunk (a decoder stuck in a loop,
//     a read hanging on a dead network mount, a stopped process);
//   - one spawned Options::startup_timeout_s ago and not past its handshake (a replacement or a
//     new worker that hangs while loading libraries, or is stopped, would otherwise hold its
//     record forever); the kill counts toward the start-up budget.
void Supervisor::kill_overdue_workers() {
  const Clock::time_point now = time_.now();
  for (int i : pool_.members()) {
    if (!workers_->running(i)) continue;
    const bool started = ready(i);
    if (started ? !ledger_.task_overdue(i, now) : !ledger_.startup_overdue(i, now)) continue;
    exits_.report_overdue(*core_, i, workers_->pid(i),
                          started ? &ledger_.held(i).front() : nullptr);
    ledger_.killed_for_deadline(i);
    workers_->kill(i);
  }
}

bool Supervisor::ready(int worker) const {
  return core_->view.worker(static_cast<std::uint32_t>(worker))
             .state.load(std::memory_order_acquire) == WorkerRecord::kReady;
}

bool Supervisor::handle_exit(int worker) {
  WorkerExits::Death d;
  d.worker = worker;
  d.pid = workers_->pid(worker);
  d.exit = workers_->reap(worker);
  d.sample = core_->view.worker(static_cast<std::uint32_t>(worker)).current_sample.load();
  d.timed_out = ledger_.take_killed(worker);
  drain_completions(worker);
  d.chunks = ledger_.held(worker).size();
  // A retiring worker that finished its chunks and stopped has simply retired. One that died on
  // the way out is treated like any death (its sample is blamed, its chunks redone), except
  // that no replacement starts.
  d.retiring = pool_.retiring(worker);
  if (d.retiring && d.chunks == 0 && !d.exit.signaled && d.exit.status == 0) {
    retire_record(worker);
    return false;
  }
  d.started = ready(worker);
  if (!exits_.report(*core_, d)) return false;
  core_->slots.redo(ledger_.take(worker));
  if (d.retiring) {
    retire_record(worker);
    return false;
  }
  // A worker that keeps dying before it is even ready (an unsupported CPU, a broken library,
  // a hang) would otherwise be restarted forever. SIGKILL from outside (an operator, the OOM
  // killer) does not count; each restart costs a process start, so even a persistent killer
  // cannot spin us.
  if (d.started) {
    ledger_.reset_startup(worker);
    return true;
  }
  return exits_.may_restart_starting(*core_, ledger_, worker, d.exit, d.timed_out);
}

void Supervisor::request_size(int n) {
  {
    MutexLock lock(core_->mutex);
    core_->rethrow_if_failed();
    requested_size_ = n;
    sizer_.stop_tuning_workers(*core_);
  }
  core_->wake();
}

Supervisor::PoolView Supervisor::view() const {
  MutexLock lock(core_->mutex);
  const auto [limit, why] = sizer_.limit(*core_);
  return {pool_.size(), starting_, sizer_.workers_auto(*core_), limit, why};
}

// ---- resizes ------------------------------------------------------------------------------

// PoolController decides which records become active or retire; the supervisor carries it out:
// the chunk size, the measurements, slots for the new workers (spawned by the loop).
void Supervisor::resize_pool(int n) {
  n = pool_.resize(n);
  pool_resized();
  sizer_.want_slots_for(*core_, n);
}

// What follows from the pool's size: the chunk size (one chunk per worker per batch, unless
// fixed by Options::chunk) and a fresh start for the measurements.
void Supervisor::pool_resized() {
  core_->slots.rechunk(chunk_for(options_, pool_.size()));
  sizer_.restart_measurement(*core_);
}

// Tells each retiring worker whose chunks are all done to stop; its exit is then a retirement.
// A record queued for spawning but not yet started simply goes back to idle.
void Supervisor::retire_drained() {
  for (int i : pool_.retiring_not_stopped()) {
    if (!ledger_.held(i).empty()) continue;
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
  ledger_.reset_startup(i);  // a later occupant's start-up is a new run
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
      ledger_.reset_startup(i);
      pool_resized();
      log_.post(std::string("could not add a worker (") + e.what() + "); the pool stays at " +
                std::to_string(pool_.size()));
    }
  }
  flush_log();
}

}  // namespace stoke::detail
