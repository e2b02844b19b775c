#include "consumer/event_log.hpp"

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
  std::exception_ptr failure;
  {
    MutexLock serial(call_mutex_);
    std::vector<std::string> lines;
    {
      MutexLock lock(queue_mutex_);
      lines.swap(queue_);
      pending_.store(false, std::memory_order_relaxed);
    }
    for (const std::string& line : lines)
      if (std::exception_ptr e = deliver(line)) failure = e;
  }
  if (failure && failed_) failed_(failure);
}

std::exception_ptr EventLog::deliver(const std::string& line) {
  if (!sink_ || sink_failed_) {
    to_stderr(line);
    return nullptr;
  }
  try {
    sink_(line);
    return nullptr;
  } catch (const std::exception& e) {
    sink_failed_ = true;
    to_stderr(line);  // the line the callback could not take is not lost either
    return std::make_exception_ptr(Error(std::string("the log callback (Options::log) threw '") +
                                         e.what() + "' on the line '" + line + "'"));
  } catch (...) {
    sink_failed_ = true;
    to_stderr(line);
    return std::make_exception_ptr(
        Error("the log callback (Options::log) threw a non-standard exception on the line '" +
              line + "'"));
  }
}

}  // namespace stoke::detail
