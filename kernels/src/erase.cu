// GPU random erasing: blockIdx.y walks the samples, and each sample's blocks (blockIdx.x) stride
// over the elements of its rectangle, channel-major as the CPU reference numbers them. The
// rectangle is read on the device (it arrives with the batch's other per-sample arrays), so the
// grid is planned for the largest one, the whole image, and blocks past a small rectangle's end
// return at once.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "cuda_check.hpp"
#include "erase_noise.hpp"
#include "float_elements.cuh"
#include "stoke/kernels/erase.hpp"
#include "stoke/kernels/erase_cuda.hpp"

namespace stoke::detail {
namespace {

template <class Store>
__global__ void __launch_bounds__(kSampleThreads)
    erase_kernel(typename Store::T* __restrict__ dst, const kernels::EraseBox* __restrict__ boxes,
                 ChunkShape s) {
  for (unsigned n = blockIdx.y; n < static_cast<unsigned>(s.samples); n += gridDim.y) {
    const kernels::EraseBox b = boxes[n];
    if (!kernels::erases(b, s.height, s.width)) continue;
    const unsigned area = static_cast<unsigned>(b.height) * static_cast<unsigned>(b.width);
    const unsigned count = area * static_cast<unsigned>(s.channels);
    const std::size_t h = static_cast<std::size_t>(s.height), w = static_cast<std::size_t>(s.width);
    const std::size_t ch = static_cast<std::size_t>(s.channels);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += gridDim.x * blockDim.x) {
      const unsigned c = i / area;
      const unsigned rest = i - c * area;
      const unsigned y = rest / static_cast<unsigned>(b.width);
      const unsigned x = rest - y * static_cast<unsigned>(b.width);
      float v;
      if (b.mode == kernels::EraseMode::kConstant) {
        v = c == 0 ? b.value[0] : c == 1 ? b.value[1] : c == 2 ? b.value[2] : b.value[3];
      } else {
        v = erase_math::noise(b.key_lo, b.key_hi,
                              b.mode == kernels::EraseMode::kPixelNoise ? i : c);
      }
      const std::size_t row = static_cast<std::size_t>(b.top) + y;
      const std::size_t col = static_cast<std::size_t>(b.left) + x;
      const std::size_t at = s.nchw ? ((static_cast<std::size_t>(n) * ch + c) * h + row) * w + col
                                    : ((static_cast<std::size_t>(n) * h + row) * w + col) * ch + c;
      dst[at] = Store::store(v);
    }
  }
}

template <class Store>
void launch(const kernels::EraseParams& p, void* d_dst, cudaStream_t stream) {
  const ChunkShape s{p.samples, p.height, p.width, p.channels, p.layout == kernels::Layout::kNCHW};
  const std::size_t largest = static_cast<std::size_t>(p.height) * p.width * p.channels;
  erase_kernel<Store><<<per_sample_grid(largest, p.samples), kSampleThreads, 0, stream>>>(
      static_cast<typename Store::T*>(d_dst), p.boxes, s);
  CUDA_CALL(cudaGetLastError());
}

}  // namespace
}  // namespace stoke::detail

namespace stoke::kernels {

void erase_cuda(const EraseParams& p, void* d_dst, cudaStream_t stream) {
  validate(p);
  if (d_dst == nullptr) throw std::invalid_argument("erase: d_dst must not be null");
  // Element indices within a rectangle are 32-bit.
  if (static_cast<std::size_t>(p.height) * p.width * p.channels > 0xffffffffu)
    throw std::invalid_argument("erase: the GPU kernel takes images of fewer than 2^32 values");
  switch (p.dtype) {
    case DType::kFloat32:
      detail::launch<detail::Float32Element>(p, d_dst, stream);
      break;
    case DType::kFloat16:
      detail::launch<detail::Float16Element>(p, d_dst, stream);
      break;
    case DType::kBFloat16:
      detail::launch<detail::BFloat16Element>(p, d_dst, stream);
      break;
    case DType::kUInt8:
      break;  // rejected by validate()
  }
}

}  // namespace stoke::kernels
