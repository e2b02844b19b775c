#pragma once
// A std::mutex the thread-safety analysis understands, its scoped lock, and a condition variable
// that waits on it (libstdc++'s own types carry no annotations).
//
// Thread-safety: Mutex and CondVar are shared between threads; a MutexLock belongs to the thread
// that made it.

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.hpp"

namespace stoke::detail {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { m_.lock(); }
  void unlock() RELEASE() { m_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex m_;
};

// Holds the mutex from construction to destruction.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& m) ACQUIRE(m) : lock_(m.m_) {}
  ~MutexLock() RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

// Runs `f` with `m` released and takes `m` back before returning, also when `f` throws: the
// pattern of dropping the lock around slow work (reserving memory, staging, running a pipeline
// in-process). The callers' view is checked (they must hold `m`, and hold it afterwards); `f`
// itself is analysed as code that holds no lock, so it cannot touch guarded state. This small
// primitive is exempt from the analysis, which cannot follow a re-lock in a destructor.
template <class F>
decltype(auto) without_lock(Mutex& m, F&& f) REQUIRES(m) NO_THREAD_SAFETY_ANALYSIS {
  struct Relock {
    Mutex& m;
    ~Relock() { m.lock(); }
  };
  m.unlock();
  Relock relock{m};
  return f();
}

class CondVar {
 public:
  // REQUIRES: `lock` holds the mutex this variable is used with; it is held again on return.
  void wait(MutexLock& lock) { cv_.wait(lock.lock_); }
  // Also returns after `timeout` without a notification.
  template <class Rep, class Period>
  void wait_for(MutexLock& lock, std::chrono::duration<Rep, Period> timeout) {
    cv_.wait_for(lock.lock_, timeout);
  }
  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace stoke::detail
