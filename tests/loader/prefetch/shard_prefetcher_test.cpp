// The shard prefetcher (shard_prefetcher.hpp) on its own: no loader, a PrefetchHost over a plan
// of the test's, shards on nginx, and a ManualTime, so that what happens once a deadline passes
// (a failed fetch tried once more, a batch that waited for room fetched past the limit) is seen
// by moving the time, not by waiting for it: the deadline here is 30 s, and each test takes
// milliseconds.
#include "prefetch/shard_prefetcher.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.hpp"
#include "common/time_source.hpp"
#include "consumer/event_log.hpp"
#include "data/shard_cache.hpp"
#include "servers.hpp"
#include "stoke/error.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using detail::ShardPrefetcher;
using detail::ShardStore;
using namespace std::chrono_literals;

constexpr std::size_t kShardBytes = 20000;
constexpr int kShards = 3;
constexpr auto kDeadline = 30s;

// The consumer's position, moved by the test, and the loader's error, as a loader would keep
// them: behind one lock.
class FakeHost final : public detail::PrefetchHost {
 public:
  explicit FakeHost(const detail::PlanConfig& config) : plan_(config) {}

  void read(const Look& look) override {
    detail::MutexLock lock(mutex_);
    look(at_, detail::EpochPrefetchPlan(plan_));
  }
  void ready_changed() override {}
  void fail(std::exception_ptr error) override {
    detail::MutexLock lock(mutex_);
    if (!error_) error_ = std::move(error);
  }

  void move_to(std::int64_t seq) {
    detail::MutexLock lock(mutex_);
    at_.next_seq = seq;
  }
  // The error the prefetcher stopped the loader with, or "".
  std::string error() const {
    detail::MutexLock lock(mutex_);
    if (!error_) return "";
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& e) {
      return e.what();
    }
  }

 private:
  mutable detail::Mutex mutex_;
  Consumer at_ GUARDED_BY(mutex_);
  detail::EpochPlan plan_ GUARDED_BY(mutex_);
  std::exception_ptr error_ GUARDED_BY(mutex_);
};

// Waits (up to 10 s of real time) for something the prefetcher's threads do.
bool eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Three shards of 16 samples, in order (no shuffling): batch i of an epoch reads shard i alone.
detail::PlanConfig plan_of_three_shards() {
  detail::PlanConfig plan;
  plan.samples = 16 * kShards;
  plan.batch = 16;
  plan.shuffle = false;
  plan.shard_starts = {0, 16, 32, 48};
  return plan;
}

class ShardPrefetcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
    fs::create_directories(www_);
    fs::create_directories(aside_);
    std::mt19937 rng(3);
    for (int i = 0; i < kShards; ++i) {
      std::string bytes(kShardBytes, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      std::ofstream(www_ / name(i), std::ios::binary) << bytes;
    }
    nginx_ = std::make_unique<test::Nginx>(www_, dir_.path() / "nginx");
    ASSERT_TRUE(nginx_->started());
    for (int i = 0; i < kShards; ++i) {
      const std::string url = nginx_->url() + "/" + name(i);
      shards_.push_back({static_cast<std::size_t>(i), url, kShardBytes,
                         detail::shard_copy_path(root(), url, kShardBytes, "v1")});
    }
  }

  static std::string name(int i) { return "train-" + std::to_string(i) + ".tar"; }
  std::string root() const { return (dir_.path() / "cache").string(); }
  // Takes shard i off the server (it answers 404), or puts it back.
  void hide(int i) { fs::rename(www_ / name(i), aside_ / name(i)); }
  void restore(int i) { fs::rename(aside_ / name(i), www_ / name(i)); }

  void start(std::uint64_t limit, const detail::PlanConfig& plan = plan_of_three_shards(),
             std::int64_t slot_capacity = 4) {
    auto host = std::make_unique<FakeHost>(plan);
    host_ = host.get();
    detail::RemotePolicy policy;
    policy.deadline_s = std::chrono::duration<double>(kDeadline).count();
    prefetcher_ = std::make_unique<ShardPrefetcher>(std::move(host), shards_,
                                                    std::make_unique<ShardStore>(root(), limit),
                                                    policy, time_, slot_capacity, log_);
  }
  bool ready(std::int64_t seq, bool consumer_next = false) {
    return prefetcher_->ready(seq, 0, consumer_next);
  }

  test::TempDir dir_;
  const fs::path www_ = dir_.path() / "www";
  const fs::path aside_ = dir_.path() / "aside";
  std::unique_ptr<test::Nginx> nginx_;
  std::vector<detail::RemoteShard> shards_;
  detail::ManualTime time_;
  test::LogLines lines_;
  detail::EventLog log_{lines_.sink()};
  FakeHost* host_ = nullptr;  // the prefetcher's
  std::unique_ptr<ShardPrefetcher> prefetcher_;
};

// Shard 2's fetch fails (404) while the consumer is at batch 0; the consumer reaches batch 2
// within the deadline: the loader stops with the fetch's error, and the shard is not fetched
// again.
TEST_F(ShardPrefetcherTest, AFailureWithinTheDeadlineStopsTheLoaderWhenItsBatchIsNext) {
  hide(2);
  start(std::uint64_t{1} << 30);
  ASSERT_TRUE(eventually([&] { return prefetcher_->stats().fetch_failures == 1; }));
  ASSERT_TRUE(eventually([&] { return ready(1); }));
  restore(2);  // back, but the failure is recent: it stands
  time_.advance(kDeadline / 2);
  host_->move_to(2);
  ASSERT_TRUE(eventually([&] { return !host_->error().empty(); }));
  const std::string error = host_->error();
  EXPECT_NE(error.find("cannot fetch shard " + shards_[2].url + ": "), std::string::npos) << error;
  EXPECT_NE(error.find("404"), std::string::npos) << error;
  EXPECT_FALSE(ready(2));
  EXPECT_EQ(prefetcher_->stats().fetch_failures, 1);
}

// The same failure, but the consumer reaches batch 2 once the deadline has passed since: the
// shard is fetched once more (the server has it again) and the batch becomes ready.
TEST_F(ShardPrefetcherTest, AFailureOlderThanTheDeadlineIsFetchedOnceMore) {
  hide(2);
  start(std::uint64_t{1} << 30);
  ASSERT_TRUE(eventually([&] { return prefetcher_->stats().fetch_failures == 1; }));
  ASSERT_TRUE(eventually([&] { return ready(1); }));
  restore(2);
  time_.advance(kDeadline + 1s);
  host_->move_to(2);
  ASSERT_TRUE(eventually([&] { return ready(2, true); })) << host_->error();
  EXPECT_EQ(host_->error(), "");
  const detail::ShardCacheStats s = prefetcher_->stats();
  EXPECT_EQ(s.fetch_failures, 1);
  EXPECT_EQ(s.bytes_fetched, static_cast<std::uint64_t>(kShards * kShardBytes));
  EXPECT_EQ(s.fetch_wait_s, 0.0);  // on the prefetcher's time, which did not move meanwhile
}

// Another loader's download holds the room of a folder that holds one shard: the consumer's
// batch waits, rechecking, until the deadline has passed on the prefetcher's time; then its
// shard is fetched past the limit (and the log says so). The wait is measured on that time.
TEST_F(ShardPrefetcherTest, ABatchWaitingForRoomPastTheDeadlineIsFetchedPastTheLimit) {
  const ShardStore other(root(), kShardBytes);
  std::vector<std::string> evicted;
  std::optional<ShardStore::Reservation> held;
  const std::string elsewhere =
      detail::shard_copy_path(root(), nginx_->url() + "/other.tar", kShardBytes, "v1");
  ASSERT_EQ(other.reserve(elsewhere, kShardBytes, {}, false, 30, evicted, held),
            ShardStore::Room::kReserved);
  start(kShardBytes);
  EXPECT_FALSE(ready(0, true));  // the fetch-wait clock starts
  // A second of the prefetcher's time at a time: each brings a recheck (due 20 ms after the
  // last), and only one at least the deadline after the batch first found no room fetches.
  std::chrono::seconds moved{0};
  while (!ready(0, true) && moved < 4 * kDeadline) {
    time_.advance(1s);
    moved += 1s;
    std::this_thread::sleep_for(2ms);  // (paces the loop; what happens does not depend on it)
  }
  ASSERT_TRUE(ready(0, true)) << host_->error();
  EXPECT_GT(moved, kDeadline);
  EXPECT_FALSE(ready(1));  // its shard waits for room: the consumer does not wait for it
  log_.flush();
  EXPECT_TRUE(lines_.contains("fetching past the limit"));
  // Measured on the prefetcher's time: past the deadline, though the test took milliseconds.
  const double waited = prefetcher_->stats().fetch_wait_s;
  EXPECT_GT(waited, std::chrono::duration<double>(kDeadline).count());
  EXPECT_LE(waited, std::chrono::duration<double>(moved).count());
  EXPECT_EQ(host_->error(), "");
}

// A dataset-level index's shards come unresolved (no size, no copy): each is looked up (HEAD) as
// the walk nears it and then fetched whole into the copy its version names; shard 1, missing
// from the server, is left to the workers (uncached: its batch is not held back) and said once.
TEST_F(ShardPrefetcherTest,
       UnresolvedShardsAreLookedUpThenFetchedAndAMissingOneIsLeftToTheWorkers) {
  for (auto& s : shards_) {
    s.size = 0;
    s.copy.clear();
    s.unresolved = true;
  }
  hide(1);
  start(std::uint64_t{1} << 30);
  ASSERT_TRUE(eventually([&] { return ready(0) && ready(1) && ready(2); })) << host_->error();
  EXPECT_EQ(host_->error(), "");
  const detail::ShardCacheStats s = prefetcher_->stats();
  EXPECT_EQ(s.bytes_fetched, 2 * kShardBytes);
  EXPECT_EQ(s.fetch_failures, 1);  // the look-up
  std::vector<std::uintmax_t> copies;
  for (const auto& e : fs::directory_iterator(dir_.path() / "cache/shards"))
    if (e.path().extension() == ".tar") copies.push_back(fs::file_size(e.path()));
  EXPECT_EQ(copies, (std::vector<std::uintmax_t>{kShardBytes, kShardBytes}));
  // (The look-up's thread says so just after it has marked the shard.)
  ASSERT_TRUE(eventually([&] {
    log_.flush();
    return lines_.contains("shard cache: cannot look up " + shards_[1].url + ": ");
  }));
  int said = 0;
  for (const std::string& line : lines_.lines()) {
    if (line.starts_with("shard cache: cannot look up " + shards_[1].url + ": ") &&
        line.ends_with("; the workers read it from the server"))
      ++said;
  }
  EXPECT_EQ(said, 1);
}

// Shard 1's look-up fails; once the deadline has passed, the walk meeting it again (the next
// epoch's batch 4, past the ready range) looks it up once more, and it is fetched.
TEST_F(ShardPrefetcherTest, AFailedLookUpIsTriedAgainAfterTheDeadline) {
  for (auto& s : shards_) {
    s.size = 0;
    s.copy.clear();
    s.unresolved = true;
  }
  hide(1);
  start(std::uint64_t{1} << 30, plan_of_three_shards(), /*slot_capacity=*/0);
  ASSERT_TRUE(eventually([&] { return prefetcher_->stats().fetch_failures == 1 && ready(0); }));
  restore(1);
  time_.advance(kDeadline + 1s);
  host_->move_to(2);
  ASSERT_TRUE(eventually([&] {
    return prefetcher_->stats().bytes_fetched == static_cast<std::uint64_t>(kShards * kShardBytes);
  })) << prefetcher_->stats().bytes_fetched;
  EXPECT_EQ(host_->error(), "");
}

// An epoch of 3,000 batches (one sample each; shard 2's first at batch 2,000), a limit that
// holds every shard: the walk plans 1,024 batches ahead at first and twice as far each time it
// reaches that end, so shard 2 is fetched while the consumer is still at batch 0.
TEST_F(ShardPrefetcherTest, TheWalkPlansFurtherWhileTheLimitHasRoom) {
  detail::PlanConfig plan;
  plan.samples = 3000;
  plan.batch = 1;
  plan.shuffle = false;
  plan.shard_starts = {0, 1000, 2000, 3000};
  start(std::uint64_t{1} << 30, plan);
  ASSERT_TRUE(eventually([&] {
    return prefetcher_->stats().bytes_fetched == static_cast<std::uint64_t>(kShards * kShardBytes);
  })) << prefetcher_->stats().bytes_fetched;
  // (The ready range follows at the coordinator's next step, after the fetch's end is counted.)
  EXPECT_TRUE(eventually([&] { return ready(0); }));
  EXPECT_EQ(host_->error(), "");
}

}  // namespace
}  // namespace stoke
