#pragma once
// The loader: plans epochs, runs the pipeline in worker processes, delivers batches in order.
//
// Thread-safety: one consumer thread calls next(), set_epoch() and state(); stats(),
// resize_workers() and the accessors may be called from any thread. Batches may be released
// from any thread.
//
// Every batch has exactly options.batch samples, split into devices.count equal chunks. The
// delivered bytes depend only on (data, pipeline, seed, epoch, batch, rank, world): not on the
// number of workers, their scheduling, restarts, or resizing of the pool.
//
// The stall monitor times every next() call: how long the consumer waited, and how long it
// computed between calls. stats() reports both over a moving window and the whole run, with a
// verdict ("input-bound: ... try 4 workers" or "not input-bound: ..."); on GPUs it adds their
// utilization, sampled through NVML, and flags the burst-then-idle pattern of a starved GPU.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoke/batch.hpp"
#include "stoke/error.hpp"
#include "stoke/options.hpp"
#include "stoke/pipeline.hpp"
#include "stoke/state.hpp"
#include "stoke/stats.hpp"

namespace stoke {

namespace detail {
struct LoaderEnvironment;
struct LoaderAccess;
}  // namespace detail

class Loader {
 public:
  // Validates the options, indexes the dataset, lays out the shared arena and starts the
  // workers. Throws ConfigError for invalid options and Error when the workers cannot start.
  explicit Loader(Options options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch of the current epoch, or nullopt once the epoch is exhausted; the call after
  // a nullopt starts the following epoch. Throws DataError for bad input under OnError::kError.
  std::optional<Batch> next();

  // Positions the loader at batch 0 of `epoch`, a full epoch: for a loader resumed mid-epoch
  // (Options::resume) that holds for the resumed epoch too, and every epoch is plain from then on.
  void set_epoch(std::int64_t epoch);
  // Grows or shrinks the live worker pool to n processes (1..512), and stops automatic sizing.
  // Returns at once; the pool changes within moments (stats().workers says when). Retiring
  // workers finish the chunks they hold first, so no sample is lost, repeated or changed.
  // Throws ConfigError for n out of range or an in-process loader (workers 0).
  void resize_workers(int n);
  // Where the next call to next() continues; pass it as Options::resume to continue exactly, or
  // to a loader with other ranks, devices or batch to continue from the same sample.
  LoaderState state() const;

  std::int64_t batches_per_epoch() const;
  std::int64_t dataset_size() const;
  // The classes' names, label i's at i, where the dataset names them: an image folder's class
  // folders, a COCO file's categories, a Parquet file's ClassLabel feature or its string labels
  // (sorted). Empty where labels are bare numbers (IDX, list files, tar shards).
  const std::vector<std::string>& class_names() const;
  int rank() const;
  int world() const;
  const Pipeline& pipeline() const;
  Stats stats() const;

 private:
  friend struct detail::LoaderAccess;  // tests: a loader on a fake GPU
  Loader(Options options, const detail::LoaderEnvironment& env);

  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The version of this library, e.g. "0.1.0".
const char* version();

}  // namespace stoke
