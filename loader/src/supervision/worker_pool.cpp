#include "supervision/worker_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <new>

#include "common/fd.hpp"
#include "stoke/error.hpp"
#include "worker/worker_exit_codes.hpp"
#include "worker/worker_locate.hpp"

extern char** environ;

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace stoke::detail {
namespace {

int pidfd_open(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

}  // namespace

std::string WorkerExit::describe() const {
  if (!signaled && status < 0) return "an unknown status (reaped elsewhere)";
  if (!signaled) return "exit code " + std::to_string(status);
  const char* name = ::strsignal(status);
  return "signal " + std::to_string(status) + " (" + (name != nullptr ? name : "?") + ")";
}

std::string WorkerExit::incurable(const std::string& executable, std::string_view version) const {
  if (signaled) return "";
  if (status == kExitBadArena)
    return "stoke-worker could not map the shared arena; check memory limits (ulimit -v, "
           "cgroup memory) and seccomp filters";
  if (status != kExitVersionMismatch) return "";
  return executable + " is " +
         (version.empty() ? std::string("another version") : "version " + std::string(version)) +
         " but this library is " + worker_version_tag() +
         "; install the stoke-worker that came with this library";
}

void reset_worker_record(const ArenaView& arena, std::uint32_t i) {
  WorkerRecord* record = &arena.worker(i);
  // The previous occupant is dead, so nobody is inside the semaphore; re-create everything.
  std::destroy_at(record);
  new (record) WorkerRecord();
}

WorkerPool::WorkerPool(ArenaView arena, int arena_fd, int done_fd, std::vector<DatasetFds> datasets,
                       std::string executable)
    : arena_(arena),
      arena_fd_(arena_fd),
      done_fd_(done_fd),
      datasets_(std::move(datasets)),
      executable_(std::move(executable)),
      workers_(arena.header().worker_capacity) {}

WorkerPool::~WorkerPool() {
  stop_all(std::chrono::milliseconds(0));
}

void WorkerPool::spawn(int i) {
  reset_worker_record(arena_, static_cast<std::uint32_t>(i));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, arena_fd_, 3);
  posix_spawn_file_actions_adddup2(&actions, done_fd_, 4);
  // (Every descriptor given is raised above the numbers given out: common/fd.hpp.)
  static_assert(5 + 2 * kMaxDatasets <= kFirstRaisedFd);
  int next = 5;
  for (const DatasetFds& d : datasets_) {
    posix_spawn_file_actions_adddup2(&actions, d.index, next++);
    posix_spawn_file_actions_adddup2(&actions, d.pixels >= 0 ? d.pixels : d.index, next++);
  }
  posix_spawn_file_actions_addclosefrom_np(&actions, next);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT, SIGUSR1, SIGUSR2})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_USEVFORK);

  const std::string index = std::to_string(i);
  const std::string parent = std::to_string(::getpid());
  char* argv[] = {const_cast<char*>(executable_.c_str()), const_cast<char*>("--worker"),
                  const_cast<char*>(index.c_str()),       const_cast<char*>("--parent"),
                  const_cast<char*>(parent.c_str()),      nullptr};
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, executable_.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    throw Error("cannot start worker " + executable_ + ": " + std::strerror(err) +
                (err == ENOENT   ? " (reinstall stoke, or set the worker path)"
                 : err == EACCES ? " (the file is not executable: chmod +x it)"
                                 : ""));
  }
  const int fd = pidfd_open(pid);
  if (fd < 0) {
    const int e = errno;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw Error(std::string("pidfd_open failed for a worker: ") + std::strerror(e) +
                (e == EMFILE ? " (raise the open-file limit: ulimit -n)"
                             : " (stoke needs Linux 5.4 or newer)"));
  }
  try {
    workers_[i] = Process{pid, raise_fd(fd, "a worker pidfd")};
  } catch (...) {
    // Never leave a running worker untracked: it would pin the arena and use record i.
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw;
  }
}

void WorkerPool::kill(int i) {
  if (workers_[i].pidfd >= 0)
    ::syscall(SYS_pidfd_send_signal, workers_[i].pidfd, SIGKILL, nullptr, 0);
}

WorkerExit WorkerPool::reap(int i) {
  Process& p = workers_[i];
  siginfo_t info{};
  WorkerExit exit;
  int rc;
  do {
    rc = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(p.pidfd), &info, WEXITED);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) {
    exit.signaled = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
    exit.status = info.si_status;
  } else {
    // Someone else reaped it (a SIGCHLD handler of the host program, or SIG_IGN).
    int status = 0;
    if (::waitpid(p.pid, &status, WNOHANG) == p.pid) {
      exit.signaled = WIFSIGNALED(status);
      exit.status = exit.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
    } else {
      exit.signaled = false;
      exit.status = -1;
    }
  }
  ::close(p.pidfd);
  p = Process{};
  return exit;
}

void WorkerPool::stop_all(std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].pid <= 0) continue;
    WorkerRecord& r = arena_.worker(static_cast<std::uint32_t>(i));
    Task stop;
    stop.kind = Task::kStop;
    if (r.tasks.push(stop)) r.tasks_posted.post();
  }
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].pid <= 0) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd pfd{workers_[i].pidfd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) != 1) {
      ::syscall(SYS_pidfd_send_signal, workers_[i].pidfd, SIGKILL, nullptr, 0);
    }
    reap(static_cast<int>(i));
  }
}

}  // namespace stoke::detail
