#pragma once
// The loader's log: one line per notable event (skipped file, worker restart, resize, autotune
// decision), delivered to Options::log (default: stderr). post() passes every line through
// printable(): a line never holds a newline or a terminal escape, whatever names it quotes.
//
// Thread-safety: post() from any thread, with any lock held, including the loader's; flush()
// from any thread that holds no loader lock, because the user's callback may call back into
// the loader (stats(), dropping a Batch). Lines reach the callback in the order they were
// posted, one at a time, even when several threads flush at once.
//
// A callback that throws is not called again: its exception becomes error() (the loader's
// consumer sees it from next()), and the lines after it go to stderr so that none is lost.

#include <atomic>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.hpp"

namespace stoke::detail {

class EventLog {
 public:
  using Sink = std::function<void(std::string_view)>;
  explicit EventLog(Sink sink) : sink_(std::move(sink)) {}

  void post(std::string line) EXCLUDES(queue_mutex_);
  void flush() EXCLUDES(call_mutex_, queue_mutex_);
  // The callback's exception, as a stoke::Error naming the line; null while it has not thrown.
  std::exception_ptr error() const EXCLUDES(queue_mutex_);

 private:
  void deliver(const std::string& line) REQUIRES(call_mutex_);

  const Sink sink_;
  Mutex call_mutex_;  // held while lines are taken and delivered: keeps them in order
  bool sink_failed_ GUARDED_BY(call_mutex_) = false;
  mutable Mutex queue_mutex_;
  std::vector<std::string> queue_ GUARDED_BY(queue_mutex_);
  std::exception_ptr error_ GUARDED_BY(queue_mutex_);
  std::atomic<bool> pending_{false};  // lets flush() skip both locks when nothing is queued
};

}  // namespace stoke::detail
