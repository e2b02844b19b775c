#pragma once
// Moves each ready batch slot to its devices: per device, the chunk's uint8 bytes are copied by
// DMA straight from the arena (the slot is page-locked when created) and, for a float dtype,
// normalized on the device (then erased and mixed, when the batch asks); host devices normalize
// straight from the arena. A GPU also gets the
// batch's labels, sample ids and valid flags (one copy of the slot's small arrays), so a
// consumer never copies them out of a slot that workers may rewrite once it is dropped. A staged
// slot is bound to a set of device buffers (one per device) from a pool; the set returns to the
// pool only when the consumer releases the batch, so a device buffer is never rewritten while a
// batch that lives in it is held. The pool holds as many sets as there are held plus staged-ahead
// batches, not one per arena slot.
//
// When page-locking fails (memlock limits, an arena the driver refuses), each chunk is first
// copied on the host into one of a few recycled page-locked buffers, and stats() says so.
//
// Thread-safety: begin(), stage() and pin_initial() are called by one thread (the stager);
// output(), ready(), wait(), consumer_used(), transferring(), release() and stats() by any
// thread. `on_done(slot)` runs once per stage(), after every device's queue has passed the
// slot's work, on an arbitrary thread (possibly inside stage(); on a GPU, CUDA's callback
// thread, whose stream waits behind it): it must not block and must not call back into Staging.
// Invariants: slot `s`'s host bytes are read by devices only between begin(s) and the moment
// transferring(s) turns false (just before on_done(s)); a buffer set is bound to at most one
// slot, and written only by stage() of that slot.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.hpp"
#include "device/device_backend.hpp"
#include "stoke/stats.hpp"

namespace stoke::detail {

struct StagingConfig {
  int devices = 1;
  int samples_per_device = 0;
  int height = 0, width = 0, channels = 0;
  DType dtype = DType::kUInt8;
  Layout layout = Layout::kNCHW;  // for float dtypes; uint8 stays NHWC
  float mean[4] = {0, 0, 0, 0};   // uint8 units
  float stddev[4] = {1, 1, 1, 1};
  std::uint8_t* slots_base = nullptr;  // slot s starts at slots_base + s * slot_stride
  std::size_t slot_stride = 0;
  std::size_t slot_capacity = 0;
  // Within a slot: the batch's int32 labels and uint8 valid flags (ArenaHeader's offsets); the
  // bytes from labels_offset to valid_offset + batch go to each GPU in one copy.
  std::size_t labels_offset = 0;
  std::size_t valid_offset = 0;
  // Within a slot, in labels..valid: random_erasing's EraseBox per sample, applied after the
  // normalize (0: none).
  std::size_t erase_offset = 0;
  // Within a slot, in labels..valid: MixUp/CutMix's MixSample per sample, applied after the
  // erasing (0: none). The normalize and erase then write a per-device buffer of their own, and
  // the mix reads it into the output.
  std::size_t mix_offset = 0;
  // decode=gpu/hybrid: within a slot, the samples' JpegJobs and compressed bytes
  // (compressed_bytes per sample; 0: decode=cpu, nothing to decode), and how much of each file
  // the host decode checks. Each device decodes its chunk's JPEGs into its uint8 chunk before
  // the normalize (host devices: into the slot's pixels).
  std::size_t jpeg_jobs_offset = 0;
  std::size_t geometry_offset = 0;  // the samples' geometry records (the windows they cover)
  std::size_t compressed_offset = 0;
  std::size_t compressed_bytes = 0;
  Verify verify = Verify::kRegion;
};

// The normalize step's parameters for one device's chunk under `config`.
kernels::NormalizeParams normalize_params(const StagingConfig& config);

struct StagingStats {
  StagingMode mode = StagingMode::kHost;
  std::string fallback_reason;
  std::int64_t staged_batches = 0;
  std::int64_t dma_copies = 0;
  std::int64_t dma_bytes = 0;
  std::int64_t host_copy_bytes = 0;  // copied on the host before a DMA; 0 when registered
  std::int64_t pinned_bytes = 0;     // arena bytes page-locked
  std::int64_t device_bytes = 0;     // device buffers allocated
  // decode=gpu/hybrid: samples the devices could not decode, and their decode time.
  std::int64_t device_decode_failed = 0;
  std::int64_t device_decode_ns = 0;
};

class Staging {
 public:
  Staging(std::unique_ptr<DeviceBackend> backend, const StagingConfig& config,
          std::function<void(int slot)> on_done);
  // Waits for every device queue, then frees device buffers and unpins the arena.
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  // Page-locks slots [0, n); later slots are page-locked by their first stage().
  void pin_initial(int n);
  // The slot's host bytes are about to go to the devices: transferring(slot) is true from here
  // until every device has read them. Called where the slot table marks the slot, so no one
  // sees the mark without this.
  void begin(int slot);
  // Enqueues slot's copies and normalize on every device. REQUIRES: begin(slot) came first.
  // Throws Error (device out of memory).
  void stage(int slot);
  // Some device may still read the slot's host bytes. Lock-free.
  bool transferring(int slot) const;

  // The consumer released the batch in `slot`: its buffer set may be reused. Work already
  // enqueued on the devices (including consumer_used waits) runs before any reuse.
  void release(int slot);
  // The consumer's streams recorded on the batch in `slot` were made to wait (consumer_used):
  // the slot's host bytes also stay out of the workers' reach until every device's queue has
  // passed those waits, since the consumer's work may read the host arrays too. hold() makes
  // transferring(slot) true (call it where the slot table marks the slot); pass_hold()
  // enqueues its end on every device.
  void hold(int slot);
  void pass_hold(int slot) noexcept;

  // REQUIRES: stage(slot) was called and release(slot) was not since.
  const void* output(int slot, int dev) const;
  std::size_t output_bytes() const { return out_bytes_; }
  // The device's copy of its chunk of a per-sample array of the slot (labels, valid flags,
  // boxes, ...; host devices: the slot's own) at `offset` (an ArenaHeader offset in
  // labels_offset..valid_offset), `per_sample` T's per sample.
  template <typename T>
  const T* field(int slot, int dev, std::size_t offset, std::size_t per_sample) const {
    return reinterpret_cast<const T*>(meta(slot, dev) + (offset - config_.labels_offset)) +
           static_cast<std::size_t>(samples_before(dev)) * per_sample;
  }
  Event ready(int slot, int dev) const;
  void wait(int slot, int dev) const;
  // Work enqueued later on the consumer's stream waits for the chunk, without a host wait.
  void wait_on(int slot, int dev, void* stream) const;
  void consumer_used(int dev, void* stream);
  void* stream(int dev) const { return backend_->stream(dev); }
  bool gpu() const { return backend_->gpu(); }
  const StagingConfig& config() const { return config_; }
  StagingStats stats() const;

 private:
  struct DeviceWork {
    Staging* owner = nullptr;
    int slot = 0;
    int dev = 0;
    void* bounce = nullptr;  // pinned staging buffer in use (fallback), returned when done
  };
  struct BufferSet {
    std::vector<void*> d_in;    // per device: uint8 chunk (GPU backends)
    std::vector<void*> d_out;   // per device: normalized chunk (float dtypes)
    std::vector<void*> d_pre;   // per device: the chunk before its mixing (when mixing)
    std::vector<void*> d_meta;  // per device: the slot's labels..valid bytes (GPU backends)
    std::vector<Event> events;
  };
  struct SlotStage {
    bool pinned = false;
    BufferSet* set = nullptr;  // bound by stage(), unbound by release()
    std::vector<DeviceWork> work;
    std::vector<DeviceWork> hold_work;  // pass_hold()'s callbacks (no bounce buffer)
    std::atomic<int> outstanding{0};
  };

  static void device_done(void* arg);
  SlotStage& prepare(int slot);
  void try_pin(int slot, SlotStage& s);
  void* allocate(int dev, std::size_t n);
  BufferSet* take_set();
  void* take_bounce();
  void give_bounce(void* p);
  const std::uint8_t* chunk_src(int slot, int dev) const;
  const std::uint8_t* meta_src(int slot) const;
  // Device dev's part of the slot's JPEG jobs and bytes (REQUIRES: compressed_bytes > 0).
  JpegChunk jpeg_chunk(int slot, int dev);
  const std::uint8_t* meta(int slot, int dev) const;
  int samples_before(int dev) const { return dev * config_.samples_per_device; }

  std::unique_ptr<DeviceBackend> backend_;
  const StagingConfig config_;
  const std::function<void(int)> on_done_;
  const std::size_t chunk_bytes_;  // uint8 bytes per device chunk
  const std::size_t out_bytes_;    // bytes per device output
  const std::size_t meta_bytes_;   // labels_offset .. valid_offset + batch
  // Indexed by slot; entries are created by the stager thread only and never move.
  std::vector<std::unique_ptr<SlotStage>> slots_;

  mutable Mutex mutex_;
  CondVar bounce_cv_;  // signalled when a bounce buffer comes free
  std::vector<void*> bounce_free_ GUARDED_BY(mutex_);
  std::vector<void*> bounce_all_ GUARDED_BY(mutex_);
  std::vector<std::unique_ptr<BufferSet>> sets_ GUARDED_BY(mutex_);  // every set ever made
  std::vector<BufferSet*> free_sets_ GUARDED_BY(mutex_);
  std::string fallback_reason_ GUARDED_BY(mutex_);
  StagingStats counts_ GUARDED_BY(mutex_);
  // Counted by the devices' decodes as their queues run them (JpegChunk).
  std::atomic<std::int64_t> decode_failed_{0};
  std::atomic<std::int64_t> decode_ns_{0};
};

}  // namespace stoke::detail
