#pragma once
// Waiting on descriptors with a deadline: poll(2) that fails loudly, draining an eventfd, and
// the milliseconds left until a time point. Thread-safety: plain functions.

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "stoke/error.hpp"

namespace stoke::detail {

inline void drain_eventfd(int fd) {
  std::uint64_t v;
  while (::read(fd, &v, sizeof v) > 0) {
  }
}

// poll(2) that only returns early for readiness or a signal; any other failure is an Error,
// `failure` followed by the reason.
inline void poll_or_throw(std::vector<pollfd>& fds, int timeout_ms, const std::string& failure) {
  if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
    const int e = errno;
    throw Error(failure + ": " + std::strerror(e));
  }
}

// Milliseconds from `now` until `t` (rounded up; 0 when past), at most a minute.
inline int ms_until(std::chrono::steady_clock::time_point t,
                    std::chrono::steady_clock::time_point now) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count();
  return static_cast<int>(std::clamp<std::int64_t>(ms + 1, 0, 60'000));
}

}  // namespace stoke::detail
