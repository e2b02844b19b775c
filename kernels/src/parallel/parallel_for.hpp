#pragma once
// stoke::parallel_for: oneTBB's parallel_for, with its fork and its join made visible to
// ThreadSanitizer. oneTBB's scheduler (libtbb) is not built with TSan, so TSan sees neither the
// caller's writes reaching a task on another thread nor the tasks' writes reaching the caller
// after the join, and reports both as races (nondeterministically: only when a task really ran on
// another thread). In TSan builds each body call acquires what the caller released before the
// fork and releases what the caller acquires after the join; in other builds this is
// tbb::parallel_for itself. Every parallel_for of the project goes through here.

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#if defined(__SANITIZE_THREAD__)
#define STOKE_PARALLEL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STOKE_PARALLEL_TSAN 1
#endif
#endif

#ifdef STOKE_PARALLEL_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#include <utility>

namespace stoke {
namespace parallel_detail {

// Runs tbb_call(wrapped body): the fork/join handshake around it under TSan, nothing otherwise.
template <class Body, class Call>
void with_handshake(const Body& body, Call&& tbb_call) {
#ifdef STOKE_PARALLEL_TSAN
  char token = 0;  // only its address is used, as TSan's synchronization object
  __tsan_release(&token);
  std::forward<Call>(tbb_call)([&](const auto& arg) {
    __tsan_acquire(&token);
    body(arg);
    __tsan_release(&token);
  });
  __tsan_acquire(&token);
#else
  std::forward<Call>(tbb_call)(body);
#endif
}

}  // namespace parallel_detail

// tbb::parallel_for(range, body).
template <class Range, class Body>
void parallel_for(const Range& range, const Body& body) {
  parallel_detail::with_handshake(body, [&](const auto& b) { tbb::parallel_for(range, b); });
}

// tbb::parallel_for(first, last, body): body(i) for every i in [first, last).
template <class Index, class Body>
void parallel_for(Index first, Index last, const Body& body) {
  parallel_detail::with_handshake(body, [&](const auto& b) { tbb::parallel_for(first, last, b); });
}

}  // namespace stoke
