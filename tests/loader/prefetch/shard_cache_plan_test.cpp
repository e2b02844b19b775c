// plan_shard_cache() (shard_cache_plan.hpp): whether the shard cache is on, for which shards,
// and what Stats::shard_cache and the log say, from the index's remote shards, the plan and the
// RemoteConfig alone (no server, no folder).
#include "prefetch/shard_cache_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace stoke {
namespace {

using detail::RemoteShard;
using detail::ShardCachePlan;

// Four shards of 10 samples; shuffle windows of two shards.
detail::PlanConfig plan_of_four() {
  detail::PlanConfig plan;
  plan.samples = 40;
  plan.batch = 10;
  plan.shard_starts = {0, 10, 20, 30, 40};
  plan.shuffle_window = 2;
  return plan;
}

detail::RemoteConfig config_with(std::uint64_t limit) {
  detail::RemoteConfig c;
  c.cache_root = "/cache";
  c.cache_limit = limit;
  return c;
}

// Shards of 100, 200, 300 and 400 bytes, each with a copy path unless `without_copy` says.
std::vector<RemoteShard> four_shards(const std::vector<int>& without_copy = {}) {
  std::vector<RemoteShard> shards;
  for (int i = 0; i < 4; ++i) {
    const std::string url = "http://h/" + std::to_string(i) + ".tar";
    const bool copy = std::find(without_copy.begin(), without_copy.end(), i) == without_copy.end();
    shards.push_back({static_cast<std::size_t>(i), url, 100u * (i + 1),
                      copy ? "/cache/shards/" + std::to_string(i) + ".tar" : ""});
  }
  return shards;
}

TEST(ShardCachePlan, WithoutRemoteShardsItIsOffAndSaysNothing) {
  const ShardCachePlan p = detail::plan_shard_cache({}, plan_of_four(), config_with(1000));
  EXPECT_TRUE(p.cached.empty());
  EXPECT_EQ(p.summary, "off (no remote shards)");
  EXPECT_EQ(p.log_line, "");
}

TEST(ShardCachePlan, ALimitThatHoldsTheLargestWindowCachesEveryShardWithACopy) {
  const ShardCachePlan p =
      detail::plan_shard_cache(four_shards({1}), plan_of_four(), config_with(700));
  ASSERT_EQ(p.cached.size(), 3u);
  EXPECT_EQ(p.cached[0].shard, 0u);
  EXPECT_EQ(p.cached[1].shard, 2u);
  EXPECT_EQ(p.root, "/cache");
  EXPECT_EQ(p.limit, 700u);
  EXPECT_EQ(p.summary.rfind("on: /cache/shards, limit ", 0), 0u) << p.summary;
  EXPECT_NE(p.log_line.find("; 3 of 4 remote shard(s) can be cached"), std::string::npos)
      << p.log_line;
}

TEST(ShardCachePlan, ALimitBelowTheTwoLargestShardsOfAWindowTurnsItOff) {
  const ShardCachePlan p =
      detail::plan_shard_cache(four_shards(), plan_of_four(), config_with(699));
  EXPECT_TRUE(p.cached.empty());
  EXPECT_EQ(p.summary.rfind("off: cache_limit ", 0), 0u) << p.summary;
  EXPECT_NE(p.summary.find("of the 2 largest shards a shuffle window reads"), std::string::npos)
      << p.summary;
  EXPECT_EQ(p.log_line, "shard cache: " + p.summary);
}

TEST(ShardCachePlan, NoCopyNamedMeansOffAndSaysWhy) {
  const ShardCachePlan zero =
      detail::plan_shard_cache(four_shards({0, 1, 2, 3}), plan_of_four(), config_with(0));
  EXPECT_TRUE(zero.cached.empty());
  EXPECT_EQ(zero.summary, "off (cache_limit 0): workers read byte ranges from the server");
  const ShardCachePlan no_etag =
      detail::plan_shard_cache(four_shards({0, 1, 2, 3}), plan_of_four(), config_with(1000));
  EXPECT_EQ(no_etag.summary.rfind("off (no cache folder, or the server sends no ETag)", 0), 0u)
      << no_etag.summary;
  EXPECT_EQ(no_etag.log_line, "shard cache: " + no_etag.summary);
}

}  // namespace
}  // namespace stoke
