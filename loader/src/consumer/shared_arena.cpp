#include "consumer/shared_arena.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/fd.hpp"
#include "stoke/error.hpp"
#include "tuning/host_memory.hpp"

namespace stoke::detail {
namespace {

std::string mib(std::size_t bytes) {
  return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}

// Bytes of memory the arena can still take. posix_fallocate on a memfd allocates page by page
// and, past what is available, invokes the OOM killer instead of failing, so the check has to
// come first.
std::size_t available_memory() {
  const std::int64_t available = available_memory_bytes();
  return available < 0 ? SIZE_MAX : static_cast<std::size_t>(available);
}

}  // namespace

SharedArena::SharedArena(std::size_t capacity, std::size_t reserved) : capacity_(capacity) {
  fd_ = raise_fd(::memfd_create("stoke-arena", MFD_CLOEXEC), "the shared arena (memfd_create)");
  if (::ftruncate(fd_, static_cast<off_t>(capacity)) != 0) {
    const int err = errno;
    ::close(fd_);
    throw Error("cannot size the shared arena to " + mib(capacity) + ": " + std::strerror(err));
  }
  void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::close(fd_);
    throw Error("cannot map the shared arena (" + mib(capacity) + "): " + std::strerror(err));
  }
  base_ = static_cast<std::uint8_t*>(p);
  try {
    reserve(reserved);
  } catch (...) {
    ::munmap(base_, capacity_);
    ::close(fd_);
    throw;
  }
}

SharedArena::~SharedArena() {
  if (base_ != nullptr) ::munmap(base_, capacity_);
  if (fd_ >= 0) ::close(fd_);
}

void SharedArena::reserve(std::size_t bytes) {
  if (bytes <= reserved_) return;
  if (bytes > capacity_)
    throw Error("shared arena: " + mib(bytes) + " requested but its capacity is " + mib(capacity_));
  const std::size_t more = bytes - reserved_;
  const std::size_t available = available_memory();
  // Leave a quarter of what is free to everything else.
  if (more > available / 4 * 3) {
    throw Error("the shared arena needs " + mib(more) + " more memory but only " + mib(available) +
                " is available; lower the batch size, image size or prefetch depth, or free "
                "memory");
  }
  const int err = ::posix_fallocate(fd_, static_cast<off_t>(reserved_), static_cast<off_t>(more));
  if (err != 0) {
    throw Error("cannot reserve " + mib(bytes) +
                " of shared memory for the arena: " + std::strerror(err) +
                "; free memory, or lower the batch size, image size or prefetch depth");
  }
  reserved_ = bytes;
}

}  // namespace stoke::detail
