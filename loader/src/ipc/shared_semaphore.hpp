#pragma once
// A counting semaphore that lives in the shared arena and works across processes.
//
// Thread-safety: post() and wait_for() from any thread of any process mapping the arena.
// A process that dies inside wait_for() or post() leaves nothing held: a semaphore has no owner.
//
// Timed waits run on CLOCK_MONOTONIC (sem_clockwait), so a wall-clock step (NTP, a suspended
// laptop) can neither stretch nor cut them short; Boost.Interprocess's timed_wait takes an
// absolute wall-clock time.

#include <semaphore.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <string>

#include "stoke/error.hpp"

namespace stoke::detail {

class SharedSemaphore {
 public:
  // Throws Error when the system has no process-shared semaphores.
  SharedSemaphore() {
    if (::sem_init(&sem_, /*pshared=*/1, 0) != 0)
      throw Error(std::string("cannot create a process-shared semaphore: ") +
                  std::strerror(errno));
  }
  ~SharedSemaphore() { ::sem_destroy(&sem_); }
  SharedSemaphore(const SharedSemaphore&) = delete;
  SharedSemaphore& operator=(const SharedSemaphore&) = delete;

  void post() noexcept { ::sem_post(&sem_); }

  // True when a post was taken within `timeout`; false on timeout or a signal (EINTR): the
  // caller re-checks its situation and waits again.
  bool wait_for(std::chrono::milliseconds timeout) noexcept {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 30))
    timespec deadline = deadline_after(CLOCK_MONOTONIC, timeout);
    return ::sem_clockwait(&sem_, CLOCK_MONOTONIC, &deadline) == 0;
#else
    // No sem_clockwait before glibc 2.30: a wall-clock deadline, short enough (callers wait a
    // quarter of a second and loop) that a clock step costs one early or late wake-up.
    timespec deadline = deadline_after(CLOCK_REALTIME, timeout);
    return ::sem_timedwait(&sem_, &deadline) == 0;
#endif
  }

 private:
  static timespec deadline_after(clockid_t clock, std::chrono::milliseconds timeout) noexcept {
    timespec t{};
    ::clock_gettime(clock, &t);
    const long long ns = t.tv_nsec + static_cast<long long>(timeout.count() % 1000) * 1000000;
    t.tv_sec += static_cast<time_t>(timeout.count() / 1000 + ns / 1000000000);
    t.tv_nsec = static_cast<long>(ns % 1000000000);
    return t;
  }

  sem_t sem_;
};

}  // namespace stoke::detail
