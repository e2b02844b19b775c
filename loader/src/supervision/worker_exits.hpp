#pragma once
// What a worker's death or overrun means, for the Supervisor: the log line that reports it,
// whether it fails the loader (an exit no restart cures, a sample the error policy may not skip,
// a record that keeps dying before its handshake) and which sample it blames (SampleBlame).
// WorkerExits judges and reports; the Supervisor acts on its answers (reaps, redoes chunks,
// retires records, kills, respawns).
//
// Thread-safety: the Supervisor keeps it with its pool state, under LoaderCore's mutex; each
// method takes the core and REQUIRES its mutex (checked by clang).

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "api/config.hpp"
#include "consumer/event_log.hpp"
#include "consumer/loader_core.hpp"
#include "supervision/sample_blame.hpp"
#include "supervision/worker_ledger.hpp"
#include "supervision/worker_processes.hpp"

namespace stoke::detail {

class WorkerExits {
 public:
  WorkerExits(LoaderCore& core, const Options& options, EventLog& log, std::string executable);

  // One worker's exit, reaped, with what it held.
  struct Death {
    int worker = 0;
    pid_t pid = 0;
    WorkerExit exit;
    bool timed_out = false;    // killed by the supervisor for a deadline
    bool started = false;      // past its handshake
    bool retiring = false;     // no replacement starts
    std::size_t chunks = 0;    // chunks it held, to be redone
    std::int64_t sample = -1;  // what it was producing (-1: nothing yet)
  };
  // Reports the death (a log line, the restart count) and blames its sample. False when the
  // death fails the loader (core.fail() was called): an incurable exit, a sample the error
  // policy may not skip.
  bool report(LoaderCore& core, const Death& d) REQUIRES(core.mutex);
  // Record `worker` died before its handshake: true while its deaths in a row are within the
  // start-up budget (WorkerLedger::died_starting); else fails the loader and returns false.
  bool may_restart_starting(LoaderCore& core, WorkerLedger& ledger, int worker,
                            const WorkerExit& exit, bool timed_out) REQUIRES(core.mutex);
  // A worker of the first pool died during start-up. Throws Error unless a restart may cure it
  // (a signal, within the budget); logs the restart.
  void first_start_died(LoaderCore& core, WorkerLedger& ledger, int worker, pid_t pid,
                        const WorkerExit& exit) REQUIRES(core.mutex);
  // Logs that `worker` is being killed for a deadline: `overdue`, the chunk it has held past the
  // task timeout, or nullptr when it has not finished starting in time.
  void report_overdue(LoaderCore& core, int worker, pid_t pid, const Task* overdue)
      REQUIRES(core.mutex);

 private:
  std::string incurable(LoaderCore& core, int worker, const WorkerExit& exit) const
      REQUIRES(core.mutex);  // WorkerExit::incurable, with what the worker reported

  const Options& options_;
  EventLog& log_;
  const std::string executable_;
  SampleBlame blame_;
};

}  // namespace stoke::detail
