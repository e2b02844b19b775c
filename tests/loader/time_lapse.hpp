#pragma once
// Runs a ManualTime forward in the background: `step` of its time every `every` of real time,
// from construction until destruction. Tests of deadlines (a task timeout, a worker's start-up)
// use it so that a deadline of tens of seconds passes in milliseconds, and a deadline much
// longer than one step never passes early, however loaded the machine is.

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "common/time_source.hpp"

namespace stoke::test {

class TimeLapse {
 public:
  TimeLapse(detail::ManualTime& time, std::chrono::steady_clock::duration step,
            std::chrono::milliseconds every = std::chrono::milliseconds(1))
      : thread_([&time, step, every, this] {
          while (!stop_.load()) {
            std::this_thread::sleep_for(every);
            time.advance(step);
          }
        }) {}
  ~TimeLapse() {
    stop_.store(true);
    thread_.join();
  }
  TimeLapse(const TimeLapse&) = delete;
  TimeLapse& operator=(const TimeLapse&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace stoke::test
