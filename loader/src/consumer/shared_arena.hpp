#pragma once
// The shared-memory arena: an anonymous memfd (nothing appears under /dev/shm, and a container's
// small /dev/shm does not limit it), mapped once, its used part reserved up front with
// posix_fallocate so running out of memory is an error here, never a SIGBUS later.
//
// Thread-safety: reserve() must not race with itself; base() and fd() are immutable.

#include <cstddef>
#include <cstdint>

namespace stoke::detail {

class SharedArena {
 public:
  // Maps `capacity` bytes and reserves the first `reserved`. Throws Error saying how much
  // memory was asked for and what to change.
  SharedArena(std::size_t capacity, std::size_t reserved);
  ~SharedArena();
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;

  std::uint8_t* base() const { return base_; }
  int fd() const { return fd_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t reserved() const { return reserved_; }

  // Grows the reserved prefix to `bytes` (no-op when already that large). Throws Error.
  void reserve(std::size_t bytes);

 private:
  int fd_ = -1;
  std::uint8_t* base_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t reserved_ = 0;
};

}  // namespace stoke::detail
