#pragma once
// GPU launch for random erasing; see erase.hpp for the parameters and numerics. Declared only
// when stoke_kernels was built with CUDA (STOKE_WITH_CUDA=1); in a CPU-only build this header
// declares nothing.
//
// Thread safety: may be called from any host thread; ordering is that of `stream`.

#include "stoke/kernels/erase.hpp"

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA
#include <cuda_runtime_api.h>

namespace stoke::kernels {

// Enqueues the erase kernel on `stream` and returns without synchronizing. Validates p on the
// host first (std::invalid_argument); CUDA launch errors throw std::runtime_error.
// REQUIRES: d_dst (the normalized output p describes) and p.boxes (p.samples boxes) are device
// memory that stays valid until the stream reaches the kernel. The kernel allocates nothing.
void erase_cuda(const EraseParams& p, void* d_dst, cudaStream_t stream);

}  // namespace stoke::kernels
#endif
