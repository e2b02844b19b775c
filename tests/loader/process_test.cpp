// Worker processes: shutdown leaves nothing behind, deaths are survived, the training process
// dying takes the workers with it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "test_support.hpp"

namespace stoke {
namespace {

using namespace std::chrono_literals;
using test::fashion_options;

TEST(Process, ShutdownMidEpochLeavesNoWorkerFdOrSharedMemoryBehind) {
  const auto shm_before = test::dev_shm();
  const int fds_before = test::open_fds();
  std::set<pid_t> workers;
  {
    Options o = fashion_options(2, 50);
    Loader loader(o);
    loader.next();
    loader.next();
    workers = test::children();
    EXPECT_EQ(workers.size(), 2u);
  }
  EXPECT_TRUE(test::children().empty());
  for (pid_t pid : workers) EXPECT_FALSE(test::process_exists(pid));
  EXPECT_EQ(test::open_fds(), fds_before);
  EXPECT_EQ(test::dev_shm(), shm_before);
}

TEST(Process, CreatingAndDestroyingManyLoadersLeaksNothing) {
  const auto shm_before = test::dev_shm();
  const int fds_before = test::open_fds();
  for (int i = 0; i < 20; ++i) {
    Loader loader(fashion_options(2));
    if (i % 2 == 0) loader.next();
  }
  EXPECT_TRUE(test::children().empty());
  EXPECT_EQ(test::open_fds(), fds_before);
  EXPECT_EQ(test::dev_shm(), shm_before);
}

TEST(Process, WorkersRunInTheirOwnProcessGroup) {
  Loader loader(fashion_options(2));
  for (pid_t pid : test::children()) {
    EXPECT_NE(::getpgid(pid), ::getpgrp());
    EXPECT_EQ(::getpgid(pid), pid);
  }
}

TEST(Process, AKilledWorkerIsReplacedAndTheBytesDoNotChange) {
  Loader reference(fashion_options(0, 50));
  const test::Delivered expected = test::collect(reference);

  std::vector<std::string> log;
  Options o = fashion_options(2, 50);
  o.chunk = 10;
  o.log = [&](std::string_view l) { log.emplace_back(l); };
  Loader loader(o);
  test::Delivered got;
  int killed = 0;
  for (std::int64_t k = 0;; ++k) {
    if (k == 20 || k == 120) {
      const auto workers = test::children();
      ASSERT_FALSE(workers.empty());
      ::kill(*workers.begin(), SIGKILL);
      ++killed;
    }
    auto b = loader.next();
    if (!b) break;
    got.pixels.insert(got.pixels.end(), b->pixels().begin(), b->pixels().end());
    got.labels.insert(got.labels.end(), b->labels().begin(), b->labels().end());
    got.ids.insert(got.ids.end(), b->sample_ids().begin(), b->sample_ids().end());
    got.valid.insert(got.valid.end(), b->valid().begin(), b->valid().end());
    got.indices.push_back(b->index());
    got.padded += b->padded();
  }
  EXPECT_TRUE(got == expected);
  EXPECT_EQ(loader.stats().worker_restarts, killed);
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("died with signal 9"), std::string::npos) << log[0];
  EXPECT_EQ(test::children().size(), 2u);
}

TEST(Process, WorkersExitWhenTheTrainingProcessIsKilled) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t trainer = ::fork();
  ASSERT_GE(trainer, 0);
  if (trainer == 0) {
    ::close(pipe_fds[0]);
    Loader loader(fashion_options(2));
    loader.next();
    for (pid_t pid : test::children()) {
      if (::write(pipe_fds[1], &pid, sizeof pid) != sizeof pid) ::_exit(1);
    }
    ::close(pipe_fds[1]);
    for (;;) ::pause();
  }
  ::close(pipe_fds[1]);
  std::vector<pid_t> workers;
  pid_t pid;
  while (::read(pipe_fds[0], &pid, sizeof pid) == sizeof pid) workers.push_back(pid);
  ::close(pipe_fds[0]);
  ASSERT_EQ(workers.size(), 2u);
  ::kill(trainer, SIGKILL);
  ::waitpid(trainer, nullptr, 0);
  const auto deadline = std::chrono::steady_clock::now() + 1s;
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    gone = std::none_of(workers.begin(), workers.end(), test::process_exists);
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "workers outlived their training process by more than 1 s";
}

}  // namespace
}  // namespace stoke
