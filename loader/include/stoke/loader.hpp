#pragma once
// The loader: plans epochs, runs the pipeline in worker processes, delivers batches in order.
//
// Thread-safety: one consumer thread calls next(), set_epoch() and state(); stats() and the
// accessors may be called from any thread. Batches may be released from any thread.
//
// Every batch has exactly options.batch samples, split into devices.count equal chunks. The
// delivered bytes depend only on (data, pipeline, seed, epoch, batch, rank, world): not on the
// number of workers, their scheduling, or restarts.

#include <cstdint>
#include <memory>
#include <optional>

#include "stoke/batch.hpp"
#include "stoke/error.hpp"
#include "stoke/options.hpp"
#include "stoke/pipeline.hpp"
#include "stoke/state.hpp"
#include "stoke/stats.hpp"

namespace stoke {

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

  // Positions the loader at batch 0 of `epoch`.
  void set_epoch(std::int64_t epoch);
  // Where the next call to next() continues; pass it as Options::resume to continue exactly.
  LoaderState state() const;

  std::int64_t batches_per_epoch() const;
  std::int64_t dataset_size() const;
  int rank() const;
  int world() const;
  const Pipeline& pipeline() const;
  Stats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The version of this library, e.g. "0.1.0".
const char* version();

}  // namespace stoke
