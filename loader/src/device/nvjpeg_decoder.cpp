#include "device/nvjpeg_decoder.hpp"

#include "stoke/error.hpp"

#if defined(STOKE_WITH_NVJPEG) && STOKE_WITH_NVJPEG

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvjpeg.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <vector>

#include "cuda_check.hpp"
#include "device/host_jpeg_decode.hpp"
#include "stoke/kernels/resize_cuda.hpp"

#define STOKE_CUDA_CALL(expr) CUDA_CALL_AS(::stoke::Error, expr)

namespace stoke::detail {

namespace {

// The nvJPEG entry points the decoder uses, found by name in the library.
#define STOKE_NVJPEG_FUNCTIONS(X)      \
  X(nvjpegCreateEx)                    \
  X(nvjpegDestroy)                     \
  X(nvjpegJpegStateCreate)             \
  X(nvjpegJpegStateDestroy)            \
  X(nvjpegDecodeBatchedInitialize)     \
  X(nvjpegDecodeBatchedEx)             \
  X(nvjpegDecodeBatchedSupportedEx)    \
  X(nvjpegDecodeParamsCreate)          \
  X(nvjpegDecodeParamsDestroy)         \
  X(nvjpegDecodeParamsSetOutputFormat) \
  X(nvjpegDecodeParamsSetROI)          \
  X(nvjpegJpegStreamCreate)            \
  X(nvjpegJpegStreamDestroy)           \
  X(nvjpegJpegStreamParse)             \
  X(nvjpegJpegStreamParseHeader)       \
  X(nvjpegDecoderCreate)               \
  X(nvjpegDecoderDestroy)              \
  X(nvjpegDecoderStateCreate)          \
  X(nvjpegDecodeJpegHost)              \
  X(nvjpegDecodeJpegTransferToDevice)  \
  X(nvjpegDecodeJpegDevice)            \
  X(nvjpegBufferPinnedCreate)          \
  X(nvjpegBufferPinnedDestroy)         \
  X(nvjpegBufferDeviceCreate)          \
  X(nvjpegBufferDeviceDestroy)         \
  X(nvjpegStateAttachPinnedBuffer)     \
  X(nvjpegStateAttachDeviceBuffer)

struct NvjpegApi {
#define STOKE_NVJPEG_MEMBER(name) decltype(&::name) name = nullptr;
  STOKE_NVJPEG_FUNCTIONS(STOKE_NVJPEG_MEMBER)
#undef STOKE_NVJPEG_MEMBER
  std::string error;  // why it is not loaded; "" when it is
};

// Loaded once per process and kept loaded (decoders of any loader may use it until exit).
const NvjpegApi& nvjpeg() {
  static const NvjpegApi api = [] {
    NvjpegApi a;
    const char* named = std::getenv("STOKE_NVJPEG");
    const std::string file = named != nullptr && *named != '\0' ? named : "libnvjpeg.so.13";
    void* lib = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = ::dlerror();
      a.error = "cannot load " + file + " (" + (why != nullptr ? why : "dlopen failed") +
                "): install NVIDIA's nvJPEG (pip install nvidia-nvjpeg, or the CUDA toolkit's "
                "libnvjpeg) where the loader finds it (LD_LIBRARY_PATH), or set STOKE_NVJPEG "
                "to the library's path";
      return a;
    }
#define STOKE_NVJPEG_LOAD(name)                                                    \
  a.name = reinterpret_cast<decltype(a.name)>(::dlsym(lib, #name));                \
  if (a.name == nullptr) {                                                         \
    a.error = file + " has no " #name " (nvJPEG of CUDA 12.2 or newer is needed)"; \
    return a;                                                                      \
  }
    STOKE_NVJPEG_FUNCTIONS(STOKE_NVJPEG_LOAD)
#undef STOKE_NVJPEG_LOAD
    return a;
  }();
  return api;
}

const char* status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS:
      return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG:
      return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "incomplete bitstream";
    default:
      return "unknown status";
  }
}

void check(nvjpegStatus_t s, const char* what) {
  if (s != NVJPEG_STATUS_SUCCESS)
    throw Error(std::string("nvJPEG: ") + what + " failed (" + status_name(s) + ", " +
                std::to_string(static_cast<int>(s)) + ")");
}

// The region of the image each device job decodes (its resize's taps, widened to 16-pixel
// boundaries, which every backend's region decode takes), and where in the regions' buffer.
struct Item {
  int k = 0;  // the sample in the chunk
  JpegWindow window;  // the source window its output covers
  int x = 0, y = 0, width = 0, height = 0;
  std::size_t offset = 0;
  bool host = false;  // nvJPEG refused it: the reference decoded it (or it failed too)
};

constexpr std::size_t kRegionAlignment = 256;
constexpr int kTimings = 8;  // batches whose GPU time may be outstanding at once

}  // namespace

void require_nvjpeg() {
  if (!nvjpeg().error.empty()) throw ConfigError("decode=gpu on CUDA devices: " + nvjpeg().error);
}

struct NvjpegDecoder::State {
  const NvjpegApi& nv = nvjpeg();
  cudaStream_t stream = nullptr;
  // nvJPEG's CUDA decoders: GPU-assisted Huffman (baseline) and CPU Huffman (progressive),
  // each with its state; two pinned buffers taken in turn (one may still feed a copy to the
  // device while the next file's Huffman decode fills the other) and a device buffer each.
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegDecoder_t decoders[2] = {};
  nvjpegJpegState_t states[2] = {};
  nvjpegBufferDevice_t device_buffers[2] = {};
  nvjpegBufferPinned_t pinned[2] = {};
  cudaEvent_t pinned_free[2] = {};
  int next_pinned = 0;
  nvjpegJpegStream_t jpeg = nullptr;
  nvjpegDecodeParams_t params = nullptr;
  // The hardware decoder (null where the GPU has none): batched, a parameter set per file, and
  // two states taken in turn, each free again once the stream has passed its last batch (the
  // stager enqueues a batch while the device may still decode the one before).
  nvjpegHandle_t hw_handle = nullptr;
  nvjpegJpegState_t hw_states[2] = {};
  cudaEvent_t hw_free[2] = {};
  int hw_batch[2] = {};  // the batch size nvjpegDecodeBatchedInitialize last gave each state
  int next_hw = 0;
  nvjpegJpegStream_t hw_jpeg = nullptr;
  std::vector<nvjpegDecodeParams_t> hw_params;
  // Files nvJPEG refuses are decoded by the reference (libjpeg-turbo, the resize's CPU
  // reference) into a page-locked buffer and copied to their places; the buffer is free again
  // once the stream has passed those copies.
  HostJpegDecode host;
  std::uint8_t* fallback = nullptr;
  std::size_t fallback_capacity = 0;
  cudaEvent_t fallback_free = nullptr;
  // The decoded regions of a chunk, reused from batch to batch.
  std::uint8_t* d_regions = nullptr;
  std::size_t capacity = 0;
  // Each decode's start and end on the stream, for its GPU time; harvested when done.
  cudaEvent_t began[kTimings] = {}, ended[kTimings] = {};
  bool pending[kTimings] = {};
  std::atomic<std::int64_t>* pending_to[kTimings] = {};
  int next_timing = 0;

  // nvJPEG's objects go in the order its samples release them: states (a pinned buffer may be
  // attached to either), decoders, then buffers.
  ~State() {
    if (stream != nullptr) cudaStreamSynchronize(stream);
    for (int i = 0; i < kTimings; ++i) {
      if (began[i] != nullptr) cudaEventDestroy(began[i]);
      if (ended[i] != nullptr) cudaEventDestroy(ended[i]);
    }
    if (d_regions != nullptr) cudaFree(d_regions);
    if (fallback != nullptr) cudaFreeHost(fallback);
    if (fallback_free != nullptr) cudaEventDestroy(fallback_free);
    for (nvjpegDecodeParams_t p : hw_params) nv.nvjpegDecodeParamsDestroy(p);
    if (hw_jpeg != nullptr) nv.nvjpegJpegStreamDestroy(hw_jpeg);
    for (int i = 0; i < 2; ++i) {
      if (hw_states[i] != nullptr) nv.nvjpegJpegStateDestroy(hw_states[i]);
      if (hw_free[i] != nullptr) cudaEventDestroy(hw_free[i]);
    }
    if (hw_handle != nullptr) nv.nvjpegDestroy(hw_handle);
    if (params != nullptr) nv.nvjpegDecodeParamsDestroy(params);
    if (jpeg != nullptr) nv.nvjpegJpegStreamDestroy(jpeg);
    for (nvjpegJpegState_t st : states)
      if (st != nullptr) nv.nvjpegJpegStateDestroy(st);
    for (nvjpegJpegDecoder_t d : decoders)
      if (d != nullptr) nv.nvjpegDecoderDestroy(d);
    for (int i = 0; i < 2; ++i) {
      if (device_buffers[i] != nullptr) nv.nvjpegBufferDeviceDestroy(device_buffers[i]);
      if (pinned[i] != nullptr) nv.nvjpegBufferPinnedDestroy(pinned[i]);
      if (pinned_free[i] != nullptr) cudaEventDestroy(pinned_free[i]);
    }
    if (handle != nullptr) nv.nvjpegDestroy(handle);
  }

  void harvest(bool wait_for_all);
  void ensure_capacity(std::size_t bytes);
  nvjpegDecodeParams_t hw_params_at(std::size_t i);
  bool decode_on_hardware(const JpegChunk& c, std::vector<Item*>& items,
                          nvjpegOutputFormat_t format);
  bool decode_with_cuda(const JpegChunk& c, const Item& item, nvjpegOutputFormat_t format,
                        int which);
  // The reference's decode of sample k, copied to its place in d_out; false when it fails too.
  bool decode_on_host(const JpegChunk& c, int k, std::uint8_t* d_out);
};

NvjpegDecoder::NvjpegDecoder(void* stream) : state_(std::make_unique<State>()) {
  require_nvjpeg();
  State& s = *state_;
  const NvjpegApi& nv = s.nv;
  s.stream = static_cast<cudaStream_t>(stream);
  check(
      nv.nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &s.handle),
      "creating a handle");
  const nvjpegBackend_t backends[2] = {NVJPEG_BACKEND_GPU_HYBRID, NVJPEG_BACKEND_HYBRID};
  for (int i = 0; i < 2; ++i) {
    check(nv.nvjpegDecoderCreate(s.handle, backends[i], &s.decoders[i]), "creating a decoder");
    check(nv.nvjpegDecoderStateCreate(s.handle, s.decoders[i], &s.states[i]),
          "creating a decoder state");
    check(nv.nvjpegBufferDeviceCreate(s.handle, nullptr, &s.device_buffers[i]),
          "creating a device buffer");
    check(nv.nvjpegStateAttachDeviceBuffer(s.states[i], s.device_buffers[i]),
          "attaching a device buffer");
    check(nv.nvjpegBufferPinnedCreate(s.handle, nullptr, &s.pinned[i]), "creating a pinned buffer");
    STOKE_CUDA_CALL(cudaEventCreateWithFlags(&s.pinned_free[i], cudaEventDisableTiming));
  }
  check(nv.nvjpegJpegStreamCreate(s.handle, &s.jpeg), "creating a stream parser");
  check(nv.nvjpegDecodeParamsCreate(s.handle, &s.params), "creating decode parameters");
  // The hardware decoder, where the GPU has one (elsewhere nvJPEG refuses the backend).
  if (nv.nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT,
                        &s.hw_handle) == NVJPEG_STATUS_SUCCESS) {
    for (int i = 0; i < 2; ++i) {
      check(nv.nvjpegJpegStateCreate(s.hw_handle, &s.hw_states[i]), "creating a hardware state");
      STOKE_CUDA_CALL(cudaEventCreateWithFlags(&s.hw_free[i], cudaEventDisableTiming));
    }
    check(nv.nvjpegJpegStreamCreate(s.hw_handle, &s.hw_jpeg), "creating a stream parser");
  } else {
    s.hw_handle = nullptr;
  }
  STOKE_CUDA_CALL(cudaEventCreateWithFlags(&s.fallback_free, cudaEventDisableTiming));
  for (int i = 0; i < kTimings; ++i) {
    STOKE_CUDA_CALL(cudaEventCreate(&s.began[i]));
    STOKE_CUDA_CALL(cudaEventCreate(&s.ended[i]));
  }
}

NvjpegDecoder::~NvjpegDecoder() = default;

std::string NvjpegDecoder::describe() const {
  return state_->hw_handle != nullptr ? "nvJPEG hardware + CUDA" : "nvJPEG CUDA";
}

// Adds the GPU time of the decodes the stream has finished to their counters (all of them, when
// `wait_for_all`, waiting for the stream to get there).
void NvjpegDecoder::State::harvest(bool wait_for_all) {
  for (int i = 0; i < kTimings; ++i) {
    if (!pending[i]) continue;
    if (wait_for_all) cudaEventSynchronize(ended[i]);
    if (cudaEventQuery(ended[i]) != cudaSuccess) {
      cudaGetLastError();  // (cudaErrorNotReady is not an error)
      continue;
    }
    float ms = 0;
    if (cudaEventElapsedTime(&ms, began[i], ended[i]) == cudaSuccess && pending_to[i] != nullptr)
      pending_to[i]->fetch_add(static_cast<std::int64_t>(static_cast<double>(ms) * 1e6),
                               std::memory_order_relaxed);
    cudaGetLastError();
    pending[i] = false;
  }
}

// Grows the regions' buffer to `bytes` (rarely: it keeps its largest size). The old buffer may
// still be read by earlier work on the stream, which is waited for first.
void NvjpegDecoder::State::ensure_capacity(std::size_t bytes) {
  if (bytes <= capacity) return;
  const std::size_t grown = std::max(bytes, capacity + capacity / 2);
  STOKE_CUDA_CALL(cudaStreamSynchronize(stream));
  if (d_regions != nullptr) STOKE_CUDA_CALL(cudaFree(d_regions));
  d_regions = nullptr;
  capacity = 0;
  STOKE_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&d_regions), grown));
  capacity = grown;
}

nvjpegDecodeParams_t NvjpegDecoder::State::hw_params_at(std::size_t i) {
  while (hw_params.size() <= i) {
    nvjpegDecodeParams_t p = nullptr;
    check(nv.nvjpegDecodeParamsCreate(hw_handle, &p), "creating decode parameters");
    hw_params.push_back(p);
  }
  return hw_params[i];
}

// The items the hardware decoder takes (baseline files whose region it supports), as one batch;
// those it does not take stay in `items` for the CUDA decoders. False when the batch failed
// (then every item stays).
bool NvjpegDecoder::State::decode_on_hardware(const JpegChunk& c, std::vector<Item*>& items,
                                              nvjpegOutputFormat_t format) {
  std::vector<Item*> taken, left;
  std::vector<const unsigned char*> data;
  std::vector<std::size_t> lengths;
  std::vector<nvjpegImage_t> outputs;
  std::vector<nvjpegDecodeParams_t> per_file;
  for (Item* item : items) {
    const JpegJob& job = c.jobs[item->k];
    const unsigned char* bytes = c.compressed + static_cast<std::size_t>(item->k) * c.stride;
    nvjpegDecodeParams_t p = hw_params_at(taken.size());
    int unsupported = 1;
    if (job.progressive == 0 &&
        nv.nvjpegJpegStreamParseHeader(hw_handle, bytes, job.size, hw_jpeg) ==
            NVJPEG_STATUS_SUCCESS &&
        nv.nvjpegDecodeParamsSetOutputFormat(p, format) == NVJPEG_STATUS_SUCCESS &&
        nv.nvjpegDecodeParamsSetROI(p, item->x, item->y, item->width, item->height) ==
            NVJPEG_STATUS_SUCCESS &&
        nv.nvjpegDecodeBatchedSupportedEx(hw_handle, hw_jpeg, p, &unsupported) !=
            NVJPEG_STATUS_SUCCESS)
      unsupported = 1;
    if (unsupported != 0) {
      left.push_back(item);
      continue;
    }
    taken.push_back(item);
    data.push_back(bytes);
    lengths.push_back(job.size);
    per_file.push_back(p);
    nvjpegImage_t out{};
    out.channel[0] = d_regions + item->offset;
    out.pitch[0] = static_cast<std::size_t>(item->width) * c.channels;
    outputs.push_back(out);
  }
  if (taken.empty()) return true;
  const int n = static_cast<int>(taken.size());
  const int h = next_hw;
  next_hw ^= 1;
  STOKE_CUDA_CALL(cudaEventSynchronize(hw_free[h]));  // its previous batch is decoded
  if (n != hw_batch[h] && nv.nvjpegDecodeBatchedInitialize(hw_handle, hw_states[h], n, 1, format) !=
                              NVJPEG_STATUS_SUCCESS)
    return false;
  hw_batch[h] = n;
  const bool decoded =
      nv.nvjpegDecodeBatchedEx(hw_handle, hw_states[h], data.data(), lengths.data(), outputs.data(),
                               per_file.data(), stream) == NVJPEG_STATUS_SUCCESS;
  STOKE_CUDA_CALL(cudaEventRecord(hw_free[h], stream));
  if (!decoded) {
    hw_batch[h] = 0;  // initialize again before its next batch
    return false;
  }
  items = std::move(left);
  return true;
}

// One file through the CUDA decoders (decode phases: Huffman on the host or the GPU, the copy to
// the device, the rest on the device). False when nvJPEG refuses it.
bool NvjpegDecoder::State::decode_with_cuda(const JpegChunk& c, const Item& item,
                                            nvjpegOutputFormat_t format, int which) {
  const JpegJob& job = c.jobs[item.k];
  const unsigned char* bytes = c.compressed + static_cast<std::size_t>(item.k) * c.stride;
  if (nv.nvjpegJpegStreamParse(handle, bytes, job.size, 0, 0, jpeg) != NVJPEG_STATUS_SUCCESS ||
      nv.nvjpegDecodeParamsSetOutputFormat(params, format) != NVJPEG_STATUS_SUCCESS ||
      nv.nvjpegDecodeParamsSetROI(params, item.x, item.y, item.width, item.height) !=
          NVJPEG_STATUS_SUCCESS)
    return false;
  // The pinned buffer's last copy to the device must be done before its next fill.
  const int b = next_pinned;
  next_pinned ^= 1;
  STOKE_CUDA_CALL(cudaEventSynchronize(pinned_free[b]));
  check(nv.nvjpegStateAttachPinnedBuffer(states[which], pinned[b]), "attaching a pinned buffer");
  if (nv.nvjpegDecodeJpegHost(handle, decoders[which], states[which], params, jpeg) !=
      NVJPEG_STATUS_SUCCESS)
    return false;
  const bool moved = nv.nvjpegDecodeJpegTransferToDevice(handle, decoders[which], states[which],
                                                         jpeg, stream) == NVJPEG_STATUS_SUCCESS;
  STOKE_CUDA_CALL(cudaEventRecord(pinned_free[b], stream));
  if (!moved) return false;
  nvjpegImage_t out{};
  out.channel[0] = d_regions + item.offset;
  out.pitch[0] = static_cast<std::size_t>(item.width) * c.channels;
  return nv.nvjpegDecodeJpegDevice(handle, decoders[which], states[which], &out, stream) ==
         NVJPEG_STATUS_SUCCESS;
}

bool NvjpegDecoder::State::decode_on_host(const JpegChunk& c, int k, std::uint8_t* d_out) {
  const std::size_t sample_bytes = static_cast<std::size_t>(c.height) * c.width * c.channels;
  const std::size_t need = sample_bytes * static_cast<std::size_t>(c.samples);
  if (need > fallback_capacity) {
    STOKE_CUDA_CALL(cudaEventSynchronize(fallback_free));
    if (fallback != nullptr) STOKE_CUDA_CALL(cudaFreeHost(fallback));
    fallback = nullptr;
    fallback_capacity = 0;
    STOKE_CUDA_CALL(cudaHostAlloc(reinterpret_cast<void**>(&fallback), need, cudaHostAllocDefault));
    fallback_capacity = need;
  }
  // (decode() waited for the buffer's copies of an earlier batch; in a batch each sample has a
  // place of its own.)
  std::uint8_t* dst = fallback + static_cast<std::size_t>(k) * sample_bytes;
  if (!host.decode_sample(c, k, dst)) return false;
  STOKE_CUDA_CALL(cudaMemcpyAsync(d_out + static_cast<std::size_t>(k) * sample_bytes, dst,
                                  sample_bytes, cudaMemcpyHostToDevice, stream));
  return true;
}

void NvjpegDecoder::decode(const JpegChunk& c, std::uint8_t* d_out) {
  State& s = *state_;
  s.harvest(false);
  const int t = s.next_timing;
  s.next_timing = (t + 1) % kTimings;
  if (s.pending[t]) {  // kTimings batches behind: wait for the oldest
    STOKE_CUDA_CALL(cudaEventSynchronize(s.ended[t]));
    s.harvest(false);
  }
  STOKE_CUDA_CALL(cudaEventRecord(s.began[t], s.stream));
  const std::size_t sample_bytes = static_cast<std::size_t>(c.height) * c.width * c.channels;
  std::vector<Item> items;
  std::size_t total = 0;
  for (int k = 0; k < c.samples; ++k) {
    const JpegJob& job = c.jobs[k];
    if (job.by != JpegJob::kDevice) continue;
    const JpegWindow window = window_of(c.geometry + 6 * k, c.width, c.height);
    const ResizeRegion r = resize_region(window, c.width, c.height);
    if (r.empty()) {  // the window lies outside the image: all padding
      STOKE_CUDA_CALL(cudaMemsetAsync(d_out + k * sample_bytes, 0, sample_bytes, s.stream));
      continue;
    }
    Item item;
    item.k = k;
    item.window = window;
    item.x = r.x0 / 16 * 16;
    item.y = r.y0 / 16 * 16;
    item.width = r.x1 - item.x;
    item.height = r.y1 - item.y;
    item.offset = total;
    total +=
        (static_cast<std::size_t>(item.width) * item.height * c.channels + kRegionAlignment - 1) /
        kRegionAlignment * kRegionAlignment;
    items.push_back(item);
  }
  if (!items.empty()) {
    s.ensure_capacity(total);
    const nvjpegOutputFormat_t format = c.channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI;
    std::vector<Item*> rest;
    for (Item& item : items) rest.push_back(&item);
    if (s.hw_handle != nullptr) s.decode_on_hardware(c, rest, format);
    // The CUDA decoders (CPU Huffman for progressive files, and for a baseline file the
    // GPU-assisted one refuses), then the reference for what nvJPEG refuses altogether.
    bool fallback_used = false;
    std::int64_t failed = 0;
    for (Item* item : rest) {
      const bool progressive = c.jobs[item->k].progressive != 0;
      if (s.decode_with_cuda(c, *item, format, progressive ? 1 : 0) ||
          (!progressive && s.decode_with_cuda(c, *item, format, 1)))
        continue;
      item->host = true;
      if (!fallback_used) STOKE_CUDA_CALL(cudaEventSynchronize(s.fallback_free));
      fallback_used = true;
      if (s.decode_on_host(c, item->k, d_out)) continue;
      ++failed;
      STOKE_CUDA_CALL(cudaMemsetAsync(d_out + item->k * sample_bytes, 0, sample_bytes, s.stream));
    }
    if (fallback_used) STOKE_CUDA_CALL(cudaEventRecord(s.fallback_free, s.stream));
    std::vector<kernels::ResizeImage> images;
    for (const Item& item : items) {
      if (item.host) continue;  // (its output is in place already, or 0)
      const kernels::ResizeImage m = resize_image(
          item.window,
          {s.d_regions + item.offset, static_cast<std::int64_t>(item.width) * c.channels, item.x,
           item.y, item.width, item.height},
          item.k);
      images.push_back(m);
    }
    kernels::ResizeParams p;
    p.images = static_cast<int>(images.size());
    p.samples = c.samples;
    p.height = c.height;
    p.width = c.width;
    p.channels = c.channels;
    p.jobs = images.data();
    kernels::resize_cuda(p, d_out, s.stream);
    if (c.failed != nullptr) c.failed->fetch_add(failed, std::memory_order_relaxed);
  }
  STOKE_CUDA_CALL(cudaEventRecord(s.ended[t], s.stream));
  s.pending[t] = true;
  s.pending_to[t] = c.decode_ns;
}

}  // namespace stoke::detail

#else  // built without nvJPEG's header

namespace stoke::detail {

void require_nvjpeg() {
  throw ConfigError(
      "decode=gpu on CUDA devices: this build of stoke has no nvJPEG decoder (nvjpeg.h was not "
      "found when it was built; setup.sh fetches it into build/nvjpeg)");
}

struct NvjpegDecoder::State {};

NvjpegDecoder::NvjpegDecoder(void*) {
  require_nvjpeg();
}
NvjpegDecoder::~NvjpegDecoder() = default;
void NvjpegDecoder::decode(const JpegChunk&, std::uint8_t*) {}
std::string NvjpegDecoder::describe() const {
  return "none";
}

}  // namespace stoke::detail

#endif
