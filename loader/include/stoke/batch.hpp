#pragma once
// One delivered batch. Thread-safety: a Batch may be read from any thread; copies share the
// same memory. The bytes stay valid and unchanged while any copy of the Batch exists (or until
// release()); then the memory returns to the workers.

#include <cstdint>
#include <memory>
#include <span>

namespace stoke {

namespace detail {
class BatchLease;
}

// The part of a batch that belongs to one device: samples [first, first + samples).
struct DeviceChunk {
  int device = 0;
  int first = 0;
  int samples = 0;
  std::span<const std::uint8_t> pixels;  // samples x height x width x channels, uint8, NHWC
  std::span<const std::int32_t> labels;
  std::span<const std::uint8_t> valid;
  std::span<const std::int64_t> sample_ids;
};

class Batch {
 public:
  explicit Batch(std::shared_ptr<detail::BatchLease> lease);

  std::int64_t epoch() const;
  std::int64_t index() const;  // within the epoch
  int size() const;            // always the configured batch size
  int padded() const;          // samples that repeat earlier ones (valid == 0)
  int height() const;
  int width() const;
  int channels() const;

  std::span<const std::uint8_t> pixels() const;  // size() x height x width x channels
  std::span<const std::int32_t> labels() const;
  std::span<const std::uint8_t> valid() const;       // 1 = real sample, 0 = padding repeat
  std::span<const std::int64_t> sample_ids() const;  // dataset indices

  int device_count() const;
  // REQUIRES: 0 <= device < device_count()
  DeviceChunk chunk(int device) const;

  // Gives the memory back now; this Batch (not its other copies) becomes empty.
  void release();
  bool empty() const { return lease_ == nullptr; }

 private:
  std::shared_ptr<detail::BatchLease> lease_;
};

}  // namespace stoke
