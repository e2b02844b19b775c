// WorkerLedger on its own: which worker gets a chunk, completions in order, the task and
// handshake deadlines against a time the test sets, and the start-up budget. No process, no
// clock.
#include "supervision/worker_ledger.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace stoke::detail {
namespace {

using namespace std::chrono_literals;
using Clock = WorkerLedger::Clock;

Task task(std::uint64_t seq) {
  Task t;
  t.seq = seq;
  return t;
}

const Clock::time_point t0{};

TEST(WorkerLedger, AChunkGoesToTheLeastLoadedCandidateTheFirstOnATie) {
  WorkerLedger l(3, 0s, 30s);
  EXPECT_EQ(l.least_loaded({}), -1);
  EXPECT_EQ(l.least_loaded({1, 2}), 1);
  l.hand(1, task(1), t0);
  EXPECT_EQ(l.least_loaded({1, 2}), 2);
  l.hand(2, task(2), t0);
  EXPECT_EQ(l.least_loaded({2, 1}), 2);  // the first of the equals, in the caller's order
  for (std::uint64_t s = 3; s < 9; ++s) l.hand(s % 2 == 0 ? 2 : 1, task(s), t0);
  EXPECT_EQ(l.held(1).size(), WorkerLedger::kTasksPerWorker);
  EXPECT_EQ(l.held(2).size(), WorkerLedger::kTasksPerWorker);
  EXPECT_EQ(l.least_loaded({1, 2}), -1);  // both full
  EXPECT_EQ(l.least_loaded({1, 2, 0}), 0);
}

TEST(WorkerLedger, CompletionsComeBackInDispatchOrderOrAreRefused) {
  WorkerLedger l(1, 10s, 30s);
  l.hand(0, task(7), t0);
  l.hand(0, task(8), t0 + 1s);
  EXPECT_FALSE(l.complete(0, 8, t0 + 2s).has_value());  // not the oldest
  ASSERT_TRUE(l.complete(0, 7, t0 + 3s).has_value());
  // Chunk 8 became the oldest at 3 s: its deadline counts from there, not from its hand-over.
  EXPECT_FALSE(l.task_overdue(0, t0 + 12s));
  EXPECT_TRUE(l.task_overdue(0, t0 + 13s));
  EXPECT_EQ(l.deadline(0, true), t0 + 13s);
  ASSERT_TRUE(l.complete(0, 8, t0 + 4s).has_value());
  EXPECT_TRUE(l.held(0).empty());
  EXPECT_FALSE(l.complete(0, 9, t0 + 5s).has_value());
}

TEST(WorkerLedger, AKilledWorkerIsNotJudgedAgainUntilItsExitIsHandled) {
  WorkerLedger l(1, 10s, 30s);
  l.hand(0, task(1), t0);
  EXPECT_TRUE(l.task_overdue(0, t0 + 10s));
  l.killed_for_deadline(0);
  EXPECT_FALSE(l.task_overdue(0, t0 + 20s));
  EXPECT_FALSE(l.deadline(0, true).has_value());
  EXPECT_TRUE(l.take_killed(0));
  EXPECT_FALSE(l.take_killed(0));
  const std::deque<Task> held = l.take(0);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held.front().seq, 1u);
  EXPECT_TRUE(l.held(0).empty());
}

TEST(WorkerLedger, WithoutATaskTimeoutOnlyTheHandshakeHasADeadline) {
  WorkerLedger l(1, 0s, 30s);
  l.spawned(0, t0 + 5s);
  EXPECT_EQ(l.deadline(0, false), t0 + 35s);
  EXPECT_FALSE(l.startup_overdue(0, t0 + 34s));
  EXPECT_TRUE(l.startup_overdue(0, t0 + 35s));
  l.hand(0, task(1), t0);
  EXPECT_FALSE(l.deadline(0, true).has_value());
  EXPECT_FALSE(l.task_overdue(0, t0 + 1000s));
}

TEST(WorkerLedger, TheStartUpBudgetCountsDeathsInARowButNotOutsideKills) {
  WorkerLedger l(1, 0s, 30s);
  for (int i = 1; i < WorkerLedger::kMaxStartupDeaths; ++i) EXPECT_TRUE(l.died_starting(0, true));
  EXPECT_TRUE(l.died_starting(0, false));  // an outside SIGKILL: not counted
  EXPECT_FALSE(l.died_starting(0, true));  // the fifth
  l.reset_startup(0);
  EXPECT_TRUE(l.died_starting(0, true));
}

}  // namespace
}  // namespace stoke::detail
