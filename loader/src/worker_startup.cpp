// Starting workers: the first pool's handshake, every later worker's handshake deadline, and
// the start-up budget that turns a worker which can never start into an error.

#include <csignal>

#include "common/build_info.hpp"
#include "supervision.hpp"
#include "supervisor.hpp"
#include "worker/worker_locate.hpp"

namespace stoke::detail {

namespace {

// Deaths of one worker record before it reaches the handshake, in a row (crashes and our own
// handshake-timeout kills; an outside SIGKILL does not count), before the loader gives up.
constexpr int kMaxStartupDeaths = 5;

}  // namespace

Supervisor::Clock::duration Supervisor::startup_timeout() const {
  return from_seconds(options_.startup_timeout_s);
}

void Supervisor::spawn(int worker) {
  {
    MutexLock lock(core_->mutex);
    spawned_at_[worker] = Clock::now();
  }
  workers_->spawn(worker);
}

// The initial pool must finish its handshake within Options::startup_timeout_s. A worker that
// crashes while starting (a signal) is replaced like any later death, within the start-up budget;
// one that exits with a status is not a working stoke-worker (a wrong path, a broken install) and
// no restart cures that.
void Supervisor::start_workers() {
  int n = 0;
  {
    MutexLock lock(core_->mutex);
    n = pool_.size();  // records 0..n-1, active from the start
  }
  for (int i = 0; i < n; ++i) spawn(i);
  const Clock::time_point deadline = Clock::now() + startup_timeout();
  for (;;) {
    int ready = 0;
    for (int i = 0; i < n; ++i) {
      const WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(i));
      const auto st = r.state.load(std::memory_order_acquire);
      if (st == WorkerRecord::kReady) ++ready;
      if (st == WorkerRecord::kVersionMismatch) {
        throw Error(workers_->executable() + " is version " + std::string(r.version) +
                    " but this library is " + worker_version_tag() +
                    "; install the stoke-worker that came with this library");
      }
    }
    if (ready == n) {
      MutexLock lock(core_->mutex);
      restart_measurement();  // the pool's measurements start with a running pool
      return;
    }
    const Clock::time_point now = Clock::now();
    if (now >= deadline)
      throw Error("stoke-worker (" + workers_->executable() + ") did not start within " +
                  seconds_text(options_.startup_timeout_s) + " s");
    std::vector<pollfd> fds{{done_fd_, POLLIN, 0}};
    for (int i = 0; i < n; ++i) fds.push_back({workers_->pidfd(i), POLLIN, 0});
    poll_or_throw(fds, ms_until(deadline, now));
    drain_eventfd(done_fd_);
    for (int i = 0; i < n; ++i) {
      if (!(fds[i + 1].revents & POLLIN)) continue;
      const pid_t pid = workers_->pid(i);
      const WorkerExit exit = workers_->reap(i);
      if (!exit.signaled && exit.status == kExitVersionMismatch)
        throw Error(workers_->executable() + " does not match this library (" +
                    worker_version_tag() + "); install the stoke-worker that came with it");
      if (const std::string why = incurable_exit(exit); !why.empty()) throw Error(why);
      if (!exit.signaled)
        throw Error("stoke-worker (" + workers_->executable() + ") exited during start-up with " +
                    exit.describe());
      {
        MutexLock lock(core_->mutex);
        if (!within_startup_budget(i, exit, false)) std::rethrow_exception(core_->fatal);
        log_.post("worker " + std::to_string(i) + " (pid " + std::to_string(pid) + ") died with " +
                  exit.describe() + " during start-up; restarting it");
      }
      log_.flush();
      spawn(i);
    }
  }
}

// Every spawned worker has Options::startup_timeout_s to finish its handshake (a replacement or a
// new worker that hangs while loading libraries, or is stopped, would otherwise hold its record
// forever). The kill counts toward the start-up budget.
void Supervisor::kill_unready_workers() {
  const Clock::time_point now = Clock::now();
  for (int i : pool_.members()) {
    if (timed_out_[i] || !workers_->running(i)) continue;
    if (core_->view.worker(static_cast<std::uint32_t>(i)).state.load() == WorkerRecord::kReady)
      continue;
    if (now - spawned_at_[i] < startup_timeout()) continue;
    log_.post("worker " + std::to_string(i) + " (pid " + std::to_string(workers_->pid(i)) +
              ") did not finish starting within " + seconds_text(options_.startup_timeout_s) +
              " s; killing it");
    timed_out_[i] = true;
    workers_->kill(i);
  }
}

void Supervisor::count_starting() {
  starting_ = 0;
  for (int i : pool_.members()) {
    // A record not yet (re)spawned still shows its previous occupant's state: it is starting.
    const auto state = core_->view.worker(static_cast<std::uint32_t>(i)).state.load();
    if (pool_.active(i) && (!workers_->running(i) || state != WorkerRecord::kReady)) ++starting_;
  }
}

bool Supervisor::within_startup_budget(int worker, const WorkerExit& exit, bool timed_out) {
  const bool outside_kill = exit.signaled && exit.status == SIGKILL && !timed_out;
  if (!outside_kill) startup_deaths_[worker] += 1;
  if (startup_deaths_[worker] < kMaxStartupDeaths) return true;
  const std::string times = std::to_string(kMaxStartupDeaths) + " times in a row";
  core_->fail(std::make_exception_ptr(
      Error(timed_out ? "worker " + std::to_string(worker) + " did not finish starting within " +
                            seconds_text(options_.startup_timeout_s) + " s, " + times +
                            "; stoke-worker (" + workers_->executable() + ") hangs at start-up"
                      : "worker " + std::to_string(worker) + " died " + times +
                            " during start-up; last death: " + exit.describe())));
  return false;
}

}  // namespace stoke::detail
