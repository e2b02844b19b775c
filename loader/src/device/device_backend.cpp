#include "device/device_backend.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "device/host_jpeg_decode.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

constexpr std::size_t kHostAlignment = 64;

// Host devices: the "device" is this process's memory and every queue runs synchronously on
// the thread that enqueues, so a callback runs before call_when_done returns.
class HostBackend final : public DeviceBackend {
 public:
  explicit HostBackend(int count) : count_(count) {}
  bool gpu() const override { return false; }
  int count() const override { return count_; }
  std::string describe() const override { return "cpu:" + std::to_string(count_); }

  std::string pin(int, void*, std::size_t) override { return ""; }
  void unpin(int, void*) noexcept override {}
  void* alloc_pinned(int, std::size_t n) override { return allocate(n); }
  void free_pinned(int, void* p) noexcept override { std::free(p); }
  void* alloc(int, std::size_t n) override { return allocate(n); }
  void free(int, void* p) noexcept override { std::free(p); }
  // Host queues are always complete; any non-null handle will do.
  Event create_event(int) override { return this; }
  void destroy_event(int, Event) noexcept override {}

  void copy(int, void* d_dst, const void* src, std::size_t n) override {
    std::memcpy(d_dst, src, n);
  }
  void normalize(int, const kernels::NormalizeParams& p, const std::uint8_t* d_src,
                 void* d_dst) override {
    kernels::normalize_cpu(p, d_src, d_dst);
  }
  void erase(int, const kernels::EraseParams& p, void* d_dst) override {
    kernels::erase_cpu(p, d_dst);
  }
  void mix(int, const kernels::MixParams& p, const void* d_src, void* d_dst) override {
    kernels::mix_cpu(p, d_src, d_dst);
  }
  void decode_jpegs(int, const JpegChunk& chunk, std::uint8_t* d_out) override {
    decode_.run(chunk, d_out);
  }
  void record(int, Event) override {}
  void call_when_done(int, void (*fn)(void*), void* arg) override { fn(arg); }
  void wait_for_stream(int, void*) override {}
  void stream_wait_event(int, void*, Event) override {}
  void wait(int, Event) override {}
  void* stream(int) override { return nullptr; }
  void synchronize() noexcept override {}

 private:
  static void* allocate(std::size_t n) {
    const std::size_t rounded = (n + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
    void* p = std::aligned_alloc(kHostAlignment, rounded == 0 ? kHostAlignment : rounded);
    if (p == nullptr)
      throw Error("out of host memory allocating " + std::to_string(n >> 20) +
                  " MiB for a host device's batch buffer");
    return p;
  }
  int count_;
  HostJpegDecode decode_;  // (the stager's thread only)
};

}  // namespace

std::unique_ptr<DeviceBackend> make_host_backend(int count) {
  return std::make_unique<HostBackend>(count);
}

}  // namespace stoke::detail
