#pragma once
// Whether a loader keeps its remote shards in the shard cache (data/shard_cache.hpp), decided in
// one place from the index's remote shards, the epoch plan and the RemoteConfig (config.hpp).
// Everything else consumes the answer: loader construction drops the index's copy paths when the
// plan caches nothing (so the workers read exactly what the plan says: the servers), builds the
// shard store and the prefetcher (shard_prefetcher.hpp) for the shards it names, and reports its
// summary in Stats::shard_cache and the log.
//
// Thread-safety: a plain function of its arguments; it does no I/O.

#include <cstdint>
#include <string>
#include <vector>

#include "api/config.hpp"
#include "data/dataset_index.hpp"
#include "plan/epoch_plan.hpp"
#include "plan/mixture_plan.hpp"

namespace stoke::detail {

struct ShardCachePlan {
  // The remote shards fetched whole into the cache ahead of the plan, in shard order; empty:
  // the cache is off, and the workers read byte ranges from the servers.
  std::vector<RemoteShard> cached;
  std::string root;         // the cache root the shard store lives under (when cached)
  std::uint64_t limit = 0;  // the cache folder's limit in bytes (when cached)
  std::string summary;      // Stats::shard_cache: "on: FOLDER, limit N" or "off ..." and why
  std::string log_line;     // what construction logs; "" when the data has no remote shards
};

// The cache is on when copies are asked for (cache_limit > 0, a cache root), the servers name
// versions (an ETag: the shards with a copy path in the index) and the limit holds the largest
// shards a shuffle window reads: a batch reads one window's shards, or the next one's too at a
// window's edge (and, with small shards or padding that wraps, several), so a smaller limit
// would evict copies before their batches are done. (A batch that alone needs more is fetched
// past the limit, with a line in the log: the prefetcher's.) The shards of a dataset-level index
// (RemoteShard::unresolved) are cached when copies are asked for and a shuffle window holds
// fewer than all of them: their sizes and versions are not known yet, so the limit is not
// checked against them here (the prefetcher fetches a batch's shards past the limit, and says
// so, when they prove larger).
ShardCachePlan plan_shard_cache(const std::vector<RemoteShard>& remote, const PlanConfig& plan,
                                const RemoteConfig& config);
// A mixture's: `remote` numbered as its sources' shards in order (MixturePrefetchPlan), the limit
// holding the largest window of every source with shards at once.
ShardCachePlan plan_shard_cache(const std::vector<RemoteShard>& remote, const MixturePlan& plan,
                                const RemoteConfig& config);

}  // namespace stoke::detail
