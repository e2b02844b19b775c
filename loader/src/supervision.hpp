#pragma once
// Small pieces the supervisor's files share (supervisor.cpp, worker_startup.cpp).
// Thread-safety: plain functions.

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "stoke/error.hpp"
#include "worker/worker_exit_codes.hpp"
#include "worker_pool.hpp"

namespace stoke::detail {

// The message for a worker exit that no restart can cure, or "" for any other exit.
inline std::string incurable_exit(const WorkerExit& exit) {
  if (exit.signaled) return "";
  if (exit.status == kExitBadArena)
    return "stoke-worker could not map the shared arena; check memory limits (ulimit -v, "
           "cgroup memory) and seccomp filters";
  return "";
}

inline void drain_eventfd(int fd) {
  std::uint64_t v;
  while (::read(fd, &v, sizeof v) > 0) {
  }
}

// poll(2) that only returns early for readiness or a signal; any other failure is an error.
inline void poll_or_throw(std::vector<pollfd>& fds, int timeout_ms) {
  if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
    const int e = errno;
    throw Error(std::string("the loader's supervisor could not poll its workers: ") +
                std::strerror(e));
  }
}

inline std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

inline int ms_until(std::chrono::steady_clock::time_point t,
                    std::chrono::steady_clock::time_point now) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count();
  return static_cast<int>(std::clamp<std::int64_t>(ms + 1, 0, 60'000));
}

}  // namespace stoke::detail
