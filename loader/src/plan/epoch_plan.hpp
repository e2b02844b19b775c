#pragma once
// The global epoch plan. Thread-safety: const methods are safe from any thread once constructed,
// except batch(), which caches permutations and must be called by one thread at a time, and
// clear_resume(), which changes the mapping.
//
// Each epoch, a seeded permutation of the N samples (or the identity when not shuffling) is
// padded by repeating from its start (LastBatch::kPad) or truncated (kDrop) to a whole number of
// global batches of B x W samples. For tar shards with a shuffle window of K shards, the
// permutation is locality-aware: the shards are permuted, and the samples are shuffled within
// each run of K consecutive shards of that order, so that reading follows a few shards at a
// time. Either way it depends on (seed, epoch) alone. Global batch k is positions [k*B*W,
// (k+1)*B*W); rank r takes positions [k*B*W + r*B, k*B*W + (r+1)*B), and device g of that rank
// takes its g-th sub-chunk of B/G. So W ranks x 1 device see exactly what 1 rank x W devices see.
//
// Elastic resume: a job saved at global position P of epoch e (by any ranks, devices and global
// batch) continues with global batch G = B x W. Epoch e then covers positions [P, N) of its
// order, in global batches of G: under kPad the last one is padded by wrapping to the order's
// start (valid 0), under kDrop a partial last one is dropped. With rem = ceil((N - P) / G) (pad)
// or floor((N - P) / G) (drop) such batches, the resumed epoch's batches are indices
// [first, batches_per_epoch()) with first = batches_per_epoch() - rem, and index i >= first
// starts at position P + (i - first) * G. Batch sequence numbers stay epoch * batches_per_epoch()
// + index for every epoch. With the saving loader's G and P = k * G, first = k and this is the
// plain mapping, so an exact resume delivers what the uninterrupted run would have. Every other
// epoch, and epoch e once clear_resume() has run, is plain.
//
// From PlanConfig::permuted_from samples on (2^22 by default) the permutation is not an array:
// each position's sample is computed when asked (sample_at()) by a keyed bijection
// (plan/keyed_permutation.hpp), per shuffle window for shards, so the plan needs O(shards)
// memory, not O(N). It is another permutation than the array's, equally a function of (seed,
// epoch) alone.
//
// Repeated augmentation (repeats k > 1, torchvision's RASampler): the epoch's positions are the
// order with each entry repeated k times in a row, R[q] = order[q / k], cut to
// L = floor(floor(N / 256) * 256 / D) * D positions (D = G x W, the devices over all ranks: each
// device gets RASampler's floor(floor(N / 256) * 256 / D) samples). Everything above holds with
// L in place of N, except how a global batch [s, s + B*W) is dealt: device d (= r * G + g) takes
// positions s + d, s + d + D, s + d + 2D, ..., so the k copies of a sample go to k consecutive
// devices, as RASampler's `indices[rank::num_replicas]` deals them. A sample's augmentation
// still draws from its place in the batch (first_position() + its index), which differs between
// the copies.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plan/keyed_permutation.hpp"
#include "plan/sample_rng.hpp"
#include "plan/shared_order.hpp"
#include "stoke/options.hpp"

namespace stoke::detail {

// Where the epoch's order stops being an array (PlanConfig::permuted_from): below 2^22 samples
// (4,194,304: ImageNet-1k and smaller) it is the Fisher-Yates shuffle of an array, two epochs of
// which the plan keeps (4 bytes a sample each, in one file a machine when PlanConfig's
// order_folder is set; none without shuffling, where the order is the identity); from there on
// each order position's sample is computed when asked, with plan/keyed_permutation.hpp, in O(1)
// memory (O(shards) for shards). Both are a function of (seed, epoch) alone; they are different
// permutations, so a dataset that crosses the limit gets another order (documented in
// docs/USAGE.md).
inline constexpr std::int64_t kPermutedOrderFrom = std::int64_t{1} << 22;
// An array order's entries are 32-bit: past this many samples the order is permuted whatever
// permuted_from says.
inline constexpr std::int64_t kMaxArrayOrder = std::int64_t{1} << 32;

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
  // Elastic resume (above): epoch resume_epoch continues from global position resume_position
  // (0..N, or 0..L under repeats; N or L: the epoch is done). -1: no epoch is resumed.
  std::int64_t resume_epoch = -1;
  std::int64_t resume_position = 0;
  int repeats = 1;  // k: repeated augmentation (above); 1: off
  // From this many samples on, the epoch's order is a keyed bijection (below) instead of a
  // shuffled array: no N-sized memory.
  std::int64_t permuted_from = kPermutedOrderFrom;
  // Where the machine's copies of array orders live (plan/shared_order.hpp: order_folder()):
  // every rank of the machine maps one copy of each epoch's order instead of holding its own.
  // "": each plan keeps its own.
  std::string order_folder = {};
};

// Throws ConfigError (with a suggested fix) when the configuration cannot produce batches.
// REQUIRES: resume_epoch < 0, or 0 <= resume_position <= positions (checked by resolve_resume with
// the saved state in its message).
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
  // The epoch's positions before padding: N, or L under repeats (above).
  std::int64_t positions() const { return positions_; }
  const PlanConfig& config() const { return config_; }

  // The index of the resumed epoch's first batch (0 when no epoch is resumed): where its
  // consumer starts. batches_per_epoch() when nothing of that epoch is left.
  std::int64_t resume_first() const { return resume_first_; }
  // Makes every epoch plain from now on (a reposition leaves the resumed epoch). True when an
  // epoch was resumed, i.e. batches planned before may have changed.
  bool clear_resume();

  // The global position of the first sample of global batch `index` of `epoch`, or N when
  // index == batches_per_epoch() (the epoch is done): what LoaderState::position records. The
  // resumed epoch's batches before resume_first(), which no consumer receives, keep their plain
  // positions. REQUIRES: 0 <= index <= batches_per_epoch().
  std::int64_t position(std::int64_t epoch, std::int64_t index) const;

  // The global position of the first sample of this rank's batch `index` of `epoch`: position()
  // plus this rank's offset (positions at or past N are padding, wrapping to the order's start).
  // REQUIRES: 0 <= index < batches_per_epoch().
  std::int64_t first_position(std::int64_t epoch, std::int64_t index) const {
    return position(epoch, index) + std::int64_t{config_.rank} * config_.batch;
  }

  // The order positions (0..N-1) this rank's batch `index` of `epoch` reads: each span is
  // [first, first + count), wrapping past N to the order's start; the second is empty (count 0)
  // but for the padded last batch under repeats, whose positions past L wrap to R's start.
  // Under repeats, those of the whole global batch (a superset of this rank's).
  struct OrderSpan {
    std::int64_t first = 0;
    std::int64_t count = 0;
  };
  std::array<OrderSpan, 2> order_spans(std::int64_t epoch, std::int64_t index) const;

  // Fills the B sample ids and valid flags of this rank's batch `index` of `epoch`, and returns
  // its first_position().
  // REQUIRES: 0 <= index < batches_per_epoch(); ids.size() == valid.size() == B.
  std::int64_t batch(std::int64_t epoch, std::int64_t index, std::span<std::int64_t> ids,
                     std::span<std::uint8_t> valid);

  // The epoch's sample order before padding (a permutation of 0..N-1), copied out of the cache
  // (for tests and tools; batch() reads the cache itself). REQUIRES: !permuted().
  std::vector<std::int64_t> order(std::int64_t epoch);
  // Whether the epoch's order is the machine's file (plan/shared_order.hpp) rather than this
  // plan's memory; false when it is not an array (permuted, or not shuffled). Computes it.
  bool order_shared(std::int64_t epoch);
  // The sample at position p (0..N-1) of the epoch's order, either way.
  std::int64_t sample_at(std::int64_t epoch, std::int64_t p);
  bool permuted() const {
    return config_.samples >= config_.permuted_from || config_.samples > kMaxArrayOrder;
  }

  // Tar shards: the epoch's order as runs of shards, in order (one run per shuffle window; one
  // per shard without shuffling; one holding every shard under a full permutation). Empty for
  // other datasets. Cheap: it draws only the shards' permutation.
  std::vector<ShardWindow> shard_windows(std::int64_t epoch) const;

 private:
  PlanConfig config_;
  std::int64_t batches_ = 0;
  std::int64_t positions_ = 0;  // N, or L under repeats
  // Batch index i >= resume_first_ of the resumed epoch starts at i * B * W + resume_offset_.
  std::int64_t resume_first_ = 0;
  std::int64_t resume_offset_ = 0;
  std::int64_t cached_epoch_[2] = {-1, -1};
  // The generator that shuffles window k of `windows` of the epoch's order (the array's
  // Fisher-Yates and the permuted order's key alike).
  SampleRng window_shuffle(std::int64_t epoch, std::size_t k, std::size_t windows) const;
  // The array orders of the last two epochs asked for (4 bytes a sample each, in the machine's
  // files when config_.order_folder is set). REQUIRES: !permuted() and config_.shuffle (an
  // unshuffled order is the identity, and no array).
  std::span<const std::uint32_t> array_order(std::int64_t epoch);
  // The name of an epoch's order among the machine's files (plan/shared_order.hpp): a hash of
  // what the order is a function of.
  std::string order_name(std::int64_t epoch) const;
  OrderBuffer cached_order_[2];
  int next_cache_ = 0;

  // A permuted epoch (permuted()): its windows (one for every sample when not shards, or under
  // a full shuffle), each shuffled by its own keyed bijection, and where each window's shards
  // start within it.
  struct PermutedEpoch {
    std::int64_t epoch = -1;
    std::vector<ShardWindow> windows;
    std::vector<KeyedPermutation> shuffles;   // one per window (none without shuffling)
    std::vector<std::int64_t> shard_offsets;  // per window, its shards' starts within it, then
    std::vector<std::size_t> first_shard;     //   its total; first_shard[k]: window k's first
  };
  const PermutedEpoch& permuted_epoch(std::int64_t epoch);
  PermutedEpoch permuted_[2];
  int next_permuted_ = 0;
};

}  // namespace stoke::detail
