// The CUDA backend: one non-blocking stream per GPU. Built only with STOKE_WITH_CUDA; the CUDA
// runtime is linked statically into the training-process library and never into stoke-worker.

#include "device/device_backend.hpp"
#include "stoke/error.hpp"

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>

#include "cuda_check.hpp"
#include "device/nvjpeg_decoder.hpp"
#include "stoke/kernels/erase_cuda.hpp"
#include "stoke/kernels/mix_cuda.hpp"
#include "stoke/kernels/normalize_cuda.hpp"

// CUDA failures surface as stoke::Error, like every other loader failure.
#define STOKE_CUDA_CALL(expr) CUDA_CALL_AS(::stoke::Error, expr)

namespace stoke::detail {

namespace {

// The calling thread's current context, read and restored through the driver API: the runtime
// alone cannot restore "no context" (since CUDA 12, cudaSetDevice creates the primary context
// of the device it names and makes it current), so a runtime save/restore on a fresh thread
// would leave a context on GPU 0 in every process that uses stoke on another GPU. The entry
// points come through the runtime, so the library does not link libcuda (it still loads on
// machines without a driver).
struct DriverApi {
  PFN_cuCtxGetCurrent_v4000 get_current = nullptr;
  PFN_cuCtxSetCurrent_v4000 set_current = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 retain_primary = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 release_primary = nullptr;
};

template <class Fn>
void find_entry_point(const char* symbol, Fn& fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  const cudaError_t status =
      cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &found);
  if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || p == nullptr) {
    cudaGetLastError();
    throw ConfigError(std::string("the CUDA driver does not provide ") + symbol +
                      " (a driver for CUDA 12 or newer is needed)");
  }
  fn = reinterpret_cast<Fn>(p);
}

const DriverApi& driver() {
  static const DriverApi api = [] {
    DriverApi a;
    find_entry_point("cuCtxGetCurrent", a.get_current);
    find_entry_point("cuCtxSetCurrent", a.set_current);
    find_entry_point("cuDeviceGet", a.device_get);
    find_entry_point("cuDevicePrimaryCtxRetain", a.retain_primary);
    find_entry_point("cuDevicePrimaryCtxRelease", a.release_primary);
    return a;
  }();
  return api;
}

// Makes `context` current for the scope and restores the caller's context (or none)
// afterwards: the backend also runs on user threads (Loader construction, Batch::wait, a
// batch's release), whose current device must not change under them.
class ContextScope {
 public:
  explicit ContextScope(CUcontext context) {
    const DriverApi& api = driver();
    if (api.get_current(&saved_) != CUDA_SUCCESS) saved_ = nullptr;
    if (saved_ != context) {
      if (api.set_current(context) != CUDA_SUCCESS)
        throw Error("cannot make a GPU's context current on this thread");
      restore_ = true;
    }
  }
  ~ContextScope() {
    if (restore_) driver().set_current(saved_);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  CUcontext saved_ = nullptr;
  bool restore_ = false;
};

// GPU `id`'s primary context (the one the runtime and PyTorch use), initialized and retained
// without being made current on the calling thread. Released by release_primary().
CUcontext retain_primary_context(int id) {
  const cudaError_t status = cudaInitDevice(id, 0, 0);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw ConfigError("cuda:" + std::to_string(id) + ": cannot initialize it (" +
                      cudaGetErrorName(status) + ": " + cudaGetErrorString(status) + ")");
  }
  const DriverApi& api = driver();
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (api.device_get(&device, id) != CUDA_SUCCESS ||
      api.retain_primary(&context, device) != CUDA_SUCCESS || context == nullptr)
    throw ConfigError("cuda:" + std::to_string(id) + ": cannot retain its primary context");
  return context;
}

void release_primary_context(int id) noexcept {
  const DriverApi& api = driver();
  CUdevice device = 0;
  if (api.device_get(&device, id) == CUDA_SUCCESS) api.release_primary(device);
}

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
      contexts_.push_back(retain_primary_context(id));
      const ContextScope scope(contexts_.back());
      cudaStream_t s = nullptr;
      STOKE_CUDA_CALL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      streams_.push_back(s);
      decoders_.emplace_back();
      cudaDeviceProp prop{};
      STOKE_CUDA_CALL(cudaGetDeviceProperties(&prop, id));
      names_.emplace_back(prop.name);
    }
  }
  ~CudaBackend() override {
    synchronize();
    for (int dev = 0; dev < static_cast<int>(streams_.size()); ++dev) {
      quietly(dev, [&] { decoders_[static_cast<std::size_t>(dev)].reset(); });
      quietly(dev, [&] { cudaStreamDestroy(stream_of(dev)); });
    }
    for (int id : ids_) release_primary_context(id);
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

  std::string pin(int dev, void* p, std::size_t n) override {
    const ContextScope scope(context(dev));
    // Portable: the pages are page-locked for every GPU's context, not only this one.
    const cudaError_t status = cudaHostRegister(p, n, cudaHostRegisterPortable);
    if (status == cudaSuccess) return "";
    cudaGetLastError();  // not a sticky error: clear it from the last-error slot
    return std::string("cudaHostRegister: ") + cudaGetErrorName(status) + ": " +
           cudaGetErrorString(status);
  }
  void unpin(int dev, void* p) noexcept override {
    quietly(dev, [&] { cudaHostUnregister(p); });
  }
  void* alloc_pinned(int dev, std::size_t n) override {
    const ContextScope scope(context(dev));
    void* p = nullptr;
    STOKE_CUDA_CALL(cudaHostAlloc(&p, n, cudaHostAllocPortable));
    return p;
  }
  void free_pinned(int dev, void* p) noexcept override {
    quietly(dev, [&] { cudaFreeHost(p); });
  }
  void* alloc(int dev, std::size_t n) override {
    const ContextScope scope(context(dev));
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
  void free(int dev, void* p) noexcept override {
    quietly(dev, [&] { cudaFree(p); });
  }
  Event create_event(int dev) override {
    const ContextScope scope(context(dev));
    cudaEvent_t e = nullptr;
    STOKE_CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }
  void destroy_event(int dev, Event e) noexcept override {
    quietly(dev, [&] { cudaEventDestroy(static_cast<cudaEvent_t>(e)); });
  }

  void copy(int dev, void* d_dst, const void* src, std::size_t n) override {
    const ContextScope scope(context(dev));
    STOKE_CUDA_CALL(cudaMemcpyAsync(d_dst, src, n, cudaMemcpyHostToDevice, stream_of(dev)));
  }
  void normalize(int dev, const kernels::NormalizeParams& p, const std::uint8_t* d_src,
                 void* d_dst) override {
    const ContextScope scope(context(dev));
    kernels::normalize_cuda(p, d_src, d_dst, stream_of(dev));
  }
  void erase(int dev, const kernels::EraseParams& p, void* d_dst) override {
    const ContextScope scope(context(dev));
    kernels::erase_cuda(p, d_dst, stream_of(dev));
  }
  void mix(int dev, const kernels::MixParams& p, const void* d_src, void* d_dst) override {
    const ContextScope scope(context(dev));
    kernels::mix_cuda(p, d_src, d_dst, stream_of(dev));
  }
  // nvJPEG's decoder for the device, made at its first batch (its handles and buffers live in
  // the device's context).
  void decode_jpegs(int dev, const JpegChunk& chunk, std::uint8_t* d_out) override {
    const ContextScope scope(context(dev));
    std::unique_ptr<NvjpegDecoder>& decoder = decoders_[static_cast<std::size_t>(dev)];
    if (!decoder) decoder = std::make_unique<NvjpegDecoder>(stream_of(dev));
    decoder->decode(chunk, d_out);
  }
  void record(int dev, Event e) override {
    const ContextScope scope(context(dev));
    STOKE_CUDA_CALL(cudaEventRecord(static_cast<cudaEvent_t>(e), stream_of(dev)));
  }
  void call_when_done(int dev, void (*fn)(void*), void* arg) override {
    const ContextScope scope(context(dev));
    STOKE_CUDA_CALL(cudaLaunchHostFunc(stream_of(dev), fn, arg));
  }
  // The consumer's stream may live on another GPU (peer access): its event is made and
  // recorded in that GPU's primary context (held for the call when the GPU is not in the set).
  // The special handles (cudaStreamLegacy, cudaStreamPerThread) resolve in the current
  // context, which is dev's. If the wait cannot be enqueued, the host waits for the consumer's
  // stream instead, so the buffer is never rewritten while that work may still read it.
  void wait_for_stream(int dev, void* consumer_stream) override {
    const ContextScope scope(context(dev));
    const auto theirs = static_cast<cudaStream_t>(consumer_stream);
    int their_device = id(dev);
    bool queued = cudaStreamGetDevice(theirs, &their_device) == cudaSuccess;
    if (queued) {
      const auto it = std::find(ids_.begin(), ids_.end(), their_device);
      const bool ours = it != ids_.end();
      try {
        const CUcontext there = ours ? contexts_[static_cast<std::size_t>(it - ids_.begin())]
                                     : retain_primary_context(their_device);
        {
          const ContextScope in_there(there);
          cudaEvent_t e = nullptr;
          queued = cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess &&
                   cudaEventRecord(e, theirs) == cudaSuccess &&
                   cudaStreamWaitEvent(stream_of(dev), e, 0) == cudaSuccess;
          if (e != nullptr) cudaEventDestroy(e);  // released once the wait has been satisfied
        }
        if (!ours) release_primary_context(their_device);
      } catch (const Error&) {
        queued = false;
      }
    }
    if (!queued) {
      cudaGetLastError();
      STOKE_CUDA_CALL(cudaStreamSynchronize(theirs));
    }
  }
  void stream_wait_event(int dev, void* consumer_stream, Event e) override {
    const ContextScope scope(context(dev));
    STOKE_CUDA_CALL(cudaStreamWaitEvent(static_cast<cudaStream_t>(consumer_stream),
                                        static_cast<cudaEvent_t>(e), 0));
  }

  void wait(int dev, Event e) override {
    const ContextScope scope(context(dev));
    STOKE_CUDA_CALL(cudaEventSynchronize(static_cast<cudaEvent_t>(e)));
  }
  void* stream(int dev) override { return stream_of(dev); }
  void synchronize() noexcept override {
    for (int dev = 0; dev < count(); ++dev)
      quietly(dev, [&] { cudaStreamSynchronize(stream_of(dev)); });
  }

 private:
  // Runs a release-type call (no error to report) in dev's context, from a noexcept path.
  template <class F>
  void quietly(int dev, F f) const noexcept {
    try {
      const ContextScope scope(context(dev));
      f();
    } catch (...) {
      // The context cannot be made current: the device is gone, and so is what f releases.
    }
  }
  int id(int dev) const { return ids_[static_cast<std::size_t>(dev)]; }
  CUcontext context(int dev) const { return contexts_[static_cast<std::size_t>(dev)]; }
  cudaStream_t stream_of(int dev) const { return streams_[static_cast<std::size_t>(dev)]; }

  std::vector<int> ids_;
  std::vector<CUcontext> contexts_;  // primary contexts, retained by the runtime
  std::vector<cudaStream_t> streams_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<NvjpegDecoder>> decoders_;  // per device; null until decode=gpu
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
