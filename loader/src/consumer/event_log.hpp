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
// A callback that throws is not called again: its exception, as a stoke::Error naming the line,
// goes to `failed` (the loader makes it its sticky error, which the consumer sees from next()),
// called once, by the flushing thread, with no lock of the log's held; that line and the ones
// after it go to stderr so that none is lost.

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
  using Failed = std::function<void(std::exception_ptr)>;
  explicit EventLog(Sink sink, Failed failed = {})
      : sink_(std::move(sink)), failed_(std::move(failed)) {}

  void post(std::string line) EXCLUDES(queue_mutex_);
  void flush() EXCLUDES(call_mutex_, queue_mutex_);

 private:
  // Null, or the callback's exception on this line (its first).
  std::exception_ptr deliver(const std::string& line) REQUIRES(call_mutex_);

  const Sink sink_;
  const Failed failed_;
  // Held while lines are taken and delivered: keeps them in order. Taken before queue_mutex_.
  Mutex call_mutex_ ACQUIRED_BEFORE(queue_mutex_);
  bool sink_failed_ GUARDED_BY(call_mutex_) = false;
  Mutex queue_mutex_;
  std::vector<std::string> queue_ GUARDED_BY(queue_mutex_);
  std::atomic<bool> pending_{false};  // lets flush() skip both locks when nothing is queued
};

}  // namespace stoke::detail
