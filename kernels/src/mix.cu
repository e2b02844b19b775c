// GPU MixUp/CutMix: blockIdx.y walks the samples, and each sample's blocks (blockIdx.x) stride
// over its elements. The per-sample entries are read on the device (they arrive with the batch's
// other per-sample arrays); every element is written, so the output needs no prior fill.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "cuda_check.hpp"
#include "float_elements.cuh"
#include "stoke/kernels/mix.hpp"
#include "stoke/kernels/mix_cuda.hpp"

namespace stoke::detail {
namespace {

// Products and the sum are rounded to the element type one by one, as torch's are
// (__fmul_rn/__fadd_rn are never contracted into a fused multiply-add).
template <class E>
__global__ void __launch_bounds__(kSampleThreads)
    mix_kernel(const typename E::T* __restrict__ src, typename E::T* __restrict__ dst,
               const kernels::MixSample* __restrict__ mix, ChunkShape s) {
  const std::size_t h = static_cast<std::size_t>(s.height), w = static_cast<std::size_t>(s.width);
  const std::size_t ch = static_cast<std::size_t>(s.channels);
  const std::size_t per = h * w * ch;
  for (unsigned n = blockIdx.y; n < static_cast<unsigned>(s.samples); n += gridDim.y) {
    const kernels::MixSample m = mix[n];
    const kernels::MixOp op = kernels::effective_op(m, s.samples, s.height, s.width);
    const typename E::T* self = src + n * per;
    const typename E::T* other =
        src + static_cast<std::size_t>(op == kernels::MixOp::kNone ? n : m.partner) * per;
    typename E::T* out = dst + n * per;
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < per;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
      if (op == kernels::MixOp::kMixUp) {
        const float a = E::load(E::store(__fmul_rn(E::load(other[i]), m.partner_weight)));
        const float b = E::load(E::store(__fmul_rn(E::load(self[i]), m.self_weight)));
        out[i] = E::store(__fadd_rn(a, b));
      } else if (op == kernels::MixOp::kCutMix) {
        const std::size_t pixel = s.nchw ? i % (h * w) : i / ch;
        const int y = static_cast<int>(pixel / w), x = static_cast<int>(pixel % w);
        const bool inside = y >= m.top && y < m.bottom && x >= m.left && x < m.right;
        out[i] = inside ? other[i] : self[i];
      } else {
        out[i] = self[i];
      }
    }
  }
}

template <class E>
void launch(const kernels::MixParams& p, const void* d_src, void* d_dst, cudaStream_t stream) {
  const ChunkShape s{p.samples, p.height, p.width, p.channels, p.layout == kernels::Layout::kNCHW};
  const std::size_t per = static_cast<std::size_t>(p.height) * p.width * p.channels;
  mix_kernel<E><<<per_sample_grid(per, p.samples), kSampleThreads, 0, stream>>>(
      static_cast<const typename E::T*>(d_src), static_cast<typename E::T*>(d_dst), p.mix, s);
  CUDA_CALL(cudaGetLastError());
}

}  // namespace
}  // namespace stoke::detail

namespace stoke::kernels {

void mix_cuda(const MixParams& p, const void* d_src, void* d_dst, cudaStream_t stream) {
  validate(p);
  if (d_src == nullptr || d_dst == nullptr)
    throw std::invalid_argument("mix: d_src and d_dst must not be null");
  switch (p.dtype) {
    case DType::kFloat32:
      detail::launch<detail::Float32Element>(p, d_src, d_dst, stream);
      break;
    case DType::kFloat16:
      detail::launch<detail::Float16Element>(p, d_src, d_dst, stream);
      break;
    case DType::kBFloat16:
      detail::launch<detail::BFloat16Element>(p, d_src, d_dst, stream);
      break;
    case DType::kUInt8:
      break;  // rejected by validate()
  }
}

}  // namespace stoke::kernels
