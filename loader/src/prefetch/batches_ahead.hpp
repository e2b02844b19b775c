#pragma once
// The batches ahead of the consumer as the shard prefetcher sees them: the shuffle windows (runs
// of shards) each reads, copied out of the slot table's plan under the loader's lock
// (PrefetchHost::read), so that the prefetcher keeps no plan of its own. What the plan says of a
// batch holds for one generation: a reposition starts afresh.
//
// A plan is read through PrefetchPlan: EpochPrefetchPlan over one dataset's EpochPlan (a
// window is one of an epoch's), MixturePrefetchPlan over a mixture's MixturePlan (a window is one
// of a source's pass over its shards, the shards numbered across the sources in order).
//
// Thread-safety: values; one thread (the prefetcher's coordinator). The adaptors read their
// plan, which the caller holds as PrefetchHost::read says.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "plan/epoch_plan.hpp"
#include "plan/mixture_plan.hpp"

namespace stoke::detail {

// A shuffle window: window `window` of the runs that key `key` names (an epoch's; a mixture's
// source's pass).
struct WindowRef {
  std::int64_t key;
  std::size_t window;
  bool operator<(const WindowRef& o) const {
    return key != o.key ? key < o.key : window < o.window;
  }
  bool operator==(const WindowRef&) const = default;
};

// What the prefetcher reads of a plan.
class PrefetchPlan {
 public:
  using Windows = std::map<std::int64_t, std::vector<ShardWindow>>;  // by key
  virtual ~PrefetchPlan() = default;
  virtual std::int64_t batches_per_epoch() const = 0;
  // The plan's shards: the prefetcher's shard indices are 0 .. shards() - 1.
  virtual std::size_t shards() const = 0;
  // Appends to `out` the windows batch `index` of `epoch` reads, each once, in order, and adds
  // to `windows` the runs of each key it names that `windows` lacks.
  virtual void batch_windows(std::int64_t epoch, std::int64_t index, Windows& windows,
                             std::vector<WindowRef>& out) const = 0;
};

// One dataset's plan: key = epoch.
class EpochPrefetchPlan final : public PrefetchPlan {
 public:
  explicit EpochPrefetchPlan(const EpochPlan& plan) : plan_(plan) {}
  std::int64_t batches_per_epoch() const override { return plan_.batches_per_epoch(); }
  std::size_t shards() const override;
  void batch_windows(std::int64_t epoch, std::int64_t index, Windows& windows,
                     std::vector<WindowRef>& out) const override;

 private:
  const EpochPlan& plan_;
};

// A mixture's plan: key = pass x kMaxSourceKeys + source; each source's shards follow the
// shards of the sources before it.
class MixturePrefetchPlan final : public PrefetchPlan {
 public:
  static constexpr std::int64_t kMaxSourceKeys = 1024;  // above any mixture's sources
  explicit MixturePrefetchPlan(const MixturePlan& plan) : plan_(plan) {}
  std::int64_t batches_per_epoch() const override { return plan_.batches_per_epoch(); }
  std::size_t shards() const override;
  void batch_windows(std::int64_t epoch, std::int64_t index, Windows& windows,
                     std::vector<WindowRef>& out) const override;
  // Source s's first shard in the mixture's numbering.
  static std::size_t shard_base(const MixtureConfig& config, std::size_t s);

 private:
  const MixturePlan& plan_;
};

class BatchesAhead {
 public:
  explicit BatchesAhead(std::int64_t batches_per_epoch) : batches_per_epoch_(batches_per_epoch) {}

  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }

  // Reads from `plan` what the last reading of this generation lacks of batches [first, last]
  // and of their windows, and forgets what lies before `first`. Inside PrefetchHost::read (the
  // plan is the slot table's, under the loader's lock).
  void read(const PrefetchPlan& plan, std::uint64_t generation, std::int64_t first,
            std::int64_t last);

  // The windows batch `seq` reads, each once, in order. REQUIRES: seq is within the last read().
  void windows_of(std::int64_t seq, std::vector<WindowRef>& out) const {
    out = refs_[static_cast<std::size_t>(seq - first_)];
  }
  // The plan's shards in window `w`. REQUIRES: a batch within the last read() reads it.
  const std::vector<std::size_t>& shards(const WindowRef& w) const {
    return windows_.at(w.key)[w.window].shards;
  }

 private:
  const std::int64_t batches_per_epoch_;
  std::uint64_t generation_ = 0;
  std::int64_t first_ = 0;                   // the batch refs_[0] is of
  std::deque<std::vector<WindowRef>> refs_;  // the windows each batch reads, by batch
  PrefetchPlan::Windows windows_;            // the runs of the keys they name
  std::map<std::int64_t, std::int64_t> last_read_;  // by key: the last batch ahead reading it
};

}  // namespace stoke::detail
