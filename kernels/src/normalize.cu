// GPU normalize: one thread per output element, indexed in output order so that stores are
// coalesced (for NCHW, consecutive threads write consecutive x of one channel row).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "cuda_check.hpp"
#include "normalize_coeffs.hpp"
#include "stoke/kernels/normalize.hpp"
#include "stoke/kernels/normalize_cuda.hpp"

namespace stoke::detail {
namespace {

// Everything the kernel needs, by value; no device allocation anywhere.
struct NormalizeShape {
  std::size_t total;  // samples * channels * out_height * out_width
  int height, width, channels, crop_y, crop_x, out_height, out_width;
};

struct StoreFloat32 {
  using Out = float;
  __device__ static Out convert(float v) { return v; }
};
struct StoreFloat16 {
  using Out = unsigned short;
  __device__ static Out convert(float v) { return __half_as_ushort(__float2half_rn(v)); }
};
struct StoreBFloat16 {
  using Out = unsigned short;
  __device__ static Out convert(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
};

template <class Store, kernels::Layout kLayout>
__global__ void normalize_kernel(const std::uint8_t* __restrict__ src,
                                 typename Store::Out* __restrict__ dst,
                                 const std::uint8_t* __restrict__ flip, NormalizeShape s,
                                 NormalizeCoeffs k) {
  const std::size_t ow = static_cast<std::size_t>(s.out_width);
  const std::size_t oh = static_cast<std::size_t>(s.out_height);
  const std::size_t ch = static_cast<std::size_t>(s.channels);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < s.total; i += stride) {
    std::size_t x, y, c, n;
    if constexpr (kLayout == kernels::Layout::kNCHW) {
      x = i % ow;
      std::size_t rest = i / ow;
      y = rest % oh;
      rest /= oh;
      c = rest % ch;
      n = rest / ch;
    } else {
      c = i % ch;
      std::size_t rest = i / ch;
      x = rest % ow;
      rest /= ow;
      y = rest % oh;
      n = rest / oh;
    }
    const bool flipped = flip != nullptr && flip[n] != 0;
    const std::size_t sx = static_cast<std::size_t>(s.crop_x) + (flipped ? ow - 1 - x : x);
    const std::size_t sy = static_cast<std::size_t>(s.crop_y) + y;
    const std::size_t in =
        ((n * static_cast<std::size_t>(s.height) + sy) * static_cast<std::size_t>(s.width) + sx) *
            ch + c;
    const float v = static_cast<float>(src[in]);
    dst[i] = Store::convert(__fmaf_rn(v, k.scale[c], k.bias[c]));
  }
}

template <class Store, kernels::Layout kLayout>
void launch(const NormalizeShape& s, const NormalizeCoeffs& k, const std::uint8_t* d_src,
            void* d_dst, const std::uint8_t* d_flip, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  // The grid-stride loop covers anything beyond this many blocks.
  constexpr std::size_t kMaxBlocks = std::size_t{1} << 20;
  const std::size_t blocks = std::min(kMaxBlocks, (s.total + kThreads - 1) / kThreads);
  normalize_kernel<Store, kLayout><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      d_src, static_cast<typename Store::Out*>(d_dst), d_flip, s, k);
  CUDA_CALL(cudaGetLastError());
}

template <class Store>
void launch_as(kernels::Layout layout, const NormalizeShape& s, const NormalizeCoeffs& k,
               const std::uint8_t* d_src, void* d_dst, const std::uint8_t* d_flip,
               cudaStream_t stream) {
  if (layout == kernels::Layout::kNCHW) {
    launch<Store, kernels::Layout::kNCHW>(s, k, d_src, d_dst, d_flip, stream);
  } else {
    launch<Store, kernels::Layout::kNHWC>(s, k, d_src, d_dst, d_flip, stream);
  }
}

}  // namespace
}  // namespace stoke::detail

namespace stoke::kernels {

void normalize_cuda(const NormalizeParams& p, const std::uint8_t* d_src, void* d_dst,
                    cudaStream_t stream) {
  validate(p);
  if (d_src == nullptr || d_dst == nullptr) {
    throw std::invalid_argument("normalize: d_src and d_dst must not be null");
  }
  const detail::NormalizeCoeffs k = detail::make_coeffs(p);
  detail::NormalizeShape s{};
  s.height = p.height;
  s.width = p.width;
  s.channels = p.channels;
  s.crop_y = p.crop_y;
  s.crop_x = p.crop_x;
  s.out_height = detail::resolved_out_height(p);
  s.out_width = detail::resolved_out_width(p);
  s.total = normalized_bytes(p) / dtype_size(p.dtype);
  switch (p.dtype) {
    case DType::kFloat32:
      detail::launch_as<detail::StoreFloat32>(p.layout, s, k, d_src, d_dst, p.flip, stream);
      break;
    case DType::kFloat16:
      detail::launch_as<detail::StoreFloat16>(p.layout, s, k, d_src, d_dst, p.flip, stream);
      break;
    case DType::kBFloat16:
      detail::launch_as<detail::StoreBFloat16>(p.layout, s, k, d_src, d_dst, p.flip, stream);
      break;
    case DType::kUInt8: break;  // rejected by validate()
  }
}

}  // namespace stoke::kernels
