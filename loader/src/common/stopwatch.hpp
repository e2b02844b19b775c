#pragma once
// Adds the time between construction and destruction to a nanosecond counter.
// Thread-safety: the counter belongs to the calling thread.

#include <chrono>
#include <cstdint>

namespace stoke::detail {

class Stopwatch {
 public:
  explicit Stopwatch(std::int64_t& total)
      : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~Stopwatch() {
    total_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now() - start_)
                  .count();
  }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

 private:
  std::int64_t& total_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace stoke::detail
