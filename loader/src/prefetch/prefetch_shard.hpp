#pragma once
// A remote shard as the shard prefetcher knows it: one record per shard with a copy (or one to
// be looked up), in the order of the cache plan's list ("r" indexes these).
//
// Thread-safety: the records are the prefetcher's coordinator's alone; its look-up and download
// threads are handed copies of what they need and report back (shard_resolver.hpp,
// shard_downloader.hpp).

#include <cstdint>
#include <string>

#include "common/time_source.hpp"
#include "data/dataset_index.hpp"

namespace stoke::detail {

enum class ShardState : std::uint8_t {
  kAbsent,      // not on disk, as far as this loader knows
  kFetching,    // a fetch is queued or under way (or waits for another loader's download of it)
  kLocal,       // its copy is on disk
  kFailed,      // its fetch failed (PrefetchShard::error, failed_at)
  kUncached,    // its copy cannot be written here, or it can have none (no ETag; a failed look-up):
                // the workers read it from the server
  kUnresolved,  // its size and copy are not known yet (a dataset-level index's shard)
  kResolving,   // being looked up: queued or under way
};

struct PrefetchShard {
  // Its place in the plan's shard list, URL, size and copy. An unresolved shard's size and copy
  // are written once, when its look-up answers, before its state leaves kResolving.
  RemoteShard remote;
  ShardState state = ShardState::kAbsent;
  // The consumer's epoch whose first use of the shard was counted (a hit or a miss), or -1.
  std::int64_t counted_epoch = -1;
  // kUncached because its look-up failed (at failed_at): looked up again once the remote
  // deadline has passed since.
  bool lookup_failed = false;
  TimeSource::Clock::time_point failed_at;  // when its fetch or look-up failed (on the TimeSource)
  std::string error;                        // kFailed: the fetch's error
};

}  // namespace stoke::detail
