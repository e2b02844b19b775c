// Starting workers: spawning and the first pool's handshake. (Every later worker's handshake
// deadline is watched with the task timeouts: kill_overdue_workers().)

#include "common/poll_wait.hpp"
#include "common/text.hpp"
#include "stoke/error.hpp"
#include "supervision/supervisor.hpp"

namespace stoke::detail {

void Supervisor::spawn(int worker) {
  {
    MutexLock lock(core_->mutex);
    ledger_.spawned(worker, time_.now());
  }
  workers_->spawn(worker);
}

// The initial pool must finish its handshake within Options::startup_timeout_s; a worker that
// dies meanwhile is judged by WorkerExits::first_start_died.
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
      {
        MutexLock lock(core_->mutex);
        exits_.first_start_died(*core_, ledger_, i, pid, exit);  // throws if no restart cures it
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

}  // namespace stoke::detail
