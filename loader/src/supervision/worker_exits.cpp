// Judging a worker's death or overrun: the texts users read in the log and in errors, the blame,
// the start-up budget.

#include "supervision/worker_exits.hpp"

#include <csignal>
#include <cstring>
#include <span>
#include <utility>

#include "common/text.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

std::string who(int worker, pid_t pid) {
  return "worker " + std::to_string(worker) + " (pid " + std::to_string(pid) + ")";
}

}  // namespace

WorkerExits::WorkerExits(LoaderCore& core, const Options& options, EventLog& log,
                         std::string executable)
    : options_(options),
      log_(log),
      executable_(std::move(executable)),
      blame_(std::span<std::int64_t>(core.view.poisoned(), core.view.header().poison_capacity),
             core.view.poisoned_count()) {}

std::string WorkerExits::incurable(LoaderCore& core, int worker, const WorkerExit& exit) const {
  const WorkerRecord& r = core.view.worker(static_cast<std::uint32_t>(worker));
  return exit.incurable(executable_, {r.version, ::strnlen(r.version, sizeof r.version)});
}

bool WorkerExits::report(LoaderCore& core, const Death& d) {
  const bool producing = d.sample >= 0 && d.chunks > 0;
  const std::string how = !d.timed_out ? "died with " + d.exit.describe()
                          : d.started  ? "was killed for exceeding the task timeout"
                                       : "was killed for not finishing its start-up";
  log_.post(who(d.worker, d.pid) + " " + how +
            (producing ? " while producing " + core.names(d.sample) : "") +
            (d.retiring ? "; it was retiring, so the other workers redo its "
                        : "; restarting it and redoing ") +
            std::to_string(d.chunks) + " chunk(s)");
  if (!d.retiring) core.metrics.worker_restarted();
  if (const std::string why = incurable(core, d.worker, d.exit); !why.empty()) {
    core.fail(std::make_exception_ptr(Error(why)));
    return false;
  }
  if (!producing) return true;
  const SampleBlame::Verdict v =
      blame_.blame(d.sample, core.names(d.sample), d.exit, d.timed_out, options_.on_error);
  if (v.kind == SampleBlame::Verdict::kPoisoned) log_.post(v.message);
  if (v.kind != SampleBlame::Verdict::kFatal) return true;
  // (Two calls: a conditional expression would slice the DataError to its base.)
  if (options_.on_error == OnError::kError)
    core.fail(std::make_exception_ptr(DataError(v.message)));
  else
    core.fail(std::make_exception_ptr(Error(v.message)));
  return false;
}

bool WorkerExits::may_restart_starting(LoaderCore& core, WorkerLedger& ledger, int worker,
                                       const WorkerExit& exit, bool timed_out) {
  const bool outside_kill = exit.signaled && exit.status == SIGKILL && !timed_out;
  if (ledger.died_starting(worker, !outside_kill)) return true;
  const std::string times = std::to_string(WorkerLedger::kMaxStartupDeaths) + " times in a row";
  core.fail(std::make_exception_ptr(
      Error(timed_out ? "worker " + std::to_string(worker) + " did not finish starting within " +
                            seconds_text(options_.startup_timeout_s) + " s, " + times +
                            "; stoke-worker (" + executable_ + ") hangs at start-up"
                      : "worker " + std::to_string(worker) + " died " + times +
                            " during start-up; last death: " + exit.describe())));
  return false;
}

// One that exits with a status is not a working stoke-worker (a wrong path, a broken install)
// and no restart cures that; a crash (a signal) is replaced like any later death.
void WorkerExits::first_start_died(LoaderCore& core, WorkerLedger& ledger, int worker, pid_t pid,
                                   const WorkerExit& exit) {
  if (const std::string why = incurable(core, worker, exit); !why.empty()) throw Error(why);
  if (!exit.signaled)
    throw Error("stoke-worker (" + executable_ + ") exited during start-up with " +
                exit.describe());
  if (!may_restart_starting(core, ledger, worker, exit, false)) core.rethrow_if_failed();
  log_.post(who(worker, pid) + " died with " + exit.describe() + " during start-up; restarting it");
}

void WorkerExits::report_overdue(LoaderCore& core, int worker, pid_t pid, const Task* overdue) {
  if (overdue == nullptr) {
    log_.post(who(worker, pid) + " did not finish starting within " +
              seconds_text(options_.startup_timeout_s) + " s; killing it");
    return;
  }
  const Task& t = *overdue;
  const std::int64_t sample =
      core.view.worker(static_cast<std::uint32_t>(worker)).current_sample.load();
  const SlotInfo& s = core.slots[static_cast<int>(t.slot)];
  const std::int64_t first = core.view.planned_ids(t.slot)[t.begin];
  log_.post(who(worker, pid) + " spent more than " + seconds_text(options_.task_timeout_s) +
            " s on samples " + std::to_string(t.begin) + ".." +
            std::to_string(t.begin + t.count - 1) + " of batch " + std::to_string(s.index) +
            " (epoch " + std::to_string(s.epoch) + ")" +
            (sample >= 0 ? ", at " + core.names(sample)
                         : ", not yet past the first, " + core.names(first)) +
            "; killing it");
}

}  // namespace stoke::detail
