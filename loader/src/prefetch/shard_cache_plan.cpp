#include "prefetch/shard_cache_plan.hpp"

#include <algorithm>
#include <functional>

#include "common/number_text.hpp"
#include "data/shard_cache.hpp"

namespace stoke::detail {

ShardCachePlan plan_shard_cache(const std::vector<RemoteShard>& remote, const PlanConfig& plan,
                                const RemoteConfig& config) {
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
  std::size_t per_window = 0;  // the plan's windows hold the same counts of shards every epoch
  for (const ShardWindow& w : EpochPlan(plan).shard_windows(0))
    per_window = std::max(per_window, w.shards.size());
  // A dataset-level index's shards are not sized until the prefetcher nears them: a window that
  // holds all of them (a full shuffle) cannot be known to fit.
  const std::size_t shards = plan.shard_starts.empty() ? 0 : plan.shard_starts.size() - 1;
  if (unresolved > 0 && shards > 1 && per_window >= shards) {
    out.summary = "off: shuffle_window " + std::to_string(plan.shuffle_window) +
                  " reads every shard of the dataset-level index at once, and their sizes are "
                  "not known before they are read; workers read byte ranges from the server "
                  "(set shuffle_window to a few shards to cache them)";
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

}  // namespace stoke::detail
