#pragma once
// The time the loader's deadlines read: a chunk's task timeout, a worker's start-up, a failed
// fetch's retry, the stall monitor's window. A running loader reads the steady clock
// (steady_time()); a test that waits for a deadline hands the loader a ManualTime (through
// LoaderEnvironment) and moves it forward, so the wait takes milliseconds whatever the
// machine's load (LevelDB's Env::NowMicros, in a small way).
//
// A thread that sleeps towards a deadline (in poll(2) or on a condition variable) computes its
// timeout from now(), and listens for jumps: ManualTime::advance() calls every listener, which
// wakes that thread so it reads now() again. The steady clock never jumps.
//
// Thread-safety: now() and listen() from any thread; ManualTime::advance() from any thread. A
// listener runs on the advancing thread with ManualTime's own lock held: it must only signal
// (write an eventfd, notify a condition variable), never block or take another lock.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "common/mutex.hpp"

namespace stoke::detail {

class TimeSource {
 public:
  using Clock = std::chrono::steady_clock;

  // Unsubscribes its listener when destroyed; waits for a call of it in progress.
  class Listener {
   public:
    Listener() = default;
    ~Listener() {
      if (source_ != nullptr) source_->unlisten(id_);
    }
    Listener(Listener&& o) noexcept : source_(std::exchange(o.source_, nullptr)), id_(o.id_) {}
    Listener& operator=(Listener&& o) noexcept {
      std::swap(source_, o.source_);
      std::swap(id_, o.id_);
      return *this;
    }

   private:
    friend class ManualTime;  // the one TimeSource whose time jumps
    Listener(const TimeSource* source, std::uint64_t id) : source_(source), id_(id) {}
    const TimeSource* source_ = nullptr;
    std::uint64_t id_ = 0;
  };

  virtual ~TimeSource() = default;
  virtual Clock::time_point now() const = 0;
  // Calls `wake` whenever the time jumps, until the returned Listener is destroyed.
  // REQUIRES: the TimeSource outlives the Listener.
  [[nodiscard]] virtual Listener listen(std::function<void()> wake) const = 0;

 protected:
  virtual void unlisten(std::uint64_t id) const = 0;
};

// std::chrono::steady_clock; it never jumps, so listening costs nothing.
class SteadyTime final : public TimeSource {
 public:
  Clock::time_point now() const override { return Clock::now(); }
  Listener listen(std::function<void()>) const override { return {}; }

 private:
  void unlisten(std::uint64_t) const override {}
};

inline const TimeSource& steady_time() {
  static const SteadyTime time;
  return time;
}

// Time that moves only when told: starts at the steady clock's present, so durations computed
// against real time points stay sensible.
class ManualTime final : public TimeSource {
 public:
  ManualTime() : now_(Clock::now()) {}

  Clock::time_point now() const override EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return now_;
  }
  // Moves the time forward by `d` and wakes every listener.
  void advance(Clock::duration d) EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    now_ += d;
    for (const auto& [id, wake] : listeners_) wake();
  }
  Listener listen(std::function<void()> wake) const override EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    const std::uint64_t id = next_id_++;
    listeners_.emplace(id, std::move(wake));
    return Listener(this, id);
  }

 private:
  void unlisten(std::uint64_t id) const override EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    listeners_.erase(id);
  }

  mutable Mutex mutex_;
  Clock::time_point now_ GUARDED_BY(mutex_);
  mutable std::uint64_t next_id_ GUARDED_BY(mutex_) = 1;
  mutable std::map<std::uint64_t, std::function<void()>> listeners_ GUARDED_BY(mutex_);
};

}  // namespace stoke::detail
