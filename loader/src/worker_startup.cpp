// Starting workers: spawning, the first pool's handshake, and the start-up budget that turns a
// worker which can never start into an error. (Every later worker's handshake deadline is
// watched with the task timeouts: kill_overdue_workers().)

#include <csignal>
#include <cstring>

#include "common/build_info.hpp"
#include "common/poll_wait.hpp"
#include "common/text.hpp"
#include "supervisor.hpp"
#include "worker/worker_exit_codes.hpp"
#include "worker/worker_locate.hpp"

namespace stoke::detail {

void Supervisor::spawn(int worker) {
  {
    MutexLock lock(core_->mutex);
    ledger_.spawned(worker, time_.now());
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
  const Clock::time_point deadline = time_.now() + from_seconds(options_.startup_timeout_s);
  for (;;) {
    int started = 0;
    for (int i = 0; i < n; ++i) started += ready(i) ? 1 : 0;
    if (started == n) {
      MutexLock lock(core_->mutex);
      sizer_.restart_measurement(*core_);  // the pool's measurements start with a running pool
      return;
    }
    const Clock::time_point now = time_.now();
    if (now >= deadline)
      throw Error("stoke-worker (" + workers_->executable() + ") did not start within " +
                  seconds_text(options_.startup_timeout_s) + " s");
    // (wake_fd: the time source's jumps.)
    std::vector<pollfd> fds{{done_fd_, POLLIN, 0}, {core_->wake_fd, POLLIN, 0}};
    for (int i = 0; i < n; ++i) fds.push_back({workers_->pidfd(i), POLLIN, 0});
    poll_or_throw(fds, ms_until(deadline, now), kPollFailure);
    drain_eventfd(done_fd_);
    drain_eventfd(core_->wake_fd);
    for (int i = 0; i < n; ++i) {
      if (!(fds[i + 2].revents & POLLIN)) continue;
      const pid_t pid = workers_->pid(i);
      const WorkerExit exit = workers_->reap(i);
      if (const std::string why = incurable(i, exit); !why.empty()) throw Error(why);
      if (!exit.signaled)
        throw Error("stoke-worker (" + workers_->executable() + ") exited during start-up with " +
                    exit.describe());
      {
        MutexLock lock(core_->mutex);
        if (!within_startup_budget(i, exit, false)) core_->rethrow_if_failed();
        log_.post("worker " + std::to_string(i) + " (pid " + std::to_string(pid) + ") died with " +
                  exit.describe() + " during start-up; restarting it");
      }
      flush_log();
      spawn(i);
    }
  }
}

void Supervisor::count_starting() {
  starting_ = 0;
  for (int i : pool_.members()) {
    // A record not yet (re)spawned still shows its previous occupant's state: it is starting.
    if (pool_.active(i) && (!workers_->running(i) || !ready(i))) ++starting_;
  }
}

bool Supervisor::within_startup_budget(int worker, const WorkerExit& exit, bool timed_out) {
  const bool outside_kill = exit.signaled && exit.status == SIGKILL && !timed_out;
  if (ledger_.died_starting(worker, !outside_kill)) return true;
  const std::string times = std::to_string(WorkerLedger::kMaxStartupDeaths) + " times in a row";
  core_->fail(std::make_exception_ptr(
      Error(timed_out ? "worker " + std::to_string(worker) + " did not finish starting within " +
                            seconds_text(options_.startup_timeout_s) + " s, " + times +
                            "; stoke-worker (" + workers_->executable() + ") hangs at start-up"
                      : "worker " + std::to_string(worker) + " died " + times +
                            " during start-up; last death: " + exit.describe())));
  return false;
}

}  // namespace stoke::detail
