#pragma once
// The global epoch plan. Thread-safety: const methods are safe from any thread once constructed,
// except batch(), which caches permutations and must be called by one thread at a time.
//
// Each epoch, a seeded permutation of the N samples (or the identity when not shuffling) is
// padded by repeating from its start (LastBatch::kPad) or truncated (kDrop) to a whole number of
// global batches of B x W samples. For tar shards with a shuffle window of K shards, the
// permutation is locality-aware: the shards are permuted, and the samples are shuffled within
// each run of K consecutive shards of that order, so that reading follows a few shards at a
// time. Either way it depends on (seed, epoch) alone. Global batch k is positions [k*B*W,
// (k+1)*B*W); rank r takes positions [k*B*W + r*B, k*B*W + (r+1)*B), and device g of that rank
// takes its g-th sub-chunk of B/G. So W ranks x 1 device see exactly what 1 rank x W devices see.

#include <cstdint>
#include <span>
#include <vector>

#include "stoke/options.hpp"

namespace stoke::detail {

struct PlanConfig {
  std::int64_t samples = 0;  // N
  int batch = 0;             // B, per rank
  int devices = 1;           // G
  int rank = 0;
  int world = 1;  // W
  std::uint64_t seed = 0;
  bool shuffle = true;
  LastBatch last_batch = LastBatch::kPad;
  // Tar shards: samples [shard_starts[i], shard_starts[i + 1]) are shard i's (empty otherwise),
  // and shuffle_window shards are shuffled together (0: all of them, a full permutation).
  std::vector<std::int64_t> shard_starts;
  int shuffle_window = 0;
};

// Throws ConfigError (with a suggested fix) when the configuration cannot produce batches.
void validate_plan(const PlanConfig& config);

// A run of the epoch's order that comes from a set of shards: positions [begin, end) of the
// order (before padding) hold exactly the samples of `shards`.
struct ShardWindow {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::vector<std::size_t> shards;
};

class EpochPlan {
 public:
  explicit EpochPlan(const PlanConfig& config);

  std::int64_t batches_per_epoch() const { return batches_; }
  const PlanConfig& config() const { return config_; }

  // Fills the B sample ids and valid flags of this rank's batch `index` of `epoch`, and returns
  // the global position of its first sample.
  // REQUIRES: 0 <= index < batches_per_epoch(); ids.size() == valid.size() == B.
  std::int64_t batch(std::int64_t epoch, std::int64_t index, std::span<std::int64_t> ids,
                     std::span<std::uint8_t> valid);

  // The epoch's sample order before padding (a permutation of 0..N-1).
  const std::vector<std::int64_t>& order(std::int64_t epoch);

  // The global position of the first sample of this rank's batch `index` (positions at or past
  // N are padding, wrapping to the order's start).
  std::int64_t first_position(std::int64_t index) const {
    return index * config_.batch * config_.world + std::int64_t{config_.rank} * config_.batch;
  }

  // Tar shards: the epoch's order as runs of shards, in order (one run per shuffle window; one
  // per shard without shuffling; one holding every shard under a full permutation). Empty for
  // other datasets. Cheap: it draws only the shards' permutation.
  std::vector<ShardWindow> shard_windows(std::int64_t epoch) const;

 private:
  PlanConfig config_;
  std::int64_t batches_ = 0;
  std::int64_t cached_epoch_[2] = {-1, -1};
  std::vector<std::int64_t> cached_order_[2];
  int next_cache_ = 0;
};

}  // namespace stoke::detail
