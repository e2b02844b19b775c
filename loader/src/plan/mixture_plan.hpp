#pragma once
// The plan of a mixture of datasets: which samples
// of which source each rank's and device's batch holds, as a function of (seed, epoch, position)
// alone. Thread-safety: as EpochPlan's (batch() caches the sources' orders: one thread at a
// time).
//
// Sources and budgets. Source s has N_s samples, ids [first_id, first_id + N_s) of the
// mixture's id space, and a budget a_s > 0: the samples it gives an epoch, E = sum of a_s.
// Each source reads its own stream: its samples in the order of its own seeded epochs (a plan of
// its own: shuffled, or shuffle windows of its shards, with a seed derived from the mixture's
// and s), one pass after another. The mixture's epoch e takes source s's stream indices
// [e a_s, (e + 1) a_s): a source whose budget is more than its size wraps into its next pass
// (with the permutation of its next epoch); one whose budget is less is read without repeats,
// and its next mixture epoch continues where this one stopped.
//
// Global batches (G = B x W samples). With F = floor(E / G) full batches and T = E mod G
// samples left:
// - Every full batch holds b_s = floor(G a_s / E) of source s, plus one more for r = G - sum b_s
//   of the sources: so each full batch holds floor or ceil of G a_s / E of each source (within
//   one of its share). Which batches hold the extra one of source s: x_s = F (G a_s mod E) / E
//   is the extra samples source s is owed over the full batches; each source gets floor(x_s)
//   and the rest go to the sources of the largest fractional parts (the sources in a seeded
//   order of the epoch among equals), so that the extras sum to F r. The sources, in a seeded
//   order of the epoch, each repeated as often as its extras, are dealt round the F batches
//   (entry i to batch i mod F): no batch gets two of one source, each gets r.
// - Under LastBatch::kPad a last batch holds the T samples left (a_s - F b_s - extras_s of each
//   source: never negative) at its first positions, by source, and padding after them (valid 0:
//   those T samples again, in order). Under kDrop they are not delivered (the epoch's next
//   stream indices are still (e + 1) a_s).
// - Within a full batch, its D = W x G devices over all ranks are dealt the batch's samples the
//   same way: each device floor or ceil of c_s / D of source s, the extras of each source a run
//   of the devices listed device-major (device 0 of each rank, then device 1, ...) from a
//   seeded rotation of the batch, so each rank holds floor or ceil of c_s / W. The deal depends
//   on D alone: W ranks x 1 device see what 1 rank x W devices see. A device's samples are its
//   sources' in source order, each source's in stream order, the devices' in rank-major order.
//
// Repeats (MixtureConfig::repeats, below) keep all of the above, counted in stream entries.
//
// Resume. A state saved at position P of epoch e records each source's samples delivered so far
// that epoch (consumed_s, summing to P). A loader with the saving loader's G, and consumed_s what
// the plain epoch has delivered before batch P / G, continues the plain epoch (so an exact resume
// delivers what the uninterrupted run would have). Any other (other ranks, devices or batch):
// the rest of the epoch is the allocation above over the budgets a_s - consumed_s and the new
// G, numbered from first = batches_per_epoch() - its batches, as EpochPlan numbers an elastic
// resume; each source's stream continues at e a_s + consumed_s, so each source's remaining
// samples are delivered exactly once.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "plan/epoch_plan.hpp"

namespace stoke::detail {

struct MixSource {
  std::int64_t first_id = 0;  // its samples are ids [first_id, first_id + samples)
  std::int64_t samples = 0;   // N_s
  std::int64_t budget = 0;    // a_s: its samples an epoch
  // Tar shards: as PlanConfig's (starts relative to the source's first sample).
  std::vector<std::int64_t> shard_starts;
  int shuffle_window = 0;
};

struct MixtureConfig {
  std::vector<MixSource> sources;
  int batch = 0;    // B, per rank
  int devices = 1;  // G
  int rank = 0;
  int world = 1;  // W
  std::uint64_t seed = 0;
  bool shuffle = true;
  LastBatch last_batch = LastBatch::kPad;
  // Resume (above): epoch resume_epoch continues after each source's resume_consumed[s] samples
  // of that epoch. -1: none.
  std::int64_t resume_epoch = -1;
  std::vector<std::int64_t> resume_consumed;
  // Repeated augmentation (k > 1): each source's stream holds every sample of its order k times
  // in a row (stream entry t is sample t / k of its passes), and a full batch's entries of a
  // source are dealt round its devices one at a time, in the device-major order, so a sample's k
  // copies go to k different devices (when k is at most the devices in all), as RASampler deals
  // them. Budgets, counts and resume count entries.
  int repeats = 1;
  std::int64_t permuted_from = kPermutedOrderFrom;  // the sources' plans', as PlanConfig's
  std::string order_folder = {};
};

// How a source's budget is chosen: exactly one of weight (a share of what the other sources'
// budgets leave of the epoch), samples (so many an epoch: a part of a large source) and repeat
// (so many passes an epoch: 2 reads it twice, 0.5 half of it); none of them: one pass.
struct BudgetRule {
  std::int64_t size = 0;  // N_s
  double weight = 0;
  std::int64_t samples = 0;
  double repeat = 0;
};

// Each source's samples an epoch. The sources given samples or repeat (or nothing) get theirs;
// the weighted ones share the rest of an epoch of `epoch_samples` (0: the sum of every source's
// size) in proportion to their weights, rounded by largest remainder. Throws ConfigError naming
// the source for a rule that gives two of weight, samples and repeat, a negative one, a budget
// of 0, and an epoch that the fixed budgets fill or pass while weighted sources wait, or that
// does not match the fixed budgets when no source is weighted.
std::vector<std::int64_t> mixture_budgets(std::span<const BudgetRule> rules,
                                          std::int64_t epoch_samples);

// The seed of source s's own plan (its epochs' orders): derived from the mixture's.
std::uint64_t mixture_source_seed(std::uint64_t seed, std::size_t s);

// Throws ConfigError naming the problem (no sources, a source without samples or budget, a
// budget past 2^40, an epoch shorter than a global batch under kDrop, a resume that does not fit
// the budgets).
void validate_mixture(const MixtureConfig& config);

class MixturePlan {
 public:
  explicit MixturePlan(const MixtureConfig& config);
  ~MixturePlan();

  const MixtureConfig& config() const { return config_; }
  std::int64_t epoch_samples() const { return epoch_samples_; }  // E
  std::int64_t batches_per_epoch() const { return batches_; }
  // The resumed epoch's first batch index (0 when none is resumed, or it resumes plainly).
  std::int64_t resume_first() const { return resume_first_; }
  // Makes every epoch plain from now on (as EpochPlan::clear_resume); true when an epoch was
  // resumed.
  bool clear_resume();

  // The global position of global batch `index`'s first sample (E when index ==
  // batches_per_epoch()).
  std::int64_t position(std::int64_t epoch, std::int64_t index) const;
  std::int64_t first_position(std::int64_t epoch, std::int64_t index) const {
    return position(epoch, index) + std::int64_t{config_.rank} * config_.batch;
  }

  // Of each source, the samples global batch `index` of `epoch` holds (valid ones: padding not
  // counted), and those delivered before it in the epoch.
  void batch_counts(std::int64_t epoch, std::int64_t index, std::span<std::int64_t> counts) const;
  void consumed_before(std::int64_t epoch, std::int64_t index, std::span<std::int64_t> out) const;

  // This rank's batch `index` of `epoch`: B sample ids (the mixture's), valid flags and source
  // indices; returns its first position (position() + rank x B).
  std::int64_t batch(std::int64_t epoch, std::int64_t index, std::span<std::int64_t> ids,
                     std::span<std::uint8_t> valid, std::span<std::int32_t> sources);

  // Of each source, the stream indices global batch `index` of `epoch` reads (all its ranks'):
  // [begin, begin + count). (Its padding repeats them.)
  void stream_ranges(std::int64_t epoch, std::int64_t index, std::span<std::int64_t> begin,
                     std::span<std::int64_t> count) const;
  // The plan of source s's own epochs (its passes): pass p orders its samples as epoch p does.
  const EpochPlan& source_plan(std::size_t s) const { return *orders_[s]; }

  // The mixture id of source s's stream index t: sample u = t / repeats of its passes (its pass
  // u / N_s, position u mod N_s).
  std::int64_t stream_sample(std::size_t s, std::int64_t t);

  // One allocation of budgets y over global batches of G (above): public for the tests.
  struct Allocation {
    std::int64_t full = 0;             // F
    std::int64_t tail = 0;             // T
    std::vector<std::int64_t> base;    // b_s
    std::vector<std::int64_t> extras;  // extras_s
    std::vector<std::int64_t> start;   // where source s's extras start, as a batch (mod F)
    std::vector<std::int64_t> rest;    // in the last batch
  };
  static Allocation allocate(std::span<const std::int64_t> budgets, std::int64_t global_batch,
                             std::uint64_t seed, std::int64_t epoch, std::int64_t salt);

 private:
  // The allocation that batch `index` of `epoch` belongs to, its batch index within it, and
  // each source's stream index at the allocation's start.
  struct Where {
    Allocation allocation;
    std::int64_t j = 0;
    std::vector<std::int64_t> stream;
  };
  Where where(std::int64_t epoch, std::int64_t index) const;
  // Per source, the samples of batch j of `a` (valid ones), and before batch j.
  static void counts_of(const Allocation& a, std::int64_t j, std::span<std::int64_t> out);
  static void before(const Allocation& a, std::int64_t j, std::span<std::int64_t> out);

  MixtureConfig config_;
  std::int64_t epoch_samples_ = 0;
  std::int64_t global_ = 0;  // G = B x W
  std::int64_t batches_ = 0;
  std::int64_t resume_first_ = 0;
  std::vector<std::int64_t> budgets_;
  // A resume that re-allocates the rest of its epoch (resumed_.full + tail batches from
  // resume_first_ on), and each source's stream index at its start.
  bool reallocated_ = false;
  Allocation resumed_;
  std::vector<std::int64_t> resume_stream_;
  std::vector<std::unique_ptr<EpochPlan>> orders_;  // per source: its own epochs' orders
};

}  // namespace stoke::detail
