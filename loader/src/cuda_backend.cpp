// The CUDA backend: one non-blocking stream per GPU. Built only with STOKE_WITH_CUDA; the CUDA
// runtime is linked statically into the training-process library and never into stoke-worker.

#include "device_backend.hpp"
#include "stoke/error.hpp"

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA

#include <cuda_runtime_api.h>

#include "cuda_check.hpp"
#include "stoke/kernels/normalize_cuda.hpp"

namespace stoke::detail {

namespace {

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
      CUDA_CALL(cudaSetDevice(id));
      cudaStream_t s = nullptr;
      CUDA_CALL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      streams_.push_back(s);
      cudaDeviceProp prop{};
      CUDA_CALL(cudaGetDeviceProperties(&prop, id));
      names_.emplace_back(prop.name);
    }
  }
  ~CudaBackend() override {
    synchronize();
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      cudaSetDevice(ids_[i]);
      cudaStreamDestroy(streams_[i]);
    }
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
    cudaGetLastError();  // clear the sticky-free error so later calls do not report it
    return std::string("cudaHostRegister: ") + cudaGetErrorName(status) + ": " +
           cudaGetErrorString(status);
  }
  void unpin(void* p) noexcept override { cudaHostUnregister(p); }
  void* alloc_pinned(std::size_t n) override {
    void* p = nullptr;
    CUDA_CALL(cudaHostAlloc(&p, n, cudaHostAllocPortable));
    return p;
  }
  void free_pinned(void* p) noexcept override { cudaFreeHost(p); }
  void* alloc(int dev, std::size_t n) override {
    select(dev);
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, n);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error("cuda:" + std::to_string(ids_[dev]) + ": cannot allocate " +
                  std::to_string(n >> 20) + " MiB for batch buffers (" +
                  cudaGetErrorString(status) + "); lower the batch size or prefetch depth");
    }
    return p;
  }
  void free(int dev, void* p) noexcept override {
    cudaSetDevice(ids_[static_cast<std::size_t>(dev)]);
    cudaFree(p);
  }
  Event create_event(int dev) override {
    select(dev);
    cudaEvent_t e = nullptr;
    CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }
  void destroy_event(int dev, Event e) noexcept override {
    cudaSetDevice(ids_[static_cast<std::size_t>(dev)]);
    cudaEventDestroy(static_cast<cudaEvent_t>(e));
  }

  void copy(int dev, void* d_dst, const void* src, std::size_t n) override {
    select(dev);
    CUDA_CALL(cudaMemcpyAsync(d_dst, src, n, cudaMemcpyHostToDevice, stream_of(dev)));
  }
  void normalize(int dev, const kernels::NormalizeParams& p, const std::uint8_t* d_src,
                 void* d_dst) override {
    select(dev);
    kernels::normalize_cuda(p, d_src, d_dst, stream_of(dev));
  }
  void record(int dev, Event e) override {
    select(dev);
    CUDA_CALL(cudaEventRecord(static_cast<cudaEvent_t>(e), stream_of(dev)));
  }
  void call_when_done(int dev, void (*fn)(void*), void* arg) override {
    select(dev);
    CUDA_CALL(cudaLaunchHostFunc(stream_of(dev), fn, arg));
  }
  void wait_for_stream(int dev, void* consumer_stream) override {
    select(dev);
    cudaEvent_t e = nullptr;
    CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CUDA_CALL(cudaEventRecord(e, static_cast<cudaStream_t>(consumer_stream)));
    CUDA_CALL(cudaStreamWaitEvent(stream_of(dev), e, 0));
    CUDA_CALL(cudaEventDestroy(e));  // released once the wait has been satisfied
  }

  void wait(int dev, Event e) override {
    select(dev);
    CUDA_CALL(cudaEventSynchronize(static_cast<cudaEvent_t>(e)));
  }
  void* stream(int dev) override { return stream_of(dev); }
  void synchronize() noexcept override {
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      cudaSetDevice(ids_[i]);
      cudaStreamSynchronize(streams_[i]);
    }
  }

 private:
  void select(int dev) const { CUDA_CALL(cudaSetDevice(ids_[static_cast<std::size_t>(dev)])); }
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
