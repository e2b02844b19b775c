#pragma once
// Runtime dispatch to loops compiled for AVX2 and FMA. The library is built for baseline x86-64
// (SSE2), where fma, floor and nearbyint are library calls and 256-bit vectors do not exist; a
// function marked STOKE_TARGET_AVX2_FMA is compiled for AVX2 + FMA and may be called only when
// has_avx2_fma() says so. A loop written for both computes the same IEEE operations in the same
// order, so either gives the same bytes: the choice is speed, never results.
//
// Thread-safety: has_avx2_fma() reads the CPU once (a function-local static) and the test
// switch atomically.

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define STOKE_AVX2_FMA_DISPATCH 1
#define STOKE_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))
#else
#define STOKE_AVX2_FMA_DISPATCH 0
#define STOKE_TARGET_AVX2_FMA
#endif

#include <atomic>

namespace stoke::detail {

// Set by tests that compare the two compilations of a loop: while true, has_avx2_fma() is false.
inline std::atomic<bool>& baseline_loops_only() {
  static std::atomic<bool> only{false};
  return only;
}

// Whether this CPU runs STOKE_TARGET_AVX2_FMA code (false where there is none to run).
inline bool has_avx2_fma() {
#if STOKE_AVX2_FMA_DISPATCH
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes && !baseline_loops_only().load(std::memory_order_relaxed);
#else
  return false;
#endif
}

}  // namespace stoke::detail
