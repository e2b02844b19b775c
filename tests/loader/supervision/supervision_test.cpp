// The supervisor under real start-up faults: workers that die before their handshake, that hang
// there, and a log callback that throws. Each worker here is a small shell script standing in
// front of the real stoke-worker: it counts its starts, misbehaves for the first few, then
// execs the real program (same process, same descriptors), so every fault is a real process
// really dying or hanging.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "loader_environment.hpp"
#include "test_support.hpp"
#include "time_lapse.hpp"

namespace stoke {
namespace {

using test::fashion_options;
using test::TempDir;

// A worker executable that counts its starts (per worker record, as n = 0, 1, ...) and runs
// `action` (a shell command that should end the process or hang) when the shell test `when`
// holds for n, else the real worker.
std::string faulty_worker(const TempDir& dir, const std::string& when, const std::string& action) {
  const std::string path = dir.str() + "/faulty-worker";
  std::ofstream f(path);
  f << "#!/bin/sh\n"
    << "c=\"" << dir.str() << "/starts-$2\"\n"
    << "n=$(cat \"$c\" 2>/dev/null || echo 0)\n"
    << "echo $((n + 1)) > \"$c\"\n"
    << "if [ \"$n\" " << when << " ]; then " << action << "; fi\n"
    << "exec " << STOKE_WORKER_PATH << " \"$@\"\n";
  f.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

int starts(const TempDir& dir, int worker) {
  std::ifstream f(dir.str() + "/starts-" + std::to_string(worker));
  int n = 0;
  f >> n;
  return n;
}

TEST(Supervision, AnInitialWorkerKilledDuringStartUpIsReplacedAndTheBytesAreUnchanged) {
  Options plain = fashion_options(1);
  test::Delivered expected;
  {
    Loader loader(plain);
    expected = test::collect(loader, 5);
  }
  TempDir dir;
  Options o = fashion_options(1);
  o.worker_path = faulty_worker(dir, "-lt 2", "kill -KILL $$");
  test::LogLines lines;
  o.log = lines.sink();
  Loader loader(o);
  EXPECT_EQ(test::collect(loader, 5), expected);
  EXPECT_EQ(starts(dir, 0), 3);
  EXPECT_TRUE(lines.contains("died with signal 9 (Killed) during start-up; restarting it"));
}

TEST(Supervision, AWorkerThatCrashesAtEveryStartStopsTheLoaderAfterItsStartUpBudget) {
  TempDir dir;
  Options o = fashion_options(1);
  o.worker_path = faulty_worker(dir, "-ge 0", "kill -SEGV $$");
  try {
    Loader loader(o);
    FAIL() << "a worker that never starts was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "worker 0 died 5 times in a row during start-up; last death: signal 11 "
                 "(Segmentation fault)");
  }
  EXPECT_EQ(starts(dir, 0), 5);
  EXPECT_TRUE(test::children().empty());
}

// The replacement of a killed worker hangs before its handshake, every time. With the task
// timeout off, nothing else would ever end the wait: the handshake deadline must, and after
// the start-up budget the consumer gets an error instead of waiting forever. The loader's time
// runs 1000x fast once the first, real worker is up: the five hangs take milliseconds.
TEST(Supervision, AReplacementThatHangsAtStartUpEndsInAnErrorEvenWithoutATaskTimeout) {
  TempDir dir;
  Options o = fashion_options(1);
  o.task_timeout_s = 0;
  o.startup_timeout_s = 30;
  // Start 1 is the real worker; starts 2.. hang.
  const std::string path = faulty_worker(dir, "-ge 1", "exec sleep 60");
  o.worker_path = path;
  test::LogLines lines;
  o.log = lines.sink();
  const auto time = std::make_shared<detail::ManualTime>();
  detail::LoaderEnvironment env;
  env.time = time;
  Loader loader = detail::LoaderAccess::make(o, env);
  ASSERT_TRUE(loader.next().has_value());
  const test::TimeLapse lapse(*time, std::chrono::seconds(1));
  for (pid_t pid : test::children()) ::kill(pid, SIGKILL);
  try {
    while (loader.next()) {
    }
    FAIL() << "the epoch ended although no worker could run";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), ("worker 0 did not finish starting within 30 s, 5 times in a row; "
                            "stoke-worker (" +
                            path + ") hangs at start-up")
                               .c_str());
  }
  EXPECT_EQ(starts(dir, 0), 6);
  EXPECT_TRUE(lines.contains("did not finish starting within 30 s; killing it"));
}

TEST(Supervision, ALogCallbackThatThrowsIsReportedAsAnErrorNamingTheLine) {
  Options o = fashion_options(2);
  o.log = [](std::string_view) { throw std::runtime_error("log sink closed"); };
  Loader loader(o);
  ASSERT_TRUE(loader.next().has_value());
  loader.resize_workers(1);  // the supervisor logs the resize from its own thread
  try {
    while (loader.next()) {
    }
    FAIL() << "the callback's exception was lost";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "the log callback (Options::log) threw 'log sink closed' on the line "
                 "'resizing the worker pool from 2 to 1 workers (requested)'");
  }
}

TEST(Supervision, StartupTimeoutMustBePositive) {
  Options o = fashion_options(1);
  o.startup_timeout_s = 0;
  EXPECT_THROW(
      {
        try {
          Loader loader(o);
        } catch (const ConfigError& e) {
          EXPECT_STREQ(e.what(),
                       "startup_timeout_s must be positive (seconds a worker may take to start)");
          throw;
        }
      },
      ConfigError);
}

}  // namespace
}  // namespace stoke
