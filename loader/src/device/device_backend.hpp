#pragma once
// The devices a loader feeds, behind one interface: host devices (plain memory, work runs on the
// calling thread), CUDA GPUs (one non-blocking stream per GPU, asynchronous work) and, in tests,
// a fake GPU that checks every copy. Staging (staging.hpp) drives it.
//
// Thread-safety: one thread (the loader's stager) enqueues work; record/wait/consumer_used and
// the accessors may be called from any thread. Callbacks passed to call_when_done run on a
// backend-owned thread (CUDA: the runtime's callback thread), must not call the backend and
// must not block (CUDA stalls the stream behind them).
//
// `dev` is a position in the loader's DeviceSet (0..count()-1), not a CUDA ordinal. Every call
// works in the context of the device it names (page-locking in the first device's) and leaves
// the calling thread's current device, or its lack of one, as it found it: a loader on cuda:1
// never makes a context on GPU 0.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ipc/arena_layout.hpp"
#include "stoke/kernels/erase.hpp"
#include "stoke/kernels/mix.hpp"
#include "stoke/kernels/normalize.hpp"
#include "stoke/options.hpp"

namespace stoke::detail {

using Event = void*;

// decode=gpu/hybrid: what a device's decode is told of its chunk (Staging::stage fills it).
struct JpegChunk {
  const JpegJob* jobs = nullptr;  // the chunk's samples' jobs (host memory: the arena slot's)
  // The chunk's samples' geometry records (6 floats each: the map from the source to the
  // output, the source's size; host memory), which say the window each output covers.
  const float* geometry = nullptr;
  const std::uint8_t* compressed = nullptr;  // sample k's bytes: compressed + k * stride (host)
  std::size_t stride = 0;
  int samples = 0;
  int height = 0, width = 0, channels = 0;  // each sample's output
  Verify verify = Verify::kRegion;          // how much of each file the decode checks (host)
  // Counted as the queue runs the decode: samples the decoder could not decode (their pixels
  // are 0), and the nanoseconds the decode and resize took.
  std::atomic<std::int64_t>* failed = nullptr;
  std::atomic<std::int64_t>* decode_ns = nullptr;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual bool gpu() const = 0;  // false: "device memory" is host memory, work is synchronous
  virtual int count() const = 0;
  virtual std::string describe() const = 0;  // e.g. "cuda:0 (NVIDIA H200)"

  // Page-locks [p, p + n) for DMA by every device of the set, through device `dev`'s context.
  // Returns "" on success, else why it could not.
  virtual std::string pin(int dev, void* p, std::size_t n) = 0;
  virtual void unpin(int dev, void* p) noexcept = 0;
  virtual void* alloc_pinned(int dev, std::size_t n) = 0;  // page-locked host memory; throws
  virtual void free_pinned(int dev, void* p) noexcept = 0;
  virtual void* alloc(int dev, std::size_t n) = 0;  // device memory; throws Error
  virtual void free(int dev, void* p) noexcept = 0;
  virtual Event create_event(int dev) = 0;
  virtual void destroy_event(int dev, Event e) noexcept = 0;

  // Work on the device's queue, executed in the order enqueued.
  // REQUIRES: src (host) stays unchanged until the queue has passed the copy.
  virtual void copy(int dev, void* d_dst, const void* src, std::size_t n) = 0;
  virtual void normalize(int dev, const kernels::NormalizeParams& p, const std::uint8_t* d_src,
                         void* d_dst) = 0;
  // random_erasing's rectangles (p.boxes in device memory) into a normalized output.
  virtual void erase(int dev, const kernels::EraseParams& p, void* d_dst) = 0;
  // MixUp/CutMix (p.mix in device memory) from one normalized buffer into another.
  virtual void mix(int dev, const kernels::MixParams& p, const void* d_src, void* d_dst) = 0;
  // decode=gpu/hybrid: the chunk's JPEGs that its workers left compressed (JpegJob::kDevice),
  // decoded and resized into d_out, the device's uint8 chunk (which holds the workers' pixels
  // of its other samples). REQUIRES: the jobs and bytes stay unchanged until the queue has
  // passed the decode, as a copy's source does.
  virtual void decode_jpegs(int dev, const JpegChunk& chunk, std::uint8_t* d_out) = 0;
  virtual void record(int dev, Event e) = 0;
  // fn(arg) runs once the queue has passed everything enqueued before it.
  virtual void call_when_done(int dev, void (*fn)(void*), void* arg) = 0;
  // Later work on the queue waits for the work already enqueued on the consumer's stream
  // (a cudaStream_t; cudaStreamLegacy and cudaStreamPerThread name device dev's), like torch's
  // Tensor.record_stream.
  virtual void wait_for_stream(int dev, void* consumer_stream) = 0;
  // Later work on the consumer's stream waits for event e (recorded on dev's queue); the host
  // does not wait.
  virtual void stream_wait_event(int dev, void* consumer_stream, Event e) = 0;

  // Blocks the calling thread until e has completed.
  virtual void wait(int dev, Event e) = 0;
  virtual void* stream(int dev) = 0;        // the native stream handle, or nullptr
  virtual void synchronize() noexcept = 0;  // waits for every queue
};

// Host devices: malloc'd buffers, normalize with the CPU reference on the calling thread.
std::unique_ptr<DeviceBackend> make_host_backend(int count);

// The GPUs in `set` (set.kind == kCuda). Throws ConfigError when CUDA is not built in or the
// devices cannot be used.
std::unique_ptr<DeviceBackend> make_cuda_backend(const DeviceSet& set);

}  // namespace stoke::detail
