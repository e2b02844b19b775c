#pragma once
// The worker processes the supervisor drives, as an interface: WorkerPool (worker_pool.hpp)
// starts real stoke-worker processes; tests put in stand-ins that run as threads and die,
// hang or refuse their handshake on cue, so that the supervisor's logic can be tested without
// a single process (as LevelDB's Env stands in for the file system).
//
// Thread-safety: every method is called by the supervisor thread only.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>

namespace stoke::detail {

struct WorkerExit {
  bool signaled = false;
  int status = 0;                // exit code, or signal number when signaled
  std::string describe() const;  // "exit code 3", "signal 9 (Killed)" or "an unknown status"
  // The message for an exit no restart cures, or "" for any other: a worker of another version
  // (`version`: what it reported, "" when it could not read the arena's header at all), one
  // that cannot map the arena.
  std::string incurable(const std::string& executable, std::string_view version) const;
};

class WorkerProcesses {
 public:
  virtual ~WorkerProcesses() = default;

  virtual const std::string& executable() const = 0;
  // Resets worker i's record (rings, semaphore, handshake) and starts a process for it.
  // REQUIRES: no process running for i. Throws Error when starting fails.
  virtual void spawn(int i) = 0;
  virtual pid_t pid(int i) const = 0;
  // Readable (POLLIN) once worker i has exited; -1 when none is running.
  virtual int pidfd(int i) const = 0;
  virtual bool running(int i) const = 0;
  // Sends SIGKILL to worker i.
  virtual void kill(int i) = 0;
  // Collects worker i's exit status. REQUIRES: its pidfd polled readable.
  virtual WorkerExit reap(int i) = 0;
  // Asks every worker to stop, waits up to `grace`, then kills and reaps the rest.
  virtual void stop_all(std::chrono::milliseconds grace) = 0;
};

}  // namespace stoke::detail
