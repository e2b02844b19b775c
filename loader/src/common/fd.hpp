#pragma once
// File descriptors: one closed when its owner goes out of scope (UniqueFd), and moving a new one
// above the numbers a spawned worker is given (raise_fd), so that its dup2 onto 3 and up can
// never clobber another of ours.
//
// Thread-safety: UniqueFd is a value type; the functions are reentrant.

#include <unistd.h>

namespace stoke::detail {

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Closes the descriptor held and holds `fd` instead.
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  // Hands the descriptor over: the caller closes it.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// The lowest number raise_fd moves a descriptor to: above every number a worker is given (3, 4,
// and two for each of at most 16 datasets from 5 on: supervision/worker_pool.hpp).
inline constexpr int kFirstRaisedFd = 64;

// `fd` (just returned by a call that makes a descriptor) moved to a number >= kFirstRaisedFd with
// close-on-exec set; closes the original. Throws Error naming `what` ("cannot create <what>:
// <reason>") when `fd` is negative (the call's errno) or cannot be moved.
int raise_fd(int fd, const char* what);

// The same, without throwing: -1 (errno set) when `fd` is negative or cannot be moved.
int try_raise_fd(int fd) noexcept;

}  // namespace stoke::detail
