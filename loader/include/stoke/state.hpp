#pragma once
// The loader's position: cheap to save, exact to resume, and elastic: a state saved with W ranks
// (or G devices, or global batch B x W) resumes with any other count or batch, continuing the
// same epoch at the same sample. Thread-safety: value type.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stoke {

struct LoaderState {
  std::uint64_t seed = 0;
  std::int64_t epoch = 0;
  // The global position, in the epoch's sample order, of the next batch's first sample: what a
  // resumed loader continues from, whatever its ranks, devices and batch. dataset_size when the
  // epoch is done (its remaining batches, if any, are all padding or dropped).
  std::int64_t position = 0;
  // The index within the epoch of the next batch to deliver, as the saving loader counted them
  // (a resumed loader numbers its batches from position, so this is informational on resume).
  std::int64_t next_batch = 0;
  // Guard against resuming with another dataset. global_batch records the saving loader's
  // B x W; a loader with another global batch may resume it.
  std::int64_t dataset_size = 0;
  std::int64_t global_batch = 0;
  // Options::repeats of the saving loader: a position counts the epoch's repeated order, so a
  // loader with other repeats refuses it.
  std::int64_t repeats = 1;
  // A mixture of datasets: each source's samples delivered so far in the epoch (summing to
  // position), so that a loader with other ranks, devices or batch delivers each source's
  // remaining samples exactly once. Empty for a loader of one dataset.
  std::vector<std::int64_t> sources = {};

  // "stoke-state/2 seed=.. epoch=.. position=.. next_batch=.. dataset_size=.. global_batch=.."
  // and " repeats=.." when repeats is not 1 (absent: 1), " sources=N,N,.." for a mixture.
  std::string serialize() const;
  // Throws ConfigError naming the problem when `text` is not a serialized state. Also reads
  // "stoke-state/1" (no position field), whose position is plain_position().
  static LoaderState parse(std::string_view text);

  // The position of batch next_batch of an epoch that was never resumed elsewhere: next_batch x
  // global_batch, at most dataset_size. What a state saved without a position means.
  std::int64_t plain_position() const;

  bool operator==(const LoaderState&) const = default;
};

}  // namespace stoke
