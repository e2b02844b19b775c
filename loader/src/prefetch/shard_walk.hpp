#pragma once
// The shard prefetcher's walk over the batches ahead (docs/ARCHITECTURE.md, "The shard
// prefetcher"): from the consumer's batch on, in order, the remote shards the batches read are
// wanted until their bytes would pass the cache's limit (the ready batches' and the first not
// ready's always are); past the first shard it cannot size, nothing more is wanted and it only
// queues look-ups; a shard's first use in the consumer's epoch is counted; and the ready range
// grows over batches whose shards are all local. It decides; its caller acts.
//
// It reads only the shards' records and the batches ahead: no threads, no clock, no I/O.
// The one thing it cannot know, what a counted use finds on disk, its caller looks up between
// batches and says (found()), since whether a batch is ready depends on it:
//   ShardWalk walk(ahead, shards, remote_of, start);
//   while (walk.next_batch())
//     for (std::size_t r : walk.first_uses()) walk.found(r, <the state the caller found>);
//   const ShardWalk::Result& result = walk.result();
//
// Thread-safety: a value; one thread. `ahead`, `shards` and `remote_of` must outlive it; it
// copies the shards' states when it starts (its caller's counting changes the records between
// batches: found() says how).

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <vector>

#include "common/time_source.hpp"
#include "prefetch/batches_ahead.hpp"
#include "prefetch/prefetch_shard.hpp"

namespace stoke::detail {

class ShardWalk {
 public:
  // At most this many look-ups are queued or under way.
  static constexpr int kResolveAhead = 16;
  // How many shards a walk looks at past the first one it cannot size, for more to look up.
  static constexpr std::size_t kBlindLook = 4096;

  struct Start {
    std::int64_t next_seq = 0;   // the consumer's batch
    std::int64_t ready_end = 0;  // the ready range's end so far: [next_seq, ready_end) are ready
    std::int64_t horizon = 0;    // the walk ends before this batch (the plan read so far)
    std::int64_t ready_horizon = 0;  // nor does the ready range pass it (what the slots hold)
    std::uint64_t limit = 0;         // the cache's limit, in bytes
    int resolving = 0;               // look-ups queued or under way
    // A failed look-up met past the ready range is tried again once `retry_after_s` seconds have
    // passed since it failed, at `now` (the prefetcher's TimeSource).
    TimeSource::Clock::time_point now;
    double retry_after_s = 0;
  };

  struct Result {
    std::vector<std::size_t> order;  // the wanted shards, in the order the batches read them
    std::vector<char> wanted;        // by r: whether it is in `order`
    // Shards to look up, in the order met (each now kResolving), and failed look-ups to try
    // again (each now kUnresolved, or kResolving when it is in `look_ups` too).
    std::vector<std::size_t> look_ups;
    std::vector<std::size_t> retried;
    std::int64_t ready_end = 0;
    // The walk reached its horizon, neither stopped by the limit nor blind: there is room to
    // plan further.
    bool plan_further = false;
  };

  // `remote_of`: by the plan's shard index, its r in `shards`, or -1 (a shard with no copy).
  // REQUIRES: `ahead` was read for batches [start.next_seq, start.horizon); start.next_seq <=
  // start.ready_end.
  ShardWalk(const BatchesAhead& ahead, std::span<const PrefetchShard> shards,
            std::span<const int> remote_of, const Start& start);

  // Walks the next batch, after settling the one before (whether it is ready). False when the
  // walk is over: then result() holds.
  bool next_batch();
  // The shards the batch just walked uses first in the consumer's epoch, in order: the caller
  // counts each use (once an epoch) and says what it found with found().
  const std::vector<std::size_t>& first_uses() const { return first_uses_; }
  // Shard r's state after its use was counted (kLocal: on disk; kAbsent: not).
  void found(std::size_t r, ShardState state) { states_[r] = state; }

  // REQUIRES: next_batch() said false.
  const Result& result() const { return result_; }

 private:
  void walk_batch();
  void settle_batch();
  // Every remote shard of the window is on disk or read from the server (memoized).
  bool window_local(const WindowRef& w);
  bool lookup_due(std::size_t r) const;

  const BatchesAhead& ahead_;
  const std::span<const PrefetchShard> shards_;
  const std::span<const int> remote_of_;
  const Start start_;
  std::vector<ShardState> states_;  // the records' states, as this walk leaves them
  Result result_;
  std::int64_t seq_;              // the batch walked (or next to walk)
  bool open_ = false;             // seq_ was walked, not yet settled
  bool over_ = false;             // the walk has ended: next_batch() says no from now on
  bool full_ = false;             // the limit stopped the walk
  bool blind_ = false;            // past a shard it cannot size
  std::size_t blind_looked_ = 0;  // shards looked at since: bounded, on huge plans
  int resolving_;
  std::uint64_t bytes_ = 0;      // of the wanted shards
  std::vector<WindowRef> refs_;  // seq_'s windows
  std::set<WindowRef> seen_;     // windows walked
  std::map<WindowRef, bool> local_;
  std::vector<std::size_t> first_uses_;
};

}  // namespace stoke::detail
