// PoolController: the pool's roles and how resizes move them, with no process.

#include "supervision/pool_controller.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace stoke::detail {
namespace {

using Role = PoolController::Role;

std::vector<Role> roles(const PoolController& p) {
  std::vector<Role> r;
  for (int i = 0; i < p.capacity(); ++i) r.push_back(p.role(i));
  return r;
}

constexpr Role I = Role::kIdle;
constexpr Role A = Role::kActive;
constexpr Role R = Role::kRetiring;

TEST(PoolController, TheInitialPoolIsActiveAndNeedsNoGrowth) {
  PoolController p(4, 2);
  EXPECT_EQ(p.size(), 2);
  EXPECT_EQ(roles(p), (std::vector<Role>{A, A, I, I}));
  EXPECT_EQ(p.members(), (std::vector<int>{0, 1}));
  EXPECT_TRUE(p.take_growth().empty());
}

TEST(PoolController, GrowingActivatesTheLowestIdleRecordsAndQueuesThemForSpawning) {
  PoolController p(5, 1);
  EXPECT_EQ(p.resize(3), 3);
  EXPECT_EQ(roles(p), (std::vector<Role>{A, A, A, I, I}));
  EXPECT_EQ(p.take_growth(), (std::vector<int>{1, 2}));
  EXPECT_TRUE(p.take_growth().empty()) << "growth is handed out once";
  EXPECT_EQ(p.members(), (std::vector<int>{0, 1, 2}));
}

TEST(PoolController, ShrinkingRetiresTheHighestActiveRecords) {
  PoolController p(4, 4);
  EXPECT_EQ(p.resize(2), 2);
  EXPECT_EQ(roles(p), (std::vector<Role>{A, A, R, R}));
  EXPECT_EQ(p.members(), (std::vector<int>{0, 1, 2, 3})) << "retiring records are members";
  EXPECT_EQ(p.retiring_not_stopped(), (std::vector<int>{2, 3}));
  EXPECT_TRUE(p.take_growth().empty());
}

TEST(PoolController, RetiringRecordsNotYetStoppedComeBackBeforeIdleOnesStart) {
  PoolController p(4, 3);
  p.resize(1);  // 1 and 2 retire
  p.stop_sent(2);
  EXPECT_EQ(p.retiring_not_stopped(), (std::vector<int>{1}));
  p.resize(3);
  // 1 comes back (no process to start); 2 was told to stop, so 3 is started instead.
  EXPECT_EQ(roles(p), (std::vector<Role>{A, A, R, A}));
  EXPECT_EQ(p.take_growth(), (std::vector<int>{3}));
  EXPECT_EQ(p.members(), (std::vector<int>{0, 1, 2, 3}));
  p.retired(2);  // its stop arrived
  EXPECT_EQ(roles(p), (std::vector<Role>{A, A, I, A}));
  EXPECT_EQ(p.members(), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(p.size(), 3);
}

TEST(PoolController, SizesAreClampedToOneAndTheCapacity) {
  PoolController p(3, 2);
  EXPECT_EQ(p.resize(0), 1);
  EXPECT_EQ(roles(p), (std::vector<Role>{A, R, I}));
  EXPECT_EQ(p.resize(9), 3);
  EXPECT_EQ(roles(p), (std::vector<Role>{A, A, A}));
  EXPECT_EQ(p.take_growth(), (std::vector<int>{2}));
}

TEST(PoolController, ARecordRetiredBeforeItWasSpawnedLeavesTheGrowthQueue) {
  PoolController p(4, 1);
  p.resize(3);  // 1 and 2 queued
  p.resize(1);  // and retire again before the supervisor spawned them
  EXPECT_EQ(roles(p), (std::vector<Role>{A, R, R, I}));
  for (int i : p.retiring_not_stopped()) p.retired(i);  // no process: straight to idle
  EXPECT_TRUE(p.take_growth().empty());
  EXPECT_EQ(p.members(), (std::vector<int>{0}));
  EXPECT_EQ(p.size(), 1);
}

TEST(PoolController, AFailedSpawnShrinksThePoolButNeverBelowOne) {
  PoolController p(4, 1);
  p.resize(3);
  const std::vector<int> grow = p.take_growth();
  ASSERT_EQ(grow, (std::vector<int>{1, 2}));
  p.spawn_failed(2);
  EXPECT_EQ(p.size(), 2);
  EXPECT_EQ(roles(p), (std::vector<Role>{A, A, I, I}));
  EXPECT_EQ(p.members(), (std::vector<int>{0, 1}));
  PoolController q(2, 1);
  q.spawn_failed(0);
  EXPECT_EQ(q.size(), 1);
}

TEST(PoolController, AResizeToTheCurrentSizeChangesNothing) {
  PoolController p(4, 2);
  p.resize(3);
  (void)p.take_growth();
  const std::vector<Role> before = roles(p);
  EXPECT_EQ(p.resize(3), 3);
  EXPECT_EQ(roles(p), before);
  EXPECT_TRUE(p.take_growth().empty());
}

}  // namespace
}  // namespace stoke::detail
