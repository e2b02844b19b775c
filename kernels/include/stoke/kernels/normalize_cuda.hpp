#pragma once
// GPU launch for the normalize step; see normalize.hpp for the parameters and numerics.
// Declared only when stoke_kernels was built with CUDA (STOKE_WITH_CUDA=1, a public compile
// definition of stoke_kernels); in a CPU-only build this header declares nothing.
//
// Thread safety: may be called from any host thread; ordering is that of `stream`.

#include "stoke/kernels/normalize.hpp"

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA
#include <cuda_runtime_api.h>

namespace stoke::kernels {

// Enqueues the normalize kernel on `stream` and returns without synchronizing. Validates p on
// the host first (std::invalid_argument); CUDA launch errors throw std::runtime_error.
// REQUIRES: d_src (samples*height*width*channels bytes), d_dst (normalized_bytes(p) bytes,
// 2-byte aligned for float16/bfloat16, 4-byte for float32) and p.flip (samples bytes, or
// nullptr) are device memory that stays valid until the stream reaches the kernel.
// Rows wider than 2^30 bytes (width * channels) are refused with std::invalid_argument: the
// kernel indexes within a row in 32 bits. The kernel allocates nothing.
void normalize_cuda(const NormalizeParams& p, const std::uint8_t* d_src, void* d_dst,
                    cudaStream_t stream);

}  // namespace stoke::kernels
#endif
