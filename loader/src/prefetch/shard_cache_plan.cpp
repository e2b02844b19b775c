#include "prefetch/shard_cache_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>

#include "common/number_text.hpp"
#include "data/shard_cache.hpp"

namespace stoke::detail {

namespace {

// The decision once the plan's windows are known: `per_window`, the most shards a batch's
// windows hold at once; `blind`, why a window cannot be known to fit ("" when it can).
ShardCachePlan decide(const std::vector<RemoteShard>& remote, std::size_t per_window,
                      const std::string& blind, const RemoteConfig& config) {
  ShardCachePlan out;
  if (remote.empty()) {
    out.summary = "off (no remote shards)";
    return out;
  }
  std::vector<RemoteShard> cached;
  std::size_t unresolved = 0;
  for (const RemoteShard& r : remote) {
    if (!r.copy.empty() || r.unresolved) cached.push_back(r);
    if (r.unresolved) ++unresolved;
  }
  if (cached.empty()) {
    out.summary = config.cache_limit == 0
                      ? "off (cache_limit 0): workers read byte ranges from the server"
                      : "off (no cache folder, or the server sends no ETag): workers read byte "
                        "ranges from the server";
    out.log_line = "shard cache: " + out.summary;
    return out;
  }
  if (!blind.empty()) {
    out.summary = "off: " + blind;
    out.log_line = "shard cache: " + out.summary;
    return out;
  }
  std::vector<std::uint64_t> sizes;
  for (const RemoteShard& r : cached) sizes.push_back(r.size);
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  std::uint64_t need = 0;
  for (std::size_t i = 0; i < std::min(per_window, sizes.size()); ++i) need += sizes[i];
  if (need > config.cache_limit) {
    out.summary = "off: cache_limit " + bytes_text(config.cache_limit) + " cannot hold the " +
                  bytes_text(need) + " of the " + std::to_string(per_window) +
                  " largest shards a shuffle window reads; workers read byte ranges from the "
                  "server (raise cache_limit, or lower shuffle_window)";
    out.log_line = "shard cache: " + out.summary;
    return out;
  }
  out.root = config.cache_root;
  out.limit = config.cache_limit;
  out.summary =
      "on: " + shard_store_folder(config.cache_root) + ", limit " + bytes_text(config.cache_limit);
  out.log_line = "shard cache " + out.summary + "; " + std::to_string(cached.size()) + " of " +
                 std::to_string(remote.size()) + " remote shard(s) can be cached";
  if (unresolved > 0)
    out.log_line += " (" + std::to_string(unresolved) +
                    " of a dataset-level index, each looked up on its server as the plan nears "
                    "it)";
  out.cached = std::move(cached);
  return out;
}

// The most shards one of `plan`'s windows holds (they hold the same counts every epoch), and
// whether one holds every shard of a dataset-level index (`unresolved`: it has some).
std::size_t largest_window(const EpochPlan& plan, bool unresolved, std::string& blind) {
  std::size_t per_window = 0;
  for (const ShardWindow& w : plan.shard_windows(0))
    per_window = std::max(per_window, w.shards.size());
  // A dataset-level index's shards are not sized until the prefetcher nears them: a window that
  // holds all of them (a full shuffle) cannot be known to fit.
  const PlanConfig& c = plan.config();
  const std::size_t shards = c.shard_starts.empty() ? 0 : c.shard_starts.size() - 1;
  if (unresolved && shards > 1 && per_window >= shards && blind.empty())
    blind = "shuffle_window " + std::to_string(c.shuffle_window) +
            " reads every shard of the dataset-level index at once, and their sizes are "
            "not known before they are read; workers read byte ranges from the server "
            "(set shuffle_window to a few shards to cache them)";
  return per_window;
}

bool any_unresolved(const std::vector<RemoteShard>& remote, std::size_t from, std::size_t to) {
  return std::any_of(remote.begin(), remote.end(), [&](const RemoteShard& r) {
    return r.unresolved && r.shard >= from && r.shard < to;
  });
}

// Whether shards [from, to) include one the cache would keep (a copy path, or unresolved).
bool any_cached(const std::vector<RemoteShard>& remote, std::size_t from, std::size_t to) {
  return std::any_of(remote.begin(), remote.end(), [&](const RemoteShard& r) {
    return (!r.copy.empty() || r.unresolved) && r.shard >= from && r.shard < to;
  });
}

}  // namespace

ShardCachePlan plan_shard_cache(const std::vector<RemoteShard>& remote, const PlanConfig& plan,
                                const RemoteConfig& config) {
  std::string blind;
  const std::size_t per_window =
      remote.empty() ? 0
                     : largest_window(EpochPlan(plan), any_unresolved(remote, 0, SIZE_MAX), blind);
  return decide(remote, per_window, blind, config);
}

ShardCachePlan plan_shard_cache(const std::vector<RemoteShard>& remote, const MixturePlan& plan,
                                const RemoteConfig& config) {
  // A batch reads a window of every source at once (and at a window's edge the next one too,
  // as for one dataset).
  std::string blind;
  std::size_t per_window = 0, base = 0;
  for (std::size_t s = 0; s < plan.config().sources.size() && !remote.empty(); ++s) {
    const std::size_t starts = plan.config().sources[s].shard_starts.size();
    const std::size_t shards = starts == 0 ? 0 : starts - 1;
    if (any_cached(remote, base, base + shards))  // (local shards take no room)
      per_window +=
          largest_window(plan.source_plan(s), any_unresolved(remote, base, base + shards), blind);
    base += shards;
  }
  return decide(remote, per_window, blind, config);
}

}  // namespace stoke::detail
