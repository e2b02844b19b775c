// Worker processes under real faults: killed, stopped, crashing on a sample; the training process
// killed or interrupted; resource limits. Nothing may be lost, duplicated, leaked or hung.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <set>
#include <thread>

#include "loader_environment.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

using namespace std::chrono_literals;
using test::append;
using test::fashion_options;

// Runs `body` in a forked child and returns what it wrote to the pipe (its last act is _exit).
// The child must not return; gtest state in it is irrelevant.
template <class Body>
std::string in_child(Body body, int* status = nullptr) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int st = 0;
  ::waitpid(child, &st, 0);
  if (status != nullptr) *status = st;
  return out;
}

bool wait_until_gone(const std::vector<pid_t>& pids, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (std::none_of(pids.begin(), pids.end(), test::process_exists)) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
}

// A pipeline heavy enough that an epoch of the 1000-PNG tree lasts a while.
TEST(Process, ShutdownMidEpochLeavesNoWorkerFdOrSharedMemoryBehind) {
  const auto shm_before = test::dev_shm();
  const int fds_before = test::open_fds();
  std::set<pid_t> workers;
  {
    Loader loader(fashion_options(2, 50));
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

TEST(Process, AnExceptionInTheConsumerWhileWorkersAreBusyShutsDownCleanly) {
  const int fds_before = test::open_fds();
  try {
    Options o = test::slow_png_options(2);
    o.prefetch = 2;  // workers fill every slot and wait for more
    Loader loader(o);
    auto b = loader.next();
    std::this_thread::sleep_for(50ms);
    throw std::runtime_error("the training step failed");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the training step failed");
  }
  EXPECT_TRUE(test::children().empty());
  EXPECT_EQ(test::open_fds(), fds_before);
}

TEST(Process, CreatingAndDestroyingAHundredLoadersLeaksNothing) {
  const auto shm_before = test::dev_shm();
  const int fds_before = test::open_fds();
  for (int i = 0; i < 100; ++i) {
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

TEST(Process, CtrlCReachesTheTrainingProcessButNotTheWorkers) {
  const std::string out = in_child([] {
    ::setpgid(0, 0);  // the "terminal's" foreground process group is this child's
    static std::atomic<int> interrupts{0};
    struct sigaction sa {};
    sa.sa_handler = [](int) { interrupts.fetch_add(1); };
    ::sigaction(SIGINT, &sa, nullptr);
    Loader loader(fashion_options(2));
    loader.next();
    const auto workers = test::children();
    ::kill(-::getpgrp(), SIGINT);  // what the terminal does on Ctrl-C
    std::this_thread::sleep_for(100ms);
    int alive = 0;
    for (pid_t pid : workers) alive += test::process_exists(pid);
    std::int64_t batches = 1;
    while (loader.next()) ++batches;
    return "interrupts=" + std::to_string(interrupts.load()) + " alive=" + std::to_string(alive) +
           " of=" + std::to_string(workers.size()) + " batches=" + std::to_string(batches) +
           " restarts=" + std::to_string(loader.stats().worker_restarts);
  });
  EXPECT_EQ(out, "interrupts=1 alive=2 of=2 batches=100 restarts=0");
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
    append(got, *b);
  }
  EXPECT_TRUE(got == expected);
  EXPECT_EQ(loader.stats().worker_restarts, killed);
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("died with signal 9 (Killed)"), std::string::npos) << log[0];
  EXPECT_EQ(test::children().size(), 2u);
}

TEST(Process, TwentyRandomKillsDuringAnEpochChangeNoByte) {
  Loader reference(test::slow_png_options(0));
  const test::Delivered expected = test::collect(reference);
  std::atomic<int> kills{0};
  std::atomic<bool> done{false};
  Loader loader(test::slow_png_options(2));
  std::atomic<std::int64_t> delivered{0};
  std::jthread killer([&] {
    std::mt19937 rng(12345);
    std::int64_t seen = 0;
    std::set<pid_t> killed;
    while (!done.load()) {
      // At a random moment after each delivered batch: the workers always make progress between
      // kills, however slow the build (sanitizers) makes them.
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 60));
      if (delivered.load() == seen) continue;
      seen = delivered.load();
      // Only workers past start-up (the arena mapped): otherwise a slow build (sanitizers) could
      // have every replacement killed before it does any work.
      // And never one killed already: on a loaded machine a dying process still shows its
      // mappings for a while, and a second SIGKILL to it would count a death twice.
      std::vector<pid_t> workers;
      for (pid_t pid : test::children()) {
        if (!killed.contains(pid) && test::maps_arena(pid)) workers.push_back(pid);
      }
      if (workers.empty() || done.load()) continue;
      const pid_t victim = workers[rng() % workers.size()];
      if (::kill(victim, SIGKILL) == 0) {
        killed.insert(victim);
        kills.fetch_add(1);
      }
    }
  });
  // Until 20 kills have landed, the consumer gives the killer up to 200 ms after each batch, so
  // they all fall inside the epoch however fast or slow this build runs it; the kills
  // themselves come at random moments.
  test::Delivered got;
  for (std::int64_t k = 0; k < loader.batches_per_epoch(); ++k) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    append(got, *b);
    const int before = kills.load();
    delivered.fetch_add(1);
    for (int waited = 0; before < 20 && kills.load() == before && waited < 40; ++waited)
      std::this_thread::sleep_for(5ms);
  }
  const int during_epoch = kills.load();
  EXPECT_FALSE(loader.next());  // the epoch is over
  done = true;
  killer.join();
  EXPECT_GE(during_epoch, 20) << "the epoch ended too soon to kill 20 workers during it";
  EXPECT_TRUE(got == expected) << "bytes changed after " << during_epoch << " kills";
  // A kill that landed after the last batch is noticed by the supervisor a moment later.
  for (int waited = 0; loader.stats().worker_restarts < during_epoch && waited < 500; ++waited)
    std::this_thread::sleep_for(10ms);
  EXPECT_GE(loader.stats().worker_restarts, during_epoch);
  std::printf("%d kills during the epoch, %lld restarts\n", during_epoch,
              static_cast<long long>(loader.stats().worker_restarts));
}

// The loader's time is a ManualTime, moved past the task timeout only while the stopped worker
// is alive: the kill comes at once, and no other worker (or the replacement) can be killed for
// a deadline however slowly the machine runs.
TEST(Process, AStoppedWorkerTimesOutAndIsReplaced) {
  Loader reference(test::slow_png_options(0));
  const test::Delivered expected = test::collect(reference);
  std::vector<std::string> log;
  std::mutex log_mutex;
  Options o = test::slow_png_options(1);
  o.chunk = 1;
  o.task_timeout_s = 30;
  o.startup_timeout_s = 3600;  // far beyond the steps below: the replacement's start never is
  o.log = [&](std::string_view l) {
    std::lock_guard lock(log_mutex);
    log.emplace_back(l);
  };
  const auto time = std::make_shared<detail::ManualTime>();
  detail::LoaderEnvironment env;
  env.time = time;
  Loader loader = detail::LoaderAccess::make(o, env);
  test::Delivered got;
  auto b = loader.next();
  append(got, *b);
  const pid_t victim = *test::children().begin();
  ::kill(victim, SIGSTOP);
  std::thread clock([&] {
    while (test::process_exists(victim)) {
      time->advance(std::chrono::seconds(31));
      std::this_thread::sleep_for(20ms);
    }
  });
  while (auto next = loader.next()) append(got, *next);
  clock.join();
  EXPECT_TRUE(got == expected);
  EXPECT_FALSE(test::process_exists(victim));
  EXPECT_EQ(loader.stats().worker_restarts, 1);
  std::lock_guard lock(log_mutex);
  const bool named = std::any_of(log.begin(), log.end(), [&](const std::string& l) {
    return l.find("(pid " + std::to_string(victim) + ") spent more than 30 s") !=
               std::string::npos &&
           l.find("fashion-png/") != std::string::npos &&
           l.find("; killing it") != std::string::npos;
  });
  std::string all;
  for (const auto& l : log) all += l + "\n";
  EXPECT_TRUE(named) << all;
}

// A tree whose file *crash-me* kills any worker that reads it (the test worker's planted fault).
class CrashingSample : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 8; ++i) {
      cv::Mat m(12, 12, CV_8UC3, cv::Scalar(i * 10, i * 10, i * 10));
      const std::string name = i == 3 ? "03-crash-me.png" : "0" + std::to_string(i) + ".png";
      std::filesystem::create_directories(dir_.path() / "c");
      ASSERT_TRUE(cv::imwrite((dir_.path() / "c" / name).string(), m));
    }
  }
  Options options(OnError policy) {
    Options o;
    o.data = dir_.str();
    o.batch = 8;
    o.workers = 2;
    o.shuffle = false;
    o.height = o.width = 12;
    o.augment = Augment::kEvaluation;
    o.on_error = policy;
    o.worker_path = STOKE_CRASH_TEST_WORKER;
    o.log = [this](std::string_view l) { log_.emplace_back(l); };
    return o;
  }
  std::string crash_path() const { return (dir_.path() / "c" / "03-crash-me.png").string(); }

  test::TempDir dir_;
  std::vector<std::string> log_;
};

TEST_F(CrashingSample, IsSkippedAndCountedAfterThreeWorkerDeathsUnderSkip) {
  Loader loader(options(OnError::kSkip));
  auto b = loader.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->sample_ids()[3], 4);  // replaced by its neighbour
  const Stats s = loader.stats();
  // Three deaths; a fourth when the other worker was already inside the sample (in a batch
  // prefetched for a later epoch) before it was put on the poison list.
  EXPECT_GE(s.worker_restarts, 3);
  EXPECT_LE(s.worker_restarts, 4);
  EXPECT_EQ(s.skipped_by_reason.at("crashed_worker"), 1);
  b.reset();
  loader.next();  // epoch end
  const std::int64_t restarts = loader.stats().worker_restarts;
  EXPECT_TRUE(loader.next());  // the next epoch skips it at once: no more deaths
  EXPECT_EQ(loader.stats().worker_restarts, restarts);
  EXPECT_TRUE(std::any_of(log_.begin(), log_.end(), [&](const std::string& l) {
    return l.find(crash_path() +
                  " (sample 3): crashed_worker (3 workers died on it; last: "
                  "signal 11 (Segmentation fault)); skipping it from now on") != std::string::npos;
  }));
}

TEST_F(CrashingSample, StopsWithItsPathAfterThreeWorkerDeathsUnderError) {
  Loader loader(options(OnError::kError));
  try {
    loader.next();
    FAIL() << "a sample that kills every worker did not stop the loader";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              crash_path() +
                  " (sample 3): crashed_worker (3 workers died on it; last: signal 11 "
                  "(Segmentation fault))");
  }
}

TEST(Process, WorkersExitWithinASecondWhenTheTrainingProcessIsKilled) {
  // Orphaned workers are re-parented to this process, so their exit is seen at once and only
  // this test's own descendants are looked at.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const auto shm_before = test::dev_shm();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t trainer = ::fork();
  ASSERT_GE(trainer, 0);
  if (trainer == 0) {
    ::close(fds[0]);
    Loader loader(fashion_options(2));
    loader.next();
    for (pid_t pid : test::children()) {
      if (::write(fds[1], &pid, sizeof pid) != sizeof pid) ::_exit(1);
    }
    ::close(fds[1]);
    for (;;) ::pause();
  }
  ::close(fds[1]);
  std::vector<pid_t> workers;
  pid_t pid;
  while (::read(fds[0], &pid, sizeof pid) == sizeof pid) workers.push_back(pid);
  ::close(fds[0]);
  ASSERT_EQ(workers.size(), 2u);
  ::kill(trainer, SIGKILL);
  ::waitpid(trainer, nullptr, 0);
  EXPECT_TRUE(wait_until_gone(workers, 1000ms)) << "workers outlived their training process";
  for (pid_t w : workers) ::waitpid(w, nullptr, 0);  // reap the re-parented orphans
  EXPECT_EQ(test::dev_shm(), shm_before);
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(Process, TooLowAnOpenFileLimitIsAClearErrorAtConstruction) {
  const std::string out = in_child([] {
    rlimit low{12, 12};
    ::setrlimit(RLIMIT_NOFILE, &low);
    Loader loader(fashion_options(2));
    return std::string("constructed");
  });
  EXPECT_NE(out.find("exception: the open-file limit (ulimit -n) is 12"), std::string::npos) << out;
  EXPECT_NE(out.find("raise the limit (ulimit -n 4096) or use fewer workers"), std::string::npos);
}

TEST(Process, AnArenaLargerThanMemoryIsAClearErrorAtConstruction) {
  Options o = fashion_options(2, 4096);
  o.height = o.width = 4096;  // 4096 x 4096 x 4096 bytes per slot: 64 GiB, x6 slots
  try {
    Loader loader(o);
    FAIL() << "a 384 GiB arena was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("the shared arena needs "), std::string::npos) << msg;
    EXPECT_NE(msg.find("lower the batch size, image size or prefetch depth"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("MiB"), std::string::npos) << msg;
  }
  EXPECT_TRUE(test::children().empty());
}

TEST(Process, WorksWhenDevShmIsOnly64MB) {
  const std::string out = in_child([] {
    if (::unshare(CLONE_NEWNS) != 0) return std::string("skip: unshare: ") + std::strerror(errno);
    ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
    if (::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=64m") != 0)
      return std::string("skip: mount: ") + std::strerror(errno);
    Options o;
    o.data = test::testdata("jpeg");
    o.batch = 96;  // 96 x 224 x 224 x 3 = 14 MiB per slot, 6 slots: 87 MiB > 64 MB
    o.workers = 2;
    o.log = [](std::string_view) {};
    Loader loader(o);
    std::int64_t samples = 0;
    while (auto b = loader.next()) samples += b->size();
    return "samples=" + std::to_string(samples) +
           " arena_mib=" + std::to_string(loader.stats().arena_bytes >> 20);
  });
  if (out.rfind("skip:", 0) == 0) GTEST_SKIP() << out;
  EXPECT_EQ(out.substr(0, out.find(' ')), "samples=96") << out;
  EXPECT_GT(std::stol(out.substr(out.find("arena_mib=") + 10)), 64) << out;
}

TEST(Process, AMissingWorkerBinaryIsAClearError) {
  Options o = fashion_options(2);
  o.worker_path = "/nonexistent/stoke-worker";
  try {
    Loader loader(o);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "worker path /nonexistent/stoke-worker is not an executable file; point it at "
                 "the stoke-worker that came with this library");
  }
}

}  // namespace
}  // namespace stoke
