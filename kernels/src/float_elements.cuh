#pragma once
// What the float kernels over a batch chunk share (normalize.cu, erase.cu, mix.cu): each float
// output type's element, its exact load to float and its round-to-nearest-even store (the same
// roundings as the CPU references' float_to_half_rn and float_to_bfloat16_rn), and the grid of
// the per-sample kernels (blockIdx.y walks the samples, each sample's blocks stride over it).
//
// Device-side only; included by .cu files.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

namespace stoke::detail {

struct Float32Element {
  using T = float;
  __device__ static float load(T v) { return v; }
  __device__ static T store(float v) { return v; }
};
struct Float16Element {
  using T = unsigned short;
  __device__ static float load(T v) { return __half2float(__ushort_as_half(v)); }
  __device__ static T store(float v) { return __half_as_ushort(__float2half_rn(v)); }
};
struct BFloat16Element {
  using T = unsigned short;
  __device__ static float load(T v) { return __bfloat162float(__ushort_as_bfloat16(v)); }
  __device__ static T store(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
};

// A normalized chunk's shape, as a kernel takes it by value.
struct ChunkShape {
  int samples, height, width, channels;
  bool nchw;
};

inline constexpr unsigned kSampleThreads = 256;  // threads per block of a per-sample kernel
inline constexpr unsigned kMaxBlocksPerSample = 64;
inline constexpr unsigned kMaxGridY = 65535;

// The grid of a per-sample kernel whose largest sample has `per_sample` elements.
inline dim3 per_sample_grid(std::size_t per_sample, int samples) {
  return dim3(static_cast<unsigned>(std::min<std::size_t>(
                  kMaxBlocksPerSample, (per_sample + kSampleThreads - 1) / kSampleThreads)),
              std::min<unsigned>(kMaxGridY, static_cast<unsigned>(samples)));
}

}  // namespace stoke::detail
