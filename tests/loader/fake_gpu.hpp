#pragma once
// A fake GPU for machines without one: "device memory" is host memory, each device's queue is
// a thread that runs the enqueued work in order (after an optional delay per copy, so a
// consumer can race ahead of the DMA), and every copy is checked: its source must lie inside a
// page-locked range (a pinned arena slot or a pinned allocation), and its bytes must not change
// between enqueue and execution. Every call records which CUDA ordinal it worked on, per
// thread, so a test can tell that a loader on cuda:1 never touched GPU 0.
//
// Thread-safety: all members may be called from any thread; FakeGpuLog is guarded by its mutex.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "device/device_backend.hpp"
#include "device/host_jpeg_decode.hpp"
#include "loader_environment.hpp"
#include "stoke/loader.hpp"

namespace stoke::test {

// A consumer's stream for the fake GPU: work recorded on it completes when the test says so.
struct FakeConsumerStream {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  void finish() {
    {
      std::lock_guard lock(mutex);
      done = true;
    }
    cv.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return done; });
  }
};

// What a test sets up and observes.
struct FakeGpuLog {
  std::mutex mutex;
  bool refuse_pin = false;
  std::chrono::milliseconds copy_delay{0};
  std::map<std::uintptr_t, std::size_t> pinned;  // start -> size: page-locked arena slots
  std::map<std::uintptr_t, std::size_t> pinned_allocs;
  std::int64_t copies = 0;
  std::int64_t copies_from_pinned_arena = 0;
  std::int64_t copies_from_pinned_allocs = 0;
  std::int64_t copies_from_pageable = 0;
  std::int64_t sources_changed_before_dma = 0;
  std::int64_t stream_waits = 0;
  std::int64_t event_waits = 0;         // stream_wait_event calls
  std::int64_t callbacks_returned = 0;  // call_when_done callbacks that have run to the end
  // The CUDA ordinals each thread's calls worked on.
  std::map<std::thread::id, std::set<int>> touched;
  std::int64_t backends_created = 0;
  std::int64_t unpinned = 0;
  // Called by copy() as it is enqueued (on the stager thread, inside staging), if set.
  std::function<void()> on_enqueue_copy;
  // Each executed copy: its enqueue number (1, 2, ...) and when it ran.
  std::vector<std::pair<std::int64_t, std::chrono::steady_clock::time_point>> copies_executed;
  int erases = 0;  // erase calls enqueued
  int mixes = 0;   // mix calls enqueued
  int jpeg_decodes = 0;  // decode_jpegs calls enqueued
  // The fake device's memory (alloc'd, not yet freed), and the kernels handed arrays or chunks
  // outside it (host memory a real GPU could not read).
  std::map<std::uintptr_t, std::size_t> device_allocs;
  int kernels_given_host_memory = 0;

  static bool inside(const std::map<std::uintptr_t, std::size_t>& ranges, const void* p,
                     std::size_t n) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = ranges.upper_bound(a);
    if (it == ranges.begin()) return false;
    --it;
    return a >= it->first && a + n <= it->first + it->second;
  }
};

inline std::uint64_t fnv1a(const void* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

class FakeGpu final : public detail::DeviceBackend {
 public:
  FakeGpu(const DeviceSet& set, std::shared_ptr<FakeGpuLog> log)
      : log_(std::move(log)), ids_(set.ids) {
    for (int d = 0; d < set.count; ++d) {
      queues_.push_back(std::make_unique<Queue>());
      decoders_.push_back(std::make_unique<detail::HostJpegDecode>());
    }
    std::lock_guard lock(log_->mutex);
    log_->backends_created += 1;
  }
  ~FakeGpu() override {
    for (auto& q : queues_) q->stop();
  }

  bool gpu() const override { return true; }
  int count() const override { return static_cast<int>(queues_.size()); }
  std::string describe() const override { return "fake GPU"; }

  std::string pin(int dev, void* p, std::size_t n) override {
    touch(dev);
    std::lock_guard lock(log_->mutex);
    if (log_->refuse_pin) return "cudaHostRegister: fake: memlock limit reached";
    log_->pinned[reinterpret_cast<std::uintptr_t>(p)] = n;
    return "";
  }
  void unpin(int dev, void* p) noexcept override {
    touch(dev);
    std::lock_guard lock(log_->mutex);
    log_->pinned.erase(reinterpret_cast<std::uintptr_t>(p));
    log_->unpinned += 1;
  }
  void* alloc_pinned(int dev, std::size_t n) override {
    touch(dev);
    void* p = std::malloc(n);
    std::lock_guard lock(log_->mutex);
    log_->pinned_allocs[reinterpret_cast<std::uintptr_t>(p)] = n;
    return p;
  }
  void free_pinned(int dev, void* p) noexcept override {
    touch(dev);
    {
      std::lock_guard lock(log_->mutex);
      log_->pinned_allocs.erase(reinterpret_cast<std::uintptr_t>(p));
    }
    std::free(p);
  }
  void* alloc(int dev, std::size_t n) override {
    touch(dev);
    void* p = std::malloc(n);
    std::memset(p, 0xCD, n);  // never-written device memory is recognisable
    std::lock_guard lock(log_->mutex);
    log_->device_allocs[reinterpret_cast<std::uintptr_t>(p)] = n;
    return p;
  }
  void free(int dev, void* p) noexcept override {
    touch(dev);
    {
      std::lock_guard lock(log_->mutex);
      log_->device_allocs.erase(reinterpret_cast<std::uintptr_t>(p));
    }
    std::free(p);
  }
  detail::Event create_event(int dev) override {
    touch(dev);
    return new FakeEvent();
  }
  void destroy_event(int dev, detail::Event e) noexcept override {
    touch(dev);
    delete static_cast<FakeEvent*>(e);
  }

  void copy(int dev, void* d_dst, const void* src, std::size_t n) override {
    touch(dev);
    std::function<void()> hook;
    {
      std::lock_guard lock(log_->mutex);
      hook = log_->on_enqueue_copy;
    }
    if (hook) hook();
    std::int64_t number = 0;
    {
      std::lock_guard lock(log_->mutex);
      log_->copies += 1;
      number = log_->copies;
      if (FakeGpuLog::inside(log_->pinned, src, n))
        log_->copies_from_pinned_arena += 1;
      else if (FakeGpuLog::inside(log_->pinned_allocs, src, n))
        log_->copies_from_pinned_allocs += 1;
      else
        log_->copies_from_pageable += 1;
    }
    const std::uint64_t before = fnv1a(src, n);
    const auto delay = log_->copy_delay;
    auto log = log_;
    queue(dev).push([=] {
      std::this_thread::sleep_for(delay);
      const bool changed = fnv1a(src, n) != before;
      std::memcpy(d_dst, src, n);
      std::lock_guard lock(log->mutex);
      if (changed) log->sources_changed_before_dma += 1;
      log->copies_executed.emplace_back(number, std::chrono::steady_clock::now());
    });
  }
  void normalize(int dev, const kernels::NormalizeParams& p, const std::uint8_t* d_src,
                 void* d_dst) override {
    touch(dev);
    queue(dev).push([=] { kernels::normalize_cpu(p, d_src, d_dst); });
  }
  // Reads the rectangles from the fake device's copy of the batch's arrays, in queue order.
  void erase(int dev, const kernels::EraseParams& p, void* d_dst) override {
    touch(dev);
    {
      std::lock_guard lock(log_->mutex);
      log_->erases += 1;
    }
    queue(dev).push([=] { kernels::erase_cpu(p, d_dst); });
  }
  // Reads the mixing from the fake device's copy of the batch's arrays, in queue order.
  void mix(int dev, const kernels::MixParams& p, const void* d_src, void* d_dst) override {
    touch(dev);
    {
      std::lock_guard lock(log_->mutex);
      log_->mixes += 1;
      const std::size_t chunk = std::size_t(p.samples) * std::size_t(p.height) *
                                std::size_t(p.width) * std::size_t(p.channels) *
                                kernels::dtype_size(p.dtype);
      const auto& mem = log_->device_allocs;
      if (!FakeGpuLog::inside(mem, p.mix, sizeof(kernels::MixSample) * std::size_t(p.samples)) ||
          !FakeGpuLog::inside(mem, d_src, chunk) || !FakeGpuLog::inside(mem, d_dst, chunk))
        log_->kernels_given_host_memory += 1;
    }
    queue(dev).push([=] { kernels::mix_cpu(p, d_src, d_dst); });
  }
  // The reference decode (host_jpeg_decode.hpp), in queue order, into the fake device's chunk;
  // the jobs, geometry and bytes are read from the arena as nvJPEG reads them (host memory),
  // checked unchanged between enqueue and execution like a copy's source.
  void decode_jpegs(int dev, const detail::JpegChunk& chunk, std::uint8_t* d_out) override {
    touch(dev);
    const std::size_t job_bytes = sizeof(detail::JpegJob) * std::size_t(chunk.samples);
    const std::size_t byte_count = chunk.stride * std::size_t(chunk.samples);
    const std::size_t geometry_bytes = 6 * sizeof(float) * std::size_t(chunk.samples);
    const auto inputs = [=] {
      return fnv1a(chunk.jobs, job_bytes) ^ fnv1a(chunk.compressed, byte_count) ^
             fnv1a(chunk.geometry, geometry_bytes);
    };
    const std::uint64_t before = inputs();
    {
      std::lock_guard lock(log_->mutex);
      log_->jpeg_decodes += 1;
    }
    detail::HostJpegDecode* decode = decoders_[static_cast<std::size_t>(dev)].get();
    auto log = log_;
    queue(dev).push([=] {
      const bool changed = inputs() != before;
      decode->run(chunk, d_out);
      std::lock_guard lock(log->mutex);
      if (changed) log->sources_changed_before_dma += 1;
    });
  }
  void record(int dev, detail::Event e) override {
    touch(dev);
    auto* ev = static_cast<FakeEvent*>(e);
    ev->reset();
    queue(dev).push([ev] { ev->fire(); });
  }
  void call_when_done(int dev, void (*fn)(void*), void* arg) override {
    touch(dev);
    auto log = log_;
    queue(dev).push([fn, arg, log] {
      fn(arg);
      std::lock_guard lock(log->mutex);
      log->callbacks_returned += 1;
    });
  }
  // `consumer_stream` is a FakeConsumerStream (or null): later work on the queue waits for it.
  void wait_for_stream(int dev, void* consumer_stream) override {
    touch(dev);
    {
      std::lock_guard lock(log_->mutex);
      log_->stream_waits += 1;
    }
    if (consumer_stream != nullptr) {
      auto* theirs = static_cast<FakeConsumerStream*>(consumer_stream);
      queue(dev).push([theirs] { theirs->wait(); });
    }
  }
  // `consumer_stream` is a FakeConsumerStream: the wait is logged (its work never runs here).
  void stream_wait_event(int dev, void*, detail::Event) override {
    touch(dev);
    std::lock_guard lock(log_->mutex);
    log_->event_waits += 1;
  }
  void wait(int dev, detail::Event e) override {
    touch(dev);
    static_cast<FakeEvent*>(e)->wait();
  }
  void* stream(int dev) override { return queues_[static_cast<std::size_t>(dev)].get(); }
  void synchronize() noexcept override {
    for (auto& q : queues_) q->drain();
  }

 private:
  struct FakeEvent {
    std::mutex m;
    std::condition_variable cv;
    bool done = true;
    void reset() {
      std::lock_guard lock(m);
      done = false;
    }
    void fire() {
      {
        std::lock_guard lock(m);
        done = true;
      }
      cv.notify_all();
    }
    void wait() {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return done; });
    }
  };

  // One in-order queue per device, executed by its own thread.
  class Queue {
   public:
    Queue() : thread_([this] { run(); }) {}
    void push(std::function<void()> f) {
      {
        std::lock_guard lock(m_);
        work_.push_back(std::move(f));
      }
      cv_.notify_all();
    }
    void drain() {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return work_.empty() && !busy_; });
    }
    void stop() {
      drain();
      {
        std::lock_guard lock(m_);
        stop_ = true;
      }
      cv_.notify_all();
      thread_.join();
    }

   private:
    void run() {
      std::unique_lock lock(m_);
      for (;;) {
        cv_.wait(lock, [&] { return stop_ || !work_.empty(); });
        if (work_.empty()) return;
        auto f = std::move(work_.front());
        work_.pop_front();
        busy_ = true;
        lock.unlock();
        f();
        lock.lock();
        busy_ = false;
        cv_.notify_all();
      }
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> work_;
    bool busy_ = false;
    bool stop_ = false;
    std::thread thread_;
  };

  Queue& queue(int dev) { return *queues_[static_cast<std::size_t>(dev)]; }
  // Records dev's CUDA ordinal for this thread; a position outside the set shows as -1.
  void touch(int dev) noexcept {
    const bool known = dev >= 0 && dev < static_cast<int>(ids_.size());
    std::lock_guard lock(log_->mutex);
    log_->touched[std::this_thread::get_id()].insert(known ? ids_[static_cast<std::size_t>(dev)]
                                                           : -1);
  }

  std::shared_ptr<FakeGpuLog> log_;
  std::vector<int> ids_;  // CUDA ordinals
  std::vector<std::unique_ptr<detail::HostJpegDecode>>
      decoders_;  // per device (its queue's thread)
  std::vector<std::unique_ptr<Queue>> queues_;
};

// Makes loaders whose CUDA devices are fake GPUs, all logging to one FakeGpuLog.
class FakeGpuScope {
 public:
  FakeGpuScope() : log_(std::make_shared<FakeGpuLog>()) {}
  // A loader like Loader(options), its CUDA backend a FakeGpu.
  Loader loader(Options options) const {
    detail::LoaderEnvironment env;
    env.gpu_backend = [log = log_](const DeviceSet& set) {
      return std::make_unique<FakeGpu>(set, log);
    };
    return detail::LoaderAccess::make(std::move(options), env);
  }
  FakeGpuLog& log() { return *log_; }

 private:
  std::shared_ptr<FakeGpuLog> log_;
};

}  // namespace stoke::test
