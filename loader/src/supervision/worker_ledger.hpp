#pragma once
// What each worker record of the pool holds and owes, for the Supervisor: the chunks handed to
// it, in dispatch order (a worker serves its ring in order, so completions come back in that
// order), the deadlines they and its start-up run against, and its deaths before the handshake
// in a row. Bookkeeping only: no processes, no lock of its own (the Supervisor keeps it under
// LoaderCore's mutex), and the time is always passed in, so these rules are tested without a
// worker or a clock (worker_ledger_test.cpp).
//
// Invariants: a record holds at most kTasksPerWorker chunks; the task deadline runs from the
// moment its oldest chunk became the oldest; a record killed for a deadline is not judged again
// until its exit is handled.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "common/time_source.hpp"
#include "ipc/arena_layout.hpp"

namespace stoke::detail {

class WorkerLedger {
 public:
  using Clock = TimeSource::Clock;
  static constexpr std::size_t kTasksPerWorker = 4;  // in a worker's ring or in its hands
  // Deaths of one record before its handshake, in a row, before the loader gives up.
  static constexpr int kMaxStartupDeaths = 5;

  // `capacity` records. `task_timeout` zero: chunks have no deadline.
  WorkerLedger(int capacity, Clock::duration task_timeout, Clock::duration startup_timeout);

  // ---- chunks
  const std::deque<Task>& held(int i) const { return at(i).in_flight; }
  // Of `candidates` (records that may take work now), the one holding the fewest chunks, the
  // first of them on a tie; -1 when each holds kTasksPerWorker already.
  int least_loaded(const std::vector<int>& candidates) const;
  void hand(int i, const Task& t, Clock::time_point now);
  // Record i completed chunk `seq`: that chunk, or nullopt when it is not the oldest it holds
  // (out of order, which stoke-worker never does).
  std::optional<Task> complete(int i, std::uint64_t seq, Clock::time_point now);
  // Everything record i held, oldest first; it holds nothing afterwards (its worker died).
  std::deque<Task> take(int i);

  // ---- deadlines
  // Record i's process started now: its handshake's deadline runs from here.
  void spawned(int i, Clock::time_point now) { at(i).spawned_at = now; }
  // The supervisor killed record i's worker for a deadline; take_killed() reads and clears it
  // when the exit is handled.
  void killed_for_deadline(int i) { at(i).killed = true; }
  bool take_killed(int i);
  // Past its handshake, record i has held its oldest chunk past the task timeout.
  bool task_overdue(int i, Clock::time_point now) const;
  // Not past its handshake, record i's worker passed the start-up deadline.
  bool startup_overdue(int i, Clock::time_point now) const;
  // When record i's next deadline passes (`ready`: past its handshake), or nullopt.
  std::optional<Clock::time_point> deadline(int i, bool ready) const;

  // ---- the start-up budget
  // Record i's worker died before its handshake; `counts` is false for a SIGKILL from outside
  // (an operator, the OOM killer). True while the deaths in a row are within the budget.
  bool died_starting(int i, bool counts);
  // Its worker finished the handshake, or the record has a new occupant: a new run of deaths.
  void reset_startup(int i) { at(i).startup_deaths = 0; }

 private:
  struct Record {
    std::deque<Task> in_flight;
    Clock::time_point front_since{};  // when in_flight.front() became the oldest
    Clock::time_point spawned_at{};
    bool killed = false;
    int startup_deaths = 0;
  };
  Record& at(int i) { return records_[static_cast<std::size_t>(i)]; }
  const Record& at(int i) const { return records_[static_cast<std::size_t>(i)]; }

  const Clock::duration task_timeout_;
  const Clock::duration startup_timeout_;
  std::vector<Record> records_;
};

}  // namespace stoke::detail
