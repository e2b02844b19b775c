#pragma once
// GPU launch for the antialiased resize; see resize.hpp for the parameters and numerics.
// Declared only when stoke_kernels was built with CUDA (STOKE_WITH_CUDA=1).
//
// Thread safety: may be called from any host thread; ordering is that of `stream`.

#include "stoke/kernels/resize.hpp"

#if defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA
#include <cuda_runtime_api.h>

namespace stoke::kernels {

// Enqueues the resize on `stream` and returns without synchronizing. Validates p on the host
// first (std::invalid_argument); CUDA launch errors throw std::runtime_error. p.jobs is host
// memory, read during the call (the records travel in the launches' parameters). REQUIRES:
// every job's src and d_dst are device memory that stays valid until the stream reaches the
// kernels. The kernels allocate nothing.
void resize_cuda(const ResizeParams& p, std::uint8_t* d_dst, cudaStream_t stream);

}  // namespace stoke::kernels
#endif
