// The shard prefetcher's walk (prefetch/shard_walk.hpp) on its own: no threads, no clock, no
// files. A plan of the test's, records in chosen states, and what a counted use finds on disk
// given by the test; each test checks a decision the walk makes: which shards are wanted and in
// which order, the limit, the blind stop at a shard it cannot size, which uses are counted, the
// ready range.
#include "prefetch/shard_walk.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "plan/epoch_plan.hpp"
#include "prefetch/batches_ahead.hpp"
#include "prefetch/prefetch_shard.hpp"

namespace stoke {
namespace {

using detail::BatchesAhead;
using detail::EpochPlan;
using detail::PlanConfig;
using detail::PrefetchShard;
using detail::ShardState;
using detail::ShardWalk;
using Shards = std::vector<std::size_t>;
using namespace std::chrono_literals;

constexpr std::uint64_t kShardBytes = 1000;
constexpr std::uint64_t kNoLimit = std::uint64_t{1} << 40;

// `shards` shards of `per_shard` samples each, batches of `batch`, in order unless `window` > 0
// (then shuffled, `window` shards to a window).
PlanConfig plan_of(int shards, int per_shard, int batch, int window = -1) {
  PlanConfig plan;
  plan.samples = std::int64_t{shards} * per_shard;
  plan.batch = batch;
  plan.shuffle = window >= 0;
  plan.shuffle_window = std::max(window, 0);
  plan.seed = 7;
  for (int s = 0; s <= shards; ++s) plan.shard_starts.push_back(std::int64_t{s} * per_shard);
  return plan;
}

// One record per shard of the plan (r = the shard's index), each kShardBytes and in `state`.
std::vector<PrefetchShard> records(const PlanConfig& plan, ShardState state = ShardState::kAbsent) {
  std::vector<PrefetchShard> out(plan.shard_starts.size() - 1);
  for (std::size_t r = 0; r < out.size(); ++r) {
    out[r].remote.shard = r;
    out[r].remote.size = kShardBytes;
    out[r].state = state;
  }
  return out;
}

// A record's state after a counted use that finds its copy on disk or not, as
// ShardPrefetcher::count_use leaves it: a copy found makes an absent shard local, a copy gone
// makes a local one absent (evicted elsewhere); shards not cached or being fetched stay so.
ShardState after_use(ShardState s, bool on_disk) {
  if (s == ShardState::kUncached || s == ShardState::kFetching) return s;
  if (s == ShardState::kAbsent && on_disk) return ShardState::kLocal;
  if (s == ShardState::kLocal && !on_disk) return ShardState::kAbsent;
  return s;
}

// A walk as the prefetcher runs one: what a counted use finds on disk is `on_disk`.
struct Walked {
  ShardWalk::Result result;
  std::vector<Shards> uses;  // each walked batch's first uses
  Shards counted() const {
    Shards all;
    for (const Shards& u : uses) all.insert(all.end(), u.begin(), u.end());
    return all;
  }
};

class ShardWalkTest : public ::testing::Test {
 protected:
  void set_up(const PlanConfig& config, ShardState state = ShardState::kAbsent) {
    plan_ = std::make_unique<EpochPlan>(config);
    shards_ = records(config, state);
    remote_of_.clear();
    for (std::size_t s = 0; s < shards_.size(); ++s) remote_of_.push_back(static_cast<int>(s));
  }

  // The walk from batch `next_seq`, with [next_seq, ready_end) ready, over `reach` batches.
  ShardWalk::Start start(std::int64_t next_seq, std::uint64_t limit, std::int64_t ready_end = -1,
                         std::int64_t reach = -1) const {
    ShardWalk::Start s;
    s.next_seq = next_seq;
    s.ready_end = ready_end < 0 ? next_seq : ready_end;
    s.horizon = next_seq + (reach < 0 ? 2 * plan_->batches_per_epoch() : reach);
    s.ready_horizon = s.horizon;
    s.limit = limit;
    s.now = now_;
    s.retry_after_s = 30;
    return s;
  }

  Walked walk(const ShardWalk::Start& s, const std::set<std::size_t>& on_disk = {}) {
    ahead_ = std::make_unique<BatchesAhead>(plan_->batches_per_epoch());
    ahead_->read(detail::EpochPrefetchPlan(*plan_), 0, s.next_seq, s.horizon);
    ShardWalk w(*ahead_, shards_, remote_of_, s);
    Walked out;
    while (w.next_batch()) {
      out.uses.push_back(w.first_uses());
      for (std::size_t r : w.first_uses())
        w.found(r, after_use(shards_[r].state, on_disk.contains(r)));
    }
    out.result = w.result();
    return out;
  }

  // The shards batches [from, to) read, each once, in the order their samples come.
  Shards read_by_batches(std::int64_t from, std::int64_t to) {
    const std::int64_t per_epoch = plan_->batches_per_epoch();
    const auto& starts = plan_->config().shard_starts;
    Shards out;
    std::vector<std::int64_t> ids(static_cast<std::size_t>(plan_->config().batch));
    std::vector<std::uint8_t> valid(ids.size());
    for (std::int64_t seq = from; seq < to; ++seq) {
      plan_->batch(seq / per_epoch, seq % per_epoch, ids, valid);
      for (std::int64_t id : ids) {
        const auto shard = static_cast<std::size_t>(
            std::upper_bound(starts.begin(), starts.end(), id) - starts.begin() - 1);
        if (std::find(out.begin(), out.end(), shard) == out.end()) out.push_back(shard);
      }
    }
    return out;
  }

  std::unique_ptr<EpochPlan> plan_;
  std::unique_ptr<BatchesAhead> ahead_;
  std::vector<PrefetchShard> shards_;
  std::vector<int> remote_of_;
  const detail::TimeSource::Clock::time_point now_ = detail::TimeSource::Clock::time_point(1h);
};

// Four shards in order, one a batch: from batch 2, the walk wants 2 and 3, then (the next epoch)
// 0 and 1, and stops once every shard is wanted.
TEST_F(ShardWalkTest, WantsTheShardsInTheOrderTheBatchesReadThem) {
  set_up(plan_of(4, 8, 8));
  const Walked w = walk(start(2, kNoLimit));
  EXPECT_EQ(w.result.order, (Shards{2, 3, 0, 1}));
  EXPECT_EQ(w.result.wanted, (std::vector<char>{1, 1, 1, 1}));
  EXPECT_EQ(w.uses.size(), 4u);  // batches 2 to 5: at 6, every shard is wanted
  EXPECT_FALSE(w.result.plan_further);
}

// Shuffled, one shard a window, a batch reading about three: the order is the one in which the
// batches' samples come from the shards (read here from the plan's sample ids, not from its
// windows).
TEST_F(ShardWalkTest, FollowsAShuffledPlanShardByShard) {
  set_up(plan_of(12, 3, 8, /*window=*/1));
  const Walked w = walk(start(0, kNoLimit, 0, plan_->batches_per_epoch()));
  const Shards expected = read_by_batches(0, plan_->batches_per_epoch());
  ASSERT_EQ(expected.size(), 12u);
  ASSERT_NE(expected, (Shards{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));  // (it is shuffled)
  EXPECT_EQ(w.result.order, expected);
}

// Windows of two shards: a batch that reads one shard of a window wants both, in the window's
// order, and is ready only when both are on disk.
TEST_F(ShardWalkTest, WantsAWindowWholeAndIsReadyOnlyWhenAllOfItIsLocal) {
  set_up(plan_of(4, 8, 8, /*window=*/2));
  const std::vector<detail::ShardWindow> windows = plan_->shard_windows(0);
  ASSERT_EQ(windows.size(), 2u);
  const Shards first = windows[0].shards;
  const Shards second = windows[1].shards;
  Shards both = first;
  both.insert(both.end(), second.begin(), second.end());
  EXPECT_EQ(walk(start(0, kNoLimit, 0, 4)).result.order, both);

  // Batch 0 reads the window's first 8 positions; its mate's copy is missing: not ready.
  shards_[first[0]].state = ShardState::kLocal;
  shards_[first[1]].state = ShardState::kAbsent;
  EXPECT_EQ(walk(start(0, kNoLimit, 0, 4)).result.ready_end, 0);
  shards_[first[1]].state = ShardState::kLocal;
  // (Their copies are there when their uses are counted.)
  const std::set<std::size_t> there(first.begin(), first.end());
  EXPECT_EQ(walk(start(0, kNoLimit, 0, 4), there).result.ready_end, 2);  // batches 0 and 1
}

// A limit of two and a half shards: past the ready range, shards are wanted while their bytes
// fit; the batch the consumer waits for is wanted past it.
TEST_F(ShardWalkTest, StopsAtTheLimitButAlwaysWantsTheBatchTheConsumerWaitsFor) {
  set_up(plan_of(4, 8, 8));
  const Walked fits = walk(start(0, 5 * kShardBytes / 2));
  EXPECT_EQ(fits.result.order, (Shards{0, 1}));
  EXPECT_EQ(fits.result.wanted, (std::vector<char>{1, 1, 0, 0}));
  EXPECT_FALSE(fits.result.plan_further);

  // A limit smaller than one shard: the consumer's batch is wanted all the same, and no other.
  EXPECT_EQ(walk(start(1, kShardBytes / 2)).result.order, (Shards{1}));
}

// Shards on disk make batches ready, and a ready batch's shards are wanted past the limit (kept
// from eviction); the first batch not ready is wanted too, and the ready range stops before it.
TEST_F(ShardWalkTest, TheReadyRangeGrowsOverLocalBatchesAndTheirShardsPassTheLimit) {
  set_up(plan_of(4, 8, 8));
  shards_[0].state = shards_[1].state = shards_[2].state = ShardState::kLocal;
  const Walked w = walk(start(0, kShardBytes, 0, 8), {0, 1, 2});
  EXPECT_EQ(w.result.ready_end, 3);
  EXPECT_EQ(w.result.order, (Shards{0, 1, 2, 3}));

  // The same with nothing on disk: only the consumer's batch, and nothing is ready.
  set_up(plan_of(4, 8, 8));
  const Walked none = walk(start(0, kShardBytes, 0, 8));
  EXPECT_EQ(none.result.ready_end, 0);
  EXPECT_EQ(none.result.order, (Shards{0}));
}

// What the caller finds on disk at a counted use decides whether the batch is ready: records
// that say kAbsent, copies that another loader fetched.
TEST_F(ShardWalkTest, AUseFoundOnDiskMakesItsBatchReady) {
  set_up(plan_of(4, 8, 8));
  EXPECT_EQ(walk(start(0, kNoLimit, 0, 4)).result.ready_end, 0);
  EXPECT_EQ(walk(start(0, kNoLimit, 0, 4), {0, 1}).result.ready_end, 2);
}

// The ready range stops at the ready horizon (what the arena's slots hold ahead), though every
// shard is on disk.
TEST_F(ShardWalkTest, TheReadyRangeStopsAtTheReadyHorizon) {
  set_up(plan_of(4, 8, 8), ShardState::kLocal);
  std::set<std::size_t> all;
  for (std::size_t r = 0; r < shards_.size(); ++r) all.insert(r);
  ShardWalk::Start s = start(0, kNoLimit, 0, 8);
  s.ready_horizon = 2;
  EXPECT_EQ(walk(s, all).result.ready_end, 2);
  s.ready_horizon = 8;
  EXPECT_EQ(walk(s, all).result.ready_end, 8);  // (the next epoch's batches too)
  // A counted use that finds a local copy gone (evicted by another loader) holds its batch
  // back: none of these copies is there any more, so no batch is ready.
  EXPECT_EQ(walk(s, {}).result.ready_end, 0);
}

// Uses are counted in the consumer's epoch only, each shard once an epoch: at batch 2 of an
// epoch of 4, shards 2 and 3 are this epoch's (3 already counted), 0 and 1 the next epoch's.
TEST_F(ShardWalkTest, CountsEachUseOnceAnEpochAndOnlyInTheConsumersEpoch) {
  set_up(plan_of(4, 8, 8));
  shards_[3].counted_epoch = 0;
  const Walked w = walk(start(2, kNoLimit));
  EXPECT_EQ(w.counted(), (Shards{2}));
  ASSERT_FALSE(w.uses.empty());
  EXPECT_EQ(w.uses[0], (Shards{2}));  // counted at the batch that reads it first

  // In the next epoch, last epoch's count does not hold.
  const Walked next = walk(start(4, kNoLimit));
  EXPECT_EQ(next.counted(), (Shards{0, 1, 2, 3}));
}

// Shard 1 cannot be sized yet: it is looked up, and the walk wants nothing past it (shard 0 only),
// so the limit holds; the shards after it are only looked at.
TEST_F(ShardWalkTest, WantsNothingPastAShardItCannotSize) {
  set_up(plan_of(4, 8, 8));
  shards_[1].state = ShardState::kUnresolved;
  shards_[1].remote.size = 0;
  const Walked w = walk(start(0, kNoLimit));
  EXPECT_EQ(w.result.order, (Shards{0}));
  EXPECT_EQ(w.result.look_ups, (Shards{1}));
  EXPECT_TRUE(w.result.retried.empty());
  EXPECT_FALSE(w.result.plan_further);  // (blind: sizes, not the plan, are wanting)
  EXPECT_EQ(w.counted(), (Shards{0}));

  // Being looked up already: not queued again, and still blind.
  shards_[1].state = ShardState::kResolving;
  const Walked again = walk(start(0, kNoLimit));
  EXPECT_EQ(again.result.order, (Shards{0}));
  EXPECT_TRUE(again.result.look_ups.empty());
}

// Many unresolved shards, four to a batch: look-ups are queued in the order met, up to
// kResolveAhead in all (those under way count), within a batch too; then the walk stops.
TEST_F(ShardWalkTest, QueuesLookUpsInTheOrderMetUpToTheirBound) {
  set_up(plan_of(40, 2, 8), ShardState::kUnresolved);
  const Walked w = walk(start(0, kNoLimit));
  Shards first(ShardWalk::kResolveAhead);
  for (std::size_t i = 0; i < first.size(); ++i) first[i] = i;
  EXPECT_EQ(w.result.look_ups, first);
  EXPECT_TRUE(w.result.order.empty());
  EXPECT_EQ(w.uses.size(), 4u);  // batches 0 to 3: then the bound is reached

  ShardWalk::Start s = start(0, kNoLimit);
  s.resolving = ShardWalk::kResolveAhead - 2;
  const Walked two = walk(s);
  EXPECT_EQ(two.result.look_ups, (Shards{0, 1}));
  EXPECT_EQ(two.uses.size(), 1u);
}

// Past the first shard it cannot size, the walk looks at kBlindLook more shards for look-ups to
// queue, and no more: on a huge plan, a blind walk costs a bounded time.
TEST_F(ShardWalkTest, LooksAtABoundedNumberOfShardsPastTheFirstItCannotSize) {
  set_up(plan_of(5000, 1, 1));
  shards_[0].state = ShardState::kUnresolved;
  const Walked w = walk(start(0, kNoLimit));
  EXPECT_EQ(w.result.look_ups, (Shards{0}));
  EXPECT_TRUE(w.result.order.empty());
  EXPECT_EQ(w.uses.size(), ShardWalk::kBlindLook + 2);  // shard 0's batch, then one past the bound
}

// A failed look-up is tried again once the deadline has passed since it failed, when the walk
// meets it past the ready range; not sooner, and not for a batch already ready.
TEST_F(ShardWalkTest, TriesAFailedLookUpAgainOnceTheDeadlineHasPassed) {
  set_up(plan_of(4, 8, 8));
  shards_[2].state = ShardState::kUncached;
  shards_[2].lookup_failed = true;
  shards_[2].remote.size = 0;

  shards_[2].failed_at = now_ - 10s;  // the deadline is 30 s
  const Walked recent = walk(start(0, kNoLimit));
  EXPECT_TRUE(recent.result.retried.empty());
  EXPECT_EQ(recent.result.order, (Shards{0, 1, 2, 3}));  // (read from the server meanwhile)

  shards_[2].failed_at = now_ - 31s;
  const Walked due = walk(start(0, kNoLimit));
  EXPECT_EQ(due.result.retried, (Shards{2}));
  EXPECT_EQ(due.result.look_ups, (Shards{2}));
  EXPECT_EQ(due.result.order, (Shards{0, 1}));  // blind past it

  // Batch 2 is ready (the consumer's batches read it from the server): not retried.
  const Walked ready = walk(start(0, kNoLimit, /*ready_end=*/3));
  EXPECT_TRUE(ready.result.retried.empty());
}

// The walk reaches the end of the batches read so far with room left: it says to plan further.
TEST_F(ShardWalkTest, SaysToPlanFurtherWhenItReachesTheHorizonWithRoomLeft) {
  set_up(plan_of(8, 8, 8));
  const Walked w = walk(start(0, kNoLimit, 0, 3));
  EXPECT_EQ(w.result.order, (Shards{0, 1, 2}));
  EXPECT_TRUE(w.result.plan_further);
  EXPECT_FALSE(walk(start(0, 2 * kShardBytes, 0, 3)).result.plan_further);  // the limit stopped it
}

}  // namespace
}  // namespace stoke
