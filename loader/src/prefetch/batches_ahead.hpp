#pragma once
// The batches ahead of the consumer as the shard prefetcher sees them: the order positions each
// reads and the shuffle windows (runs of shards) of their epochs, copied out of the slot table's
// plan under the loader's lock (PrefetchHost::read), so that the prefetcher keeps no plan of its
// own. What the plan says of a batch holds for one generation: a reposition starts afresh.
//
// Thread-safety: a value; one thread (the prefetcher's coordinator).

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "plan/epoch_plan.hpp"

namespace stoke::detail {

// A shuffle window of an epoch.
struct WindowRef {
  std::int64_t epoch;
  std::size_t window;
  bool operator<(const WindowRef& o) const {
    return epoch != o.epoch ? epoch < o.epoch : window < o.window;
  }
};

class BatchesAhead {
 public:
  // `samples`: the plan's N (positions past it are padding, which wraps to the order's start).
  BatchesAhead(std::int64_t batches_per_epoch, std::int64_t samples)
      : batches_per_epoch_(batches_per_epoch), samples_(samples) {}

  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }

  // Reads from `plan` what the last reading of this generation lacks of batches [first, last]
  // and of their epochs' windows, and forgets what lies before `first`. Inside
  // PrefetchHost::read (the plan is the slot table's, under the loader's lock).
  void read(const EpochPlan& plan, std::uint64_t generation, std::int64_t first, std::int64_t last);

  // The windows batch `seq` reads, each once, in order. REQUIRES: seq is within the last read().
  void windows_of(std::int64_t seq, std::vector<WindowRef>& out) const;
  // The plan's shards in window `w`. REQUIRES: its epoch is within the last read().
  const std::vector<std::size_t>& shards(const WindowRef& w) const {
    return windows_.at(w.epoch)[w.window].shards;
  }

 private:
  const std::int64_t batches_per_epoch_;
  const std::int64_t samples_;
  std::uint64_t generation_ = 0;
  std::int64_t first_ = 0;  // the batch spans_[0] is of
  // The order positions each batch reads (EpochPlan::order_spans), by batch.
  std::deque<std::array<EpochPlan::OrderSpan, 2>> spans_;
  std::map<std::int64_t, std::vector<ShardWindow>> windows_;  // by epoch
};

}  // namespace stoke::detail
