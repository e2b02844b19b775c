#pragma once
// A fixed-capacity single-producer/single-consumer ring that lives in shared memory.
//
// Thread-safety: exactly one producer (push) and one consumer (pop), possibly in different
// processes. reset() only while neither side runs (e.g. after the worker on one end died and
// before its replacement starts). A racy size() is a hint only.
//
// Invariants: head_ <= tail_ <= head_ + N; items in [head_, tail_) are published. Indices grow
// monotonically (64-bit, never wrap in practice). Nothing here locks, so a process that dies
// mid-push leaves at worst an unpublished item, never a stuck lock.

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace stoke::detail {

template <class T, std::uint32_t N>
class SpscRing {
  static_assert((N & (N - 1)) == 0, "capacity must be a power of two");
  static_assert(std::is_trivially_copyable_v<T>);
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

 public:
  static constexpr std::uint32_t kCapacity = N;

  void reset() noexcept {
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_release);
  }

  // Producer only. Returns false when full.
  bool push(const T& item) noexcept {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_.load(std::memory_order_acquire) >= N) return false;
    items_[tail & (N - 1)] = item;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Consumer only. Returns false when empty.
  bool pop(T& item) noexcept {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_acquire)) return false;
    item = items_[head & (N - 1)];
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  std::uint64_t size() const noexcept {
    return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
  }

 private:
  alignas(64) std::atomic<std::uint64_t> head_{0};  // written by the consumer
  alignas(64) std::atomic<std::uint64_t> tail_{0};  // written by the producer
  alignas(64) T items_[N] = {};
};

}  // namespace stoke::detail
