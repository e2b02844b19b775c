// EventLog on its own: order, one call at a time, and a callback that throws.
#include "consumer/event_log.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

TEST(EventLog, LinesReachTheCallbackInOrderOneAtATimeWhileSeveralThreadsFlush) {
  std::vector<int> seen;
  std::atomic<int> inside{0};
  bool overlapped = false;
  EventLog log([&](std::string_view line) {
    if (inside.fetch_add(1) != 0) overlapped = true;
    seen.push_back(std::stoi(std::string(line)));
    std::this_thread::yield();
    inside.fetch_sub(1);
  });
  constexpr int kLines = 3000;
  std::atomic<bool> done{false};
  std::thread poster([&] {
    for (int i = 0; i < kLines; ++i) {
      log.post(std::to_string(i));
      if (i % 7 == 0) log.flush();
    }
    done = true;
  });
  std::vector<std::thread> flushers;
  for (int t = 0; t < 3; ++t)
    flushers.emplace_back([&] {
      while (!done) log.flush();
    });
  poster.join();
  for (auto& t : flushers) t.join();
  log.flush();
  EXPECT_FALSE(overlapped);
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kLines));
  for (int i = 0; i < kLines; ++i) ASSERT_EQ(seen[static_cast<std::size_t>(i)], i);
}

TEST(EventLog, ACallbackThatThrowsBecomesAnErrorAndIsNotCalledAgain) {
  int calls = 0;
  std::vector<std::exception_ptr> failures;
  EventLog log(
      [&](std::string_view) {
        ++calls;
        throw std::runtime_error("disk full");
      },
      [&](std::exception_ptr e) { failures.push_back(e); });
  log.post("worker 0 (pid 12) died with signal 9 (Killed)");
  log.post("a second line");
  log.flush();
  log.post("a third line");
  log.flush();
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(failures.size(), 1u);  // reported once, however many lines follow
  const std::exception_ptr e = failures[0];
  ASSERT_NE(e, nullptr);
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    EXPECT_STREQ(err.what(),
                 "the log callback (Options::log) threw 'disk full' on the line 'worker 0 "
                 "(pid 12) died with signal 9 (Killed)'");
  }
}

}  // namespace
}  // namespace stoke::detail
