// The supervisor thread: starts the workers, hands them chunks, collects their completions,
// and replaces the ones that die or hang, redoing their work without changing a byte.

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <future>

#include "build_info.hpp"
#include "loader_impl.hpp"
#include "worker/worker_exit_codes.hpp"
#include "worker/worker_locate.hpp"

namespace stoke {

using namespace detail;

namespace {

constexpr int kTasksInFlightPerWorker = 4;
// Deaths of one worker record before it reaches the handshake, in a row (crashes and our own
// handshake-timeout kills; an outside SIGKILL does not count), before the loader gives up.
constexpr int kMaxStartupDeaths = 5;

// The message for a worker exit that no restart can cure, or "" for any other exit.
std::string incurable_exit(const WorkerExit& exit) {
  if (exit.signaled) return "";
  if (exit.status == kExitBadArena)
    return "stoke-worker could not map the shared arena; check memory limits (ulimit -v, "
           "cgroup memory) and seccomp filters";
  return "";
}

void drain_eventfd(int fd) {
  std::uint64_t v;
  while (::read(fd, &v, sizeof v) > 0) {
  }
}

// poll(2) that only returns early for readiness or a signal; any other failure is an error.
void poll_or_throw(std::vector<pollfd>& fds, int timeout_ms) {
  if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
    const int e = errno;
    throw Error(std::string("the loader's supervisor could not poll its workers: ") +
                std::strerror(e));
  }
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

int ms_until(Clock::time_point t, Clock::time_point now) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count();
  return static_cast<int>(std::clamp<std::int64_t>(ms + 1, 0, 60'000));
}

}  // namespace

void Loader::Impl::supervise(std::promise<void>& started) {
  try {
    start_workers();
  } catch (...) {
    pool_.reset();
    started.set_exception(std::current_exception());
    return;
  }
  started.set_value();
  try {
    supervise_loop();
  } catch (...) {
    MutexLock lock(core_->mutex);
    core_->fail(std::current_exception());
  }
  log_.flush();
  // Workers are stopped from this thread, the one that spawned them, before it exits.
  pool_->stop_all(std::chrono::milliseconds(1000));
  pool_.reset();
}

Clock::duration Loader::Impl::startup_timeout() const {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.startup_timeout_s));
}

void Loader::Impl::spawn(int worker) {
  {
    MutexLock lock(core_->mutex);
    spawned_at_[worker] = Clock::now();
  }
  pool_->spawn(worker);
}

// The initial pool must finish its handshake within Options::startup_timeout_s. A worker that crashes
// while starting (a signal) is replaced like any later death, within the start-up budget; one
// that exits with a status is not a working stoke-worker (a wrong path, a broken install) and
// no restart cures that.
void Loader::Impl::start_workers() {
  int n = 0;
  {
    MutexLock lock(core_->mutex);
    n = pool_size_;
    for (int i = 0; i < n; ++i) {
      role_[i] = Role::kActive;
      members_.push_back(i);
    }
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
        throw Error(pool_->executable() + " is version " + std::string(r.version) +
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
      throw Error("stoke-worker (" + pool_->executable() + ") did not start within " +
                  seconds_text(options_.startup_timeout_s) + " s");
    std::vector<pollfd> fds{{done_fd_, POLLIN, 0}};
    for (int i = 0; i < n; ++i) fds.push_back({pool_->pidfd(i), POLLIN, 0});
    poll_or_throw(fds, ms_until(deadline, now));
    drain_eventfd(done_fd_);
    for (int i = 0; i < n; ++i) {
      if (!(fds[i + 1].revents & POLLIN)) continue;
      const pid_t pid = pool_->pid(i);
      const WorkerExit exit = pool_->reap(i);
      if (!exit.signaled && exit.status == kExitVersionMismatch)
        throw Error(pool_->executable() + " does not match this library (" + worker_version_tag() +
                    "); install the stoke-worker that came with it");
      if (const std::string why = incurable_exit(exit); !why.empty()) throw Error(why);
      if (!exit.signaled)
        throw Error("stoke-worker (" + pool_->executable() + ") exited during start-up with " +
                    exit.describe());
      {
        MutexLock lock(core_->mutex);
        if (!within_startup_budget(i, exit, false))
          std::rethrow_exception(core_->fatal);
        log_.post("worker " + std::to_string(i) + " (pid " + std::to_string(pid) + ") died with " +
                  exit.describe() + " during start-up; restarting it");
      }
      log_.flush();
      spawn(i);
    }
  }
}

void Loader::Impl::supervise_loop() {
  std::vector<pollfd> fds;
  std::vector<int> watched, respawn, grow;
  for (;;) {
    int timeout_ms = 0;
    std::size_t slots_wanted = 0;
    {
      MutexLock lock(core_->mutex);
      if (core_->stop) return;
      if (requested_size_ > 0) {
        if (requested_size_ != pool_size_)
          log_.post("resizing the worker pool from " + std::to_string(pool_size_) + " to " +
                    std::to_string(requested_size_) + " workers (requested)");
        resize_pool(requested_size_);
        requested_size_ = -1;
      }
      core_->slots.assign_free();
      retire_drained();
      dispatch();
      watched = members_;
      count_starting();
      timeout_ms = poll_timeout_ms();
      slots_wanted = std::exchange(slots_wanted_, 0);
      grow = std::exchange(to_grow_, {});
    }
    if (slots_wanted > 0) {
      // Reserving arena memory blocks for a while: never under the lock.
      try {
        core_->add_slots(slots_wanted);
      } catch (const Error& e) {
        MutexLock lock(core_->mutex);
        log_.post("kept " + std::to_string(core_->slots.size()) + " batch slots instead of " +
                  std::to_string(slots_wanted) + ": " + e.what());
      }
      timeout_ms = 0;  // assign the new slots straight away
    }
    log_.flush();
    spawn_growth(grow);
    fds.assign({{done_fd_, POLLIN, 0}, {core_->wake_fd, POLLIN, 0}});
    std::erase_if(watched, [&](int i) { return !pool_->running(i); });
    for (int i : watched) fds.push_back({pool_->pidfd(i), POLLIN, 0});
    poll_or_throw(fds, grow.empty() ? timeout_ms : 0);
    drain_eventfd(done_fd_);
    drain_eventfd(core_->wake_fd);
    respawn.clear();
    {
      MutexLock lock(core_->mutex);
      for (int i : members_) drain_completions(i);
      kill_stuck_workers();
      kill_unready_workers();
      for (std::size_t k = 0; k < watched.size() && !core_->stop; ++k) {
        if ((fds[k + 2].revents & POLLIN) && handle_exit(watched[k]))
          respawn.push_back(watched[k]);
      }
      if (!core_->stop) tune();
      count_starting();
      // A dead worker whose record the tuner has just retired needs no replacement.
      // (A loop, not erase_if: a lambda would be analysed as holding no lock.)
      std::vector<int> still_active;
      for (int i : respawn)
        if (role_[i] == Role::kActive) still_active.push_back(i);
      respawn.swap(still_active);
    }
    log_.flush();
    // Spawning takes a while; consumers releasing batches must not wait for it.
    for (int i : respawn) spawn(i);
  }
}

// Work goes only to workers that finished the handshake: one still starting (or hanging at
// start-up) holds nothing that another worker could have done.
void Loader::Impl::dispatch() {
  std::deque<Task>& pending = core_->slots.pending();
  while (!pending.empty()) {
    int best = -1;
    for (int i : members_) {
      const WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(i));
      if (role_[i] != Role::kActive || !pool_->running(i) ||
          r.state.load(std::memory_order_acquire) != WorkerRecord::kReady ||
          in_flight_[i].size() >= kTasksInFlightPerWorker)
        continue;
      if (best < 0 || in_flight_[i].size() < in_flight_[best].size()) best = i;
    }
    if (best < 0) return;
    WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(best));
    const Task t = pending.front();
    if (!r.tasks.push(t)) return;
    pending.pop_front();
    if (in_flight_[best].empty()) front_since_[best] = Clock::now();
    in_flight_[best].push_back(t);
    r.tasks_posted.post();
  }
}

void Loader::Impl::drain_completions(int worker) {
  WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(worker));
  auto& q = in_flight_[worker];
  Completion done;
  while (r.done.pop(done)) {
    // A worker serves its ring in order, so its completions arrive in dispatch order.
    if (q.empty() || q.front().seq != done.seq) {
      core_->fail(std::make_exception_ptr(Error("internal error: worker " +
                                                std::to_string(worker) + " completed task " +
                                                std::to_string(done.seq) +
                                                " out of order; please report this")));
      return;
    }
    const Task task = q.front();
    q.pop_front();
    if (!q.empty()) front_since_[worker] = Clock::now();
    complete(task, done);
  }
}

int Loader::Impl::poll_timeout_ms() const {
  // With automatic sizing, evaluate even when nothing happens (a consumer that stopped asking).
  int ms = workers_auto_ || config_.prefetch_auto ? static_cast<int>(kTuneEveryS * 1000) : 1000;
  const Clock::time_point now = Clock::now();
  for (int i : members_) {
    if (timed_out_[i] || !pool_->running(i)) continue;
    const auto state = core_->view.worker(static_cast<std::uint32_t>(i)).state.load();
    if (state != WorkerRecord::kReady) {
      ms = std::min(ms, ms_until(spawned_at_[i] + startup_timeout(), now));
      continue;
    }
    if (options_.task_timeout_s <= 0 || in_flight_[i].empty()) continue;
    const auto limit = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options_.task_timeout_s));
    ms = std::min(ms, ms_until(front_since_[i] + limit, now));
  }
  return ms;
}

// A worker that has spent longer than the task timeout on one chunk (a decoder stuck in a loop,
// a read hanging on a dead network mount, a stopped process) is killed; the exit path then
// replaces it and redoes its work.
void Loader::Impl::kill_stuck_workers() {
  if (options_.task_timeout_s <= 0) return;
  const Clock::time_point now = Clock::now();
  for (int i : members_) {
    if (in_flight_[i].empty() || timed_out_[i] || !pool_->running(i)) continue;
    if (std::chrono::duration<double>(now - front_since_[i]).count() < options_.task_timeout_s)
      continue;
    const Task& t = in_flight_[i].front();
    const std::int64_t sample =
        core_->view.worker(static_cast<std::uint32_t>(i)).current_sample.load();
    const SlotInfo& s = core_->slots[static_cast<int>(t.slot)];
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", options_.task_timeout_s);
    const std::int64_t first = core_->view.planned_ids(t.slot)[t.begin];
    log_.post("worker " + std::to_string(i) + " (pid " + std::to_string(pool_->pid(i)) +
              ") spent more than " + limit + " s on samples " + std::to_string(t.begin) + ".." +
              std::to_string(t.begin + t.count - 1) + " of batch " + std::to_string(s.index) +
              " (epoch " + std::to_string(s.epoch) + ")" +
              (sample >= 0 ? ", at " + describe_sample(sample)
                           : ", not yet past the first, " + describe_sample(first)) +
              "; killing it");
    timed_out_[i] = true;
    pool_->kill(i);
  }
}

// Every spawned worker has Options::startup_timeout_s to finish its handshake (a replacement or a new
// worker that hangs while loading libraries, or is stopped, would otherwise hold its record
// forever). The kill counts toward the start-up budget.
void Loader::Impl::kill_unready_workers() {
  const Clock::time_point now = Clock::now();
  for (int i : members_) {
    if (timed_out_[i] || !pool_->running(i)) continue;
    if (core_->view.worker(static_cast<std::uint32_t>(i)).state.load() == WorkerRecord::kReady)
      continue;
    if (now - spawned_at_[i] < startup_timeout()) continue;
    log_.post("worker " + std::to_string(i) + " (pid " + std::to_string(pool_->pid(i)) +
              ") did not finish starting within " + seconds_text(options_.startup_timeout_s) +
              " s; killing it");
    timed_out_[i] = true;
    pool_->kill(i);
  }
}

void Loader::Impl::count_starting() {
  starting_ = 0;
  for (int i : members_) {
    const auto state = core_->view.worker(static_cast<std::uint32_t>(i)).state.load();
    if (role_[i] == Role::kActive && state != WorkerRecord::kReady) ++starting_;
  }
}

bool Loader::Impl::within_startup_budget(int worker, const WorkerExit& exit, bool timed_out) {
  const bool outside_kill = exit.signaled && exit.status == SIGKILL && !timed_out;
  if (!outside_kill) startup_deaths_[worker] += 1;
  if (startup_deaths_[worker] < kMaxStartupDeaths) return true;
  const std::string times = std::to_string(kMaxStartupDeaths) + " times in a row";
  core_->fail(std::make_exception_ptr(Error(
      timed_out ? "worker " + std::to_string(worker) + " did not finish starting within " +
                      seconds_text(options_.startup_timeout_s) + " s, " + times +
                      "; stoke-worker (" + pool_->executable() + ") hangs at start-up"
                : "worker " + std::to_string(worker) + " died " + times +
                      " during start-up; last death: " + exit.describe())));
  return false;
}

bool Loader::Impl::handle_exit(int worker) {
  WorkerRecord& record = core_->view.worker(static_cast<std::uint32_t>(worker));
  const pid_t pid = pool_->pid(worker);
  const WorkerExit exit = pool_->reap(worker);
  const std::int64_t sample = record.current_sample.load();
  const bool timed_out = timed_out_[worker];
  timed_out_[worker] = false;
  drain_completions(worker);
  auto& q = in_flight_[worker];
  // A retiring worker that finished its chunks and stopped has simply retired. One that died on
  // the way out is treated like any death (its sample is blamed, its chunks redone), except
  // that no replacement starts.
  const bool retiring = role_[worker] == Role::kRetiring;
  if (retiring && q.empty() && !exit.signaled && exit.status == 0) {
    retire_record(worker);
    return false;
  }
  const bool started = record.state.load() == WorkerRecord::kReady;
  const std::string how = !timed_out  ? "died with " + exit.describe()
                          : started   ? "was killed for exceeding the task timeout"
                                      : "was killed for not finishing its start-up";
  log_.post("worker " + std::to_string(worker) + " (pid " + std::to_string(pid) + ") " + how +
            (sample >= 0 && !q.empty() ? " while producing " + describe_sample(sample) : "") +
            (retiring ? "; it was retiring, so the other workers redo its "
                      : "; restarting it and redoing ") +
            std::to_string(q.size()) + " chunk(s)");
  if (!retiring) metrics_.worker_restarted();
  if (!exit.signaled && exit.status == kExitVersionMismatch) {
    core_->fail(std::make_exception_ptr(
        Error(pool_->executable() + " no longer matches this library (" + worker_version_tag() +
              "); it was replaced while running: reinstall stoke and restart")));
    return false;
  }
  if (const std::string why = incurable_exit(exit); !why.empty()) {
    core_->fail(std::make_exception_ptr(Error(why)));
    return false;
  }
  if (sample >= 0 && !q.empty()) {
    const SampleBlame::Verdict v =
        blame_->blame(sample, describe_sample(sample), exit, timed_out, options_.on_error);
    if (v.kind == SampleBlame::Verdict::kFatal) {
      // (Two calls: a conditional expression would slice the DataError to its base.)
      if (options_.on_error == OnError::kError)
        core_->fail(std::make_exception_ptr(DataError(v.message)));
      else
        core_->fail(std::make_exception_ptr(Error(v.message)));
      return false;
    }
    if (v.kind == SampleBlame::Verdict::kPoisoned) log_.post(v.message);
  }
  std::deque<Task>& pending = core_->slots.pending();
  for (auto it = q.rbegin(); it != q.rend(); ++it) pending.push_front(*it);
  q.clear();
  if (retiring) {
    retire_record(worker);
    return false;
  }
  // A worker that keeps dying before it is even ready (an unsupported CPU, a broken library,
  // a hang) would otherwise be restarted forever. SIGKILL from outside (an operator, the OOM
  // killer) does not count; each restart costs a process start, so even a persistent killer
  // cannot spin us.
  if (started) {
    startup_deaths_[worker] = 0;
    return true;
  }
  return within_startup_budget(worker, exit, timed_out);
}

}  // namespace stoke
