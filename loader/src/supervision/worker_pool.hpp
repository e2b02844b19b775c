#pragma once
// The stoke-worker processes of one loader: spawning, death detection, reaping.
//
// Thread-safety: every method runs on the loader's supervisor thread, the long-lived thread that
// spawned the workers (PR_SET_PDEATHSIG fires when the *spawning thread* exits, so spawning from
// a short-lived thread would kill the workers early).
//
// Workers are started with posix_spawn (never fork of a possibly multi-threaded, CUDA-using
// process), in their own process group (Ctrl-C in a terminal reaches the training process only),
// with the arena on fd 3, the completion eventfd on fd 4, dataset d's index file on fd 5 + 2d and
// its IDX pixels file (else its index again) on fd 6 + 2d, and every other descriptor closed.
// Death is observed through one pidfd per worker: no SIGCHLD handler, no reaping of children
// the loader did not start.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "ipc/arena_layout.hpp"
#include "supervision/worker_processes.hpp"

namespace stoke::detail {

class WorkerPool final : public WorkerProcesses {
 public:
  // A dataset's descriptors: its index file, and its IDX pixels file (-1: none).
  struct DatasetFds {
    int index = -1;
    int pixels = -1;
  };
  WorkerPool(ArenaView arena, int arena_fd, int done_fd, std::vector<DatasetFds> datasets,
             std::string executable);
  ~WorkerPool() override;  // kills and reaps whatever is still running
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  const std::string& executable() const override { return executable_; }
  int size() const { return static_cast<int>(workers_.size()); }

  // Resets worker i's record (rings, semaphore, handshake) and starts a process for it.
  // REQUIRES: 0 <= i < capacity; no process running for i. Throws Error when spawning fails.
  void spawn(int i) override;
  pid_t pid(int i) const override { return workers_[i].pid; }
  int pidfd(int i) const override { return workers_[i].pidfd; }
  bool running(int i) const override { return workers_[i].pid > 0; }

  // Sends SIGKILL to worker i (through its pidfd: never to a recycled pid).
  void kill(int i) override;
  // Collects worker i's exit status. REQUIRES: its pidfd polled readable.
  WorkerExit reap(int i) override;

  // Asks every worker to stop, waits up to `grace`, then SIGKILLs and reaps the rest.
  void stop_all(std::chrono::milliseconds grace) override;

 private:
  struct Process {
    pid_t pid = -1;
    int pidfd = -1;
  };

  ArenaView arena_;
  int arena_fd_;
  int done_fd_;
  std::vector<DatasetFds> datasets_;
  std::string executable_;
  std::vector<Process> workers_;
};

// Resets worker record i in the arena: rings empty, semaphore zero, handshake cleared.
void reset_worker_record(const ArenaView& arena, std::uint32_t i);

}  // namespace stoke::detail
