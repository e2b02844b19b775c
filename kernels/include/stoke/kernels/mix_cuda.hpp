#pragma once
// GPU launch for MixUp/CutMix; see mix.hpp for the parameters and numerics. Declared only when
// stoke_kernels was built with CUDA (STOKE_WITH_CUDA=1); in a CPU-only build this header
// declares nothing.
//
// Thread safety: may be called from any host thread; ordering is that of `stream`.

#include "stoke/kernels/mix.hpp"

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA
#include <cuda_runtime_api.h>

namespace stoke::kernels {

// Enqueues the mix kernel on `stream` and returns without synchronizing. Validates p on the
// host first (std::invalid_argument); CUDA launch errors throw std::runtime_error.
// REQUIRES: d_src, d_dst (the normalized chunk p describes, not overlapping) and p.mix
// (p.samples entries) are device memory that stays valid until the stream reaches the kernel.
// The kernel allocates nothing.
void mix_cuda(const MixParams& p, const void* d_src, void* d_dst, cudaStream_t stream);

}  // namespace stoke::kernels
#endif
