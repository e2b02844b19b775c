#pragma once
// The CPU ops' access to OpenBLAS. Thread-safety: cblas calls are safe from any thread once
// single_threaded_blas() ran (each call then runs on the calling thread alone).

#include <cblas.h>

#include <mutex>
#include <vector>

namespace stoke::nn::detail {

// The ops parallelize over images with oneTBB and call one GEMM per task: OpenBLAS's own threads
// would oversubscribe the cores and make results depend on the thread count.
inline void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// A per-thread buffer of at least `count` floats, reused across calls (im2col matrices).
inline float* scratch(std::size_t count, int which = 0) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& b = buffers[which];
  if (b.size() < count) b.resize(count);
  return b.data();
}

}  // namespace stoke::nn::detail
