// The supervisor thread: starts the workers, hands them chunks, collects their completions,
// and replaces the ones that die or hang, redoing their work without changing a byte.

#include "supervisor.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <future>

#include "common/build_info.hpp"
#include "supervision.hpp"
#include "worker/worker_exit_codes.hpp"
#include "worker/worker_locate.hpp"

namespace stoke::detail {

namespace {

constexpr int kTasksInFlightPerWorker = 4;

}  // namespace

Supervisor::Supervisor(std::shared_ptr<LoaderCore> core, const ResolvedConfig& config,
                       EventLog& log, std::unique_ptr<WorkerProcesses> workers, int done_fd)
    : core_(std::move(core)),
      config_(config),
      options_(config.options),
      log_(log),
      done_fd_(done_fd),
      workers_(std::move(workers)),
      blame_(std::span<std::int64_t>(core_->view.poisoned(), core_->view.header().poison_capacity),
             core_->view.poisoned_count()),
      workers_auto_(config.workers_auto),
      pool_(config.capacity, config.initial_workers),
      limit_workers_(config.max_workers),
      limit_reason_(config.max_workers_reason) {
  // (Clang's thread-safety analysis does not look inside constructors: no other thread exists.)
  const auto n = static_cast<std::size_t>(config.capacity);
  in_flight_.resize(n);
  startup_deaths_.assign(n, 0);
  front_since_.assign(n, Clock::time_point{});
  spawned_at_.assign(n, Clock::time_point{});
  timed_out_.assign(n, false);
}

Supervisor::~Supervisor() {
  if (thread_.joinable()) thread_.join();
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
  log_.flush();
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
      slots_wanted = std::exchange(slots_wanted_, 0);
      grow = pool_.take_growth();
    }
    if (slots_wanted > 0) {
      publish_slots(slots_wanted);
      timeout_ms = 0;  // assign the new slots straight away
    }
    log_.flush();
    spawn_growth(grow);
    fds.assign({{done_fd_, POLLIN, 0}, {core_->wake_fd, POLLIN, 0}});
    std::erase_if(watched, [&](int i) { return !workers_->running(i); });
    for (int i : watched) fds.push_back({workers_->pidfd(i), POLLIN, 0});
    poll_or_throw(fds, grow.empty() ? timeout_ms : 0);
    drain_eventfd(done_fd_);
    drain_eventfd(core_->wake_fd);
    respawn.clear();
    read_memory();
    {
      MutexLock lock(core_->mutex);
      for (int i : pool_.members()) drain_completions(i);
      // Exits first: a worker that died just at its deadline is a death, not our timeout kill.
      for (std::size_t k = 0; k < watched.size() && !core_->stop; ++k) {
        if ((fds[k + 2].revents & POLLIN) && handle_exit(watched[k])) respawn.push_back(watched[k]);
      }
      kill_stuck_workers();
      kill_unready_workers();
      if (!core_->stop) tune();
      count_starting();
      // A dead worker whose record the tuner has just retired needs no replacement.
      // (A loop, not erase_if: a lambda would be analysed as holding no lock.)
      std::vector<int> still_active;
      for (int i : respawn)
        if (pool_.active(i)) still_active.push_back(i);
      respawn.swap(still_active);
    }
    log_.flush();
    // Spawning takes a while; consumers releasing batches must not wait for it.
    for (int i : respawn) spawn(i);
  }
}

void Supervisor::publish_slots(std::size_t wanted) {
  std::string failure;
  try {
    core_->add_slots(wanted);
  } catch (const Error& e) {
    failure = e.what();
  }
  MutexLock lock(core_->mutex);
  const int now = static_cast<int>(core_->slots.size());
  if (!failure.empty())
    log_.post("kept " + std::to_string(now) + " batch slots instead of " + std::to_string(wanted) +
              ": " + failure);
  if (depth_follows_ && now != depth_follows_->from)
    decide(TuneTarget::kPrefetch, depth_follows_->from, now, depth_follows_->reason);
  depth_follows_.reset();
}

// Work goes only to workers that finished the handshake: one still starting (or hanging at
// start-up) holds nothing that another worker could have done.
void Supervisor::dispatch() {
  std::deque<Task>& pending = core_->slots.pending();
  while (!pending.empty()) {
    int best = -1;
    for (int i : pool_.members()) {
      const WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(i));
      if (!pool_.active(i) || !workers_->running(i) ||
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

void Supervisor::drain_completions(int worker) {
  WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(worker));
  auto& q = in_flight_[worker];
  Completion done;
  while (r.done.pop(done)) {
    // A worker serves its ring in order, so its completions arrive in dispatch order.
    if (q.empty() || q.front().seq != done.seq) {
      core_->fail(std::make_exception_ptr(Error("internal error: worker " + std::to_string(worker) +
                                                " completed task " + std::to_string(done.seq) +
                                                " out of order; please report this")));
      return;
    }
    const Task task = q.front();
    q.pop_front();
    if (!q.empty()) front_since_[worker] = Clock::now();
    core_->complete(task, done);
  }
}

int Supervisor::poll_timeout_ms() const {
  // With automatic sizing, evaluate even when nothing happens (a consumer that stopped asking).
  int ms = workers_auto_ || config_.prefetch_auto ? static_cast<int>(kTuneEveryS * 1000) : 1000;
  const Clock::time_point now = Clock::now();
  for (int i : pool_.members()) {
    if (timed_out_[i] || !workers_->running(i)) continue;
    const auto state = core_->view.worker(static_cast<std::uint32_t>(i)).state.load();
    if (state != WorkerRecord::kReady) {
      ms = std::min(ms, ms_until(spawned_at_[i] + startup_timeout(), now));
      continue;
    }
    if (options_.task_timeout_s <= 0 || in_flight_[i].empty()) continue;
    ms = std::min(ms, ms_until(front_since_[i] + from_seconds(options_.task_timeout_s), now));
  }
  return ms;
}

// A worker that has spent longer than the task timeout on one chunk (a decoder stuck in a loop,
// a read hanging on a dead network mount, a stopped process) is killed; the exit path then
// replaces it and redoes its work.
void Supervisor::kill_stuck_workers() {
  if (options_.task_timeout_s <= 0) return;
  const Clock::time_point now = Clock::now();
  for (int i : pool_.members()) {
    if (in_flight_[i].empty() || timed_out_[i] || !workers_->running(i)) continue;
    if (std::chrono::duration<double>(now - front_since_[i]).count() < options_.task_timeout_s)
      continue;
    const Task& t = in_flight_[i].front();
    const std::int64_t sample =
        core_->view.worker(static_cast<std::uint32_t>(i)).current_sample.load();
    const SlotInfo& s = core_->slots[static_cast<int>(t.slot)];
    const std::int64_t first = core_->view.planned_ids(t.slot)[t.begin];
    log_.post("worker " + std::to_string(i) + " (pid " + std::to_string(workers_->pid(i)) +
              ") spent more than " + seconds_text(options_.task_timeout_s) + " s on samples " +
              std::to_string(t.begin) + ".." + std::to_string(t.begin + t.count - 1) +
              " of batch " + std::to_string(s.index) + " (epoch " + std::to_string(s.epoch) + ")" +
              (sample >= 0 ? ", at " + (*core_->names)(sample)
                           : ", not yet past the first, " + (*core_->names)(first)) +
              "; killing it");
    timed_out_[i] = true;
    workers_->kill(i);
  }
}

bool Supervisor::handle_exit(int worker) {
  WorkerRecord& record = core_->view.worker(static_cast<std::uint32_t>(worker));
  const pid_t pid = workers_->pid(worker);
  const WorkerExit exit = workers_->reap(worker);
  const std::int64_t sample = record.current_sample.load();
  const bool timed_out = timed_out_[worker];
  timed_out_[worker] = false;
  drain_completions(worker);
  auto& q = in_flight_[worker];
  // A retiring worker that finished its chunks and stopped has simply retired. One that died on
  // the way out is treated like any death (its sample is blamed, its chunks redone), except
  // that no replacement starts.
  const bool retiring = pool_.retiring(worker);
  if (retiring && q.empty() && !exit.signaled && exit.status == 0) {
    retire_record(worker);
    return false;
  }
  const bool started = record.state.load() == WorkerRecord::kReady;
  const std::string how = !timed_out ? "died with " + exit.describe()
                          : started  ? "was killed for exceeding the task timeout"
                                     : "was killed for not finishing its start-up";
  log_.post("worker " + std::to_string(worker) + " (pid " + std::to_string(pid) + ") " + how +
            (sample >= 0 && !q.empty() ? " while producing " + (*core_->names)(sample) : "") +
            (retiring ? "; it was retiring, so the other workers redo its "
                      : "; restarting it and redoing ") +
            std::to_string(q.size()) + " chunk(s)");
  if (!retiring) core_->metrics.worker_restarted();
  if (!exit.signaled && exit.status == kExitVersionMismatch) {
    core_->fail(std::make_exception_ptr(
        Error(workers_->executable() + " no longer matches this library (" + worker_version_tag() +
              "); it was replaced while running: reinstall stoke and restart")));
    return false;
  }
  if (const std::string why = incurable_exit(exit); !why.empty()) {
    core_->fail(std::make_exception_ptr(Error(why)));
    return false;
  }
  if (sample >= 0 && !q.empty()) {
    const SampleBlame::Verdict v =
        blame_.blame(sample, (*core_->names)(sample), exit, timed_out, options_.on_error);
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

}  // namespace stoke::detail
