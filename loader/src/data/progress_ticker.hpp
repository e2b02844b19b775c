#pragma once
// Says what the dataset index is doing, and the time so far, through IndexOptions::progress every
// progress_every_s while a ProgressTicker lives: long indexing and long waits for another
// loader's are not silent.
//
// Thread-safety: a ProgressTicker belongs to the thread that made it; a thread of its own calls
// the progress callback (one that throws ends the ticking).

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "common/number_text.hpp"
#include "data/dataset_index.hpp"

namespace stoke::detail {

// Says "dataset index: <what>, <seconds> s so far" while it lives (nothing when options.progress
// is empty or progress_every_s is not positive).
class ProgressTicker {
 public:
  ProgressTicker(const IndexOptions& options, std::string what)
      : progress_(options.progress), every_(options.progress_every_s), what_(std::move(what)) {
    if (progress_ && every_ > 0) thread_ = std::thread([this] { run(); });
  }
  ~ProgressTicker() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  ProgressTicker(const ProgressTicker&) = delete;
  ProgressTicker& operator=(const ProgressTicker&) = delete;

 private:
  void run() {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    for (int n = 1;; ++n) {
      const auto at = start + std::chrono::duration<double>(every_ * n);
      if (wake_.wait_until(lock,
                           std::chrono::time_point_cast<std::chrono::steady_clock::duration>(at),
                           [this] { return done_; }))
        return;
      const std::chrono::duration<double> so_far = std::chrono::steady_clock::now() - start;
      try {
        progress_("dataset index: " + what_ + ", " + decimal_text(so_far.count()) + " s so far");
      } catch (...) {  // (a log that throws says nothing more)
        return;
      }
    }
  }

  const std::function<void(const std::string&)> progress_;
  const double every_;
  const std::string what_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace stoke::detail
