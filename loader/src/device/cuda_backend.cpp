// The CUDA backend: one non-blocking stream per GPU. Built only with STOKE_WITH_CUDA; the CUDA
// runtime is linked statically into the training-process library and never into stoke-worker.

#include "device/device_backend.hpp"
#include "stoke/error.hpp"

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA

#include <cuda_runtime_api.h>

#include "cuda_check.hpp"
#include "stoke/kernels/normalize_cuda.hpp"

// CUDA failures surface as stoke::Error, like every other loader failure.
#define STOKE_CUDA_CALL(expr) CUDA_CALL_AS(::stoke::Error, expr)

namespace stoke::detail {

namespace {

// Makes `device` current for the scope and restores the caller's device afterwards: the
// backend also runs on user threads (Loader construction, Batch::wait, a batch's release),
// whose current device must not change under them.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    int current = 0;
    STOKE_CUDA_CALL(cudaGetDevice(&current));
    if (current != device) {
      STOKE_CUDA_CALL(cudaSetDevice(device));
      saved_ = current;
    }
  }
  ~DeviceScope() {
    if (saved_ >= 0) cudaSetDevice(saved_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int saved_ = -1;
};

class CudaBackend final : public DeviceBackend {
 public:
  explicit CudaBackend(const DeviceSet& set) : ids_(set.ids) {
    int visible = 0;
    const cudaError_t status = cudaGetDeviceCount(&visible);
    if (status != cudaSuccess) {
      throw ConfigError("devices " + set.to_string() + ": the CUDA runtime finds no usable GPU (" +
                        cudaGetErrorName(status) + ": " + cudaGetErrorString(status) +
                        "); use cpu:G, or see `stoke-bench --list-devices`");
    }
    for (int id : ids_) {
      if (id >= visible)
        throw ConfigError("devices " + set.to_string() + ": GPU " + std::to_string(id) +
                          " does not exist; the CUDA runtime sees " + std::to_string(visible) +
                          " GPU(s) (after CUDA_VISIBLE_DEVICES)");
    }
    for (int id : ids_) {
      const DeviceScope scope(id);
      cudaStream_t s = nullptr;
      STOKE_CUDA_CALL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      streams_.push_back(s);
      cudaDeviceProp prop{};
      STOKE_CUDA_CALL(cudaGetDeviceProperties(&prop, id));
      names_.emplace_back(prop.name);
    }
  }
  ~CudaBackend() override {
    synchronize();
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  }

  bool gpu() const override { return true; }
  int count() const override { return static_cast<int>(ids_.size()); }
  std::string describe() const override {
    std::string s;
    for (std::size_t i = 0; i < ids_.size(); ++i) {
      if (i > 0) s.append(", ");
      s.append("cuda:").append(std::to_string(ids_[i])).append(" (").append(names_[i]).append(")");
    }
    return s;
  }

  std::string pin(void* p, std::size_t n) override {
    // Portable: the pages are page-locked for every GPU's context, not only the current one.
    const cudaError_t status = cudaHostRegister(p, n, cudaHostRegisterPortable);
    if (status == cudaSuccess) return "";
    cudaGetLastError();  // not a sticky error: clear it from the last-error slot
    return std::string("cudaHostRegister: ") + cudaGetErrorName(status) + ": " +
           cudaGetErrorString(status);
  }
  void unpin(void* p) noexcept override { cudaHostUnregister(p); }
  void* alloc_pinned(std::size_t n) override {
    void* p = nullptr;
    STOKE_CUDA_CALL(cudaHostAlloc(&p, n, cudaHostAllocPortable));
    return p;
  }
  void free_pinned(void* p) noexcept override { cudaFreeHost(p); }
  void* alloc(int dev, std::size_t n) override {
    const DeviceScope scope(id(dev));
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, n);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error("cuda:" + std::to_string(id(dev)) + ": cannot allocate " +
                  std::to_string(n >> 20) + " MiB for batch buffers (" +
                  cudaGetErrorString(status) + "); lower the batch size or prefetch depth");
    }
    return p;
  }
  void free(int, void* p) noexcept override { cudaFree(p); }  // from any current device
  Event create_event(int dev) override {
    const DeviceScope scope(id(dev));
    cudaEvent_t e = nullptr;
    STOKE_CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }
  void destroy_event(int, Event e) noexcept override {
    cudaEventDestroy(static_cast<cudaEvent_t>(e));
  }

  void copy(int dev, void* d_dst, const void* src, std::size_t n) override {
    const DeviceScope scope(id(dev));
    STOKE_CUDA_CALL(cudaMemcpyAsync(d_dst, src, n, cudaMemcpyHostToDevice, stream_of(dev)));
  }
  void normalize(int dev, const kernels::NormalizeParams& p, const std::uint8_t* d_src,
                 void* d_dst) override {
    const DeviceScope scope(id(dev));
    kernels::normalize_cuda(p, d_src, d_dst, stream_of(dev));
  }
  void record(int dev, Event e) override {
    STOKE_CUDA_CALL(cudaEventRecord(static_cast<cudaEvent_t>(e), stream_of(dev)));
  }
  void call_when_done(int dev, void (*fn)(void*), void* arg) override {
    STOKE_CUDA_CALL(cudaLaunchHostFunc(stream_of(dev), fn, arg));
  }
  // The consumer's stream may live on another GPU (peer access): its event is made there. If
  // the wait cannot be enqueued, the host waits for the consumer's stream instead, so the
  // buffer is never rewritten while that work may still read it.
  void wait_for_stream(int dev, void* consumer_stream) override {
    const auto theirs = static_cast<cudaStream_t>(consumer_stream);
    int their_device = id(dev);
    cudaEvent_t e = nullptr;
    bool queued = cudaStreamGetDevice(theirs, &their_device) == cudaSuccess;
    if (queued) {
      const DeviceScope scope(their_device);
      queued = cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess &&
               cudaEventRecord(e, theirs) == cudaSuccess &&
               cudaStreamWaitEvent(stream_of(dev), e, 0) == cudaSuccess;
    }
    if (e != nullptr) cudaEventDestroy(e);  // released once the wait has been satisfied
    if (!queued) {
      cudaGetLastError();
      STOKE_CUDA_CALL(cudaStreamSynchronize(theirs));
    }
  }

  void wait(int, Event e) override {
    STOKE_CUDA_CALL(cudaEventSynchronize(static_cast<cudaEvent_t>(e)));
  }
  void* stream(int dev) override { return stream_of(dev); }
  void synchronize() noexcept override {
    for (cudaStream_t s : streams_) cudaStreamSynchronize(s);
  }

 private:
  int id(int dev) const { return ids_[static_cast<std::size_t>(dev)]; }
  cudaStream_t stream_of(int dev) const { return streams_[static_cast<std::size_t>(dev)]; }

  std::vector<int> ids_;
  std::vector<cudaStream_t> streams_;
  std::vector<std::string> names_;
};

}  // namespace

std::unique_ptr<DeviceBackend> make_cuda_backend(const DeviceSet& set) {
  return std::make_unique<CudaBackend>(set);
}

}  // namespace stoke::detail

#else

namespace stoke::detail {

std::unique_ptr<DeviceBackend> make_cuda_backend(const DeviceSet& set) {
  throw ConfigError("devices " + set.to_string() +
                    ": this build of stoke has no CUDA support (configured with STOKE_CUDA=OFF or "
                    "without nvcc); use cpu:G, or rebuild with -DSTOKE_CUDA=ON");
}

}  // namespace stoke::detail

#endif
