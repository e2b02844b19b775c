#pragma once
// decode=gpu on CUDA GPUs: NVIDIA's nvJPEG, loaded at run time (dlopen of libnvjpeg.so.13, or
// the file STOKE_NVJPEG names), so that a build or a machine without it, and every worker, stays
// as it is. Per GPU: the hardware decoder (the NVJPG engines of A100, H100, H200) for the
// baseline files it takes, batched, and nvJPEG's CUDA decoders for the rest (GPU-assisted
// Huffman for baseline, CPU Huffman for progressive), each file decoded over its window's region
// only; then kernels::resize_cuda into the device's chunk. Everything is enqueued on the device's
// stream; nvJPEG's pinned and device buffers and the decoded regions' buffer are kept and reused
// from batch to batch (grown, rarely, when a batch needs more).
//
// Thread-safety: one thread (the stager) uses a decoder, with its device's context current.

#include <memory>
#include <string>

#include "device/device_backend.hpp"

namespace stoke::detail {

// Throws ConfigError saying why decode=gpu cannot run on CUDA GPUs here: nvJPEG not built in
// (its header was missing at build time) or its library not found.
void require_nvjpeg();

class NvjpegDecoder {
 public:
  // Creates nvJPEG's handles and buffers in the current context, for work on `stream`.
  // Throws ConfigError (require_nvjpeg()) or Error.
  explicit NvjpegDecoder(void* stream);
  ~NvjpegDecoder();
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

  // Enqueues the chunk's device jobs' decode and resize into d_out on the stream. A file nvJPEG
  // refuses gets 0 pixels and is counted in chunk.failed. Throws Error for CUDA failures.
  void decode(const JpegChunk& chunk, std::uint8_t* d_out);
  // "hardware + CUDA" or "CUDA" (no hardware decoder on this GPU).
  std::string describe() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace stoke::detail
