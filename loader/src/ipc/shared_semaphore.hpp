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
#include <ctime>

namespace stoke::detail {

class SharedSemaphore {
 public:
  SharedSemaphore() { ::sem_init(&sem_, /*pshared=*/1, 0); }
  ~SharedSemaphore() { ::sem_destroy(&sem_); }
  SharedSemaphore(const SharedSemaphore&) = delete;
  SharedSemaphore& operator=(const SharedSemaphore&) = delete;

  void post() noexcept { ::sem_post(&sem_); }

  // True when a post was taken within `timeout`; false on timeout or a signal (EINTR): the
  // caller re-checks its situation and waits again.
  bool wait_for(std::chrono::milliseconds timeout) noexcept {
    timespec deadline{};
    ::clock_gettime(CLOCK_MONOTONIC, &deadline);
    const long long ns = deadline.tv_nsec + static_cast<long long>(timeout.count() % 1000) * 1000000;
    deadline.tv_sec += static_cast<time_t>(timeout.count() / 1000 + ns / 1000000000);
    deadline.tv_nsec = static_cast<long>(ns % 1000000000);
    return ::sem_clockwait(&sem_, CLOCK_MONOTONIC, &deadline) == 0;
  }

 private:
  sem_t sem_;
};

}  // namespace stoke::detail
