#pragma once
// Produces the samples one Task names, straight into the task's slot. The same code runs in
// stoke-worker processes and in-process (workers = 0), which is why their bytes are identical.
// Thread-safety: one ChunkRunner per thread; it owns decode and resize buffers.

#include <atomic>
#include <functional>
#include <opencv2/core/mat.hpp>
#include <string>
#include <string_view>

#include "augment/augment.hpp"
#include "data/dataset_index.hpp"
#include "decode/decode.hpp"
#include "decode/jpeg_region.hpp"
#include "ipc/arena_layout.hpp"

namespace stoke::detail {

class ChunkRunner {
 public:
  explicit ChunkRunner(const ArenaView& arena);

  // Writes pixels, labels and actual sample ids of samples [task.begin, task.begin + task.count)
  // of task.slot. Never throws for bad input; reports it in the Completion.
  // Fault injection for tests: called with each file's path before it is read.
  void set_before_read(std::function<void(std::string_view)> hook) {
    before_read_ = std::move(hook);
  }

  // `current`, when given, is kept set to the dataset index being produced.
  Completion run(const Task& task, std::atomic<std::int64_t>* current = nullptr) noexcept;

 private:
  // Produces one sample into `dst`; returns why it could not.
  BadInput produce(std::int64_t sample, SampleRng rng, std::uint8_t* dst);
  BadInput produce_or_throw(std::int64_t sample, SampleRng& rng, std::uint8_t* dst);
  void prefetch_raw(std::int64_t sample) const;
  bool poisoned(std::int64_t sample) const;

  ArenaView arena_;
  DatasetView dataset_;
  Augmenter augmenter_;
  ImageDecoder decoder_;
  DecodedImage decoded_;
  JpegRegionSource jpeg_;
  std::string path_;
  std::atomic<std::int64_t>* current_ = nullptr;
  std::int64_t read_ns_ = 0;    // this chunk's, so far
  std::int64_t decode_ns_ = 0;  // this chunk's, so far (JPEG: counted by jpeg_)
  std::function<void(std::string_view)> before_read_;
};

// Substitutes tried, in order, for a bad sample under OnError::kSkip: sample + 1, + 2, ...
inline constexpr int kMaxSubstitutes = 16;

}  // namespace stoke::detail
