#include "event_log.hpp"

#include <cstdio>

#include "common/text.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

void to_stderr(std::string_view line) {
  std::fprintf(stderr, "stoke: %.*s\n", static_cast<int>(line.size()), line.data());
}

}  // namespace

void EventLog::post(std::string line) {
  // One event is one line: a name from the data cannot start another (or colour this one).
  std::string shown = printable(line);
  MutexLock lock(queue_mutex_);
  queue_.push_back(std::move(shown));
  pending_.store(true, std::memory_order_release);
}

void EventLog::flush() {
  if (!pending_.load(std::memory_order_acquire)) return;
  MutexLock serial(call_mutex_);
  std::vector<std::string> lines;
  {
    MutexLock lock(queue_mutex_);
    lines.swap(queue_);
    pending_.store(false, std::memory_order_relaxed);
  }
  for (const std::string& line : lines) deliver(line);
}

void EventLog::deliver(const std::string& line) {
  if (!sink_ || sink_failed_) return to_stderr(line);
  try {
    sink_(line);
  } catch (const std::exception& e) {
    sink_failed_ = true;
    MutexLock lock(queue_mutex_);
    error_ = std::make_exception_ptr(Error(std::string("the log callback (Options::log) threw '") +
                                           e.what() + "' on the line '" + line + "'"));
  } catch (...) {
    sink_failed_ = true;
    MutexLock lock(queue_mutex_);
    error_ = std::make_exception_ptr(
        Error("the log callback (Options::log) threw a non-standard exception on the line '" +
              line + "'"));
  }
}

std::exception_ptr EventLog::error() const {
  MutexLock lock(queue_mutex_);
  return error_;
}

}  // namespace stoke::detail
