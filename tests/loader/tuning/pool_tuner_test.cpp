// Automatic pool sizing: the tuner's decisions on known measurements, and a live pool that grows
// and shrinks mid-epoch without changing a byte.

#include "tuning/pool_tuner.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <mutex>
#include <regex>
#include <thread>

#include "loader_environment.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

using detail::PoolTuner;
using detail::TunerInput;
using detail::TunerLimits;

TunerLimits auto_limits(int max_workers, int max_slots = 64) {
  TunerLimits l;
  l.tune_workers = true;
  l.tune_prefetch = true;
  l.max_workers = max_workers;
  l.max_workers_reason = std::to_string(max_workers) + " cores available";
  l.max_slots = max_slots;
  return l;
}

// A consumer taking `demand` img/s from `workers` workers of `per_worker` img/s each, in steady
// state: the pool delivers min(demand, workers * per_worker) and the consumer waits the rest.
TunerInput steady(double demand, int workers, double per_worker, double now_s = 10) {
  TunerInput in;
  in.now_s = now_s;
  in.batches = 50;
  in.workers = workers;
  in.slots = 2 * workers + 2;
  in.worker_per_s = per_worker;
  in.demand_per_s = demand;
  const double capacity = workers * per_worker;
  in.delivered_per_s = std::min(demand, capacity);
  in.wait_fraction = demand > capacity ? 1 - capacity / demand : 0.001;
  in.busy_fraction = std::min(1.0, in.delivered_per_s / capacity);
  return in;
}

TEST(PoolTuner, ADemandOfSixTenthsOfOneWorkerStaysAtOneWorker) {
  PoolTuner t;
  EXPECT_FALSE(t.evaluate(steady(600, 1, 1000), auto_limits(2)));
}

TEST(PoolTuner, ADemandOfOneAndAHalfWorkersGrowsToTwoAndStaysThere) {
  PoolTuner t;
  const auto grow = t.evaluate(steady(1500, 1, 1000), auto_limits(8));
  ASSERT_TRUE(grow);
  EXPECT_EQ(grow->what, TuneTarget::kWorkers);
  EXPECT_EQ(grow->from, 1);
  EXPECT_EQ(grow->to, 2);
  EXPECT_NE(grow->reason.find("the consumer waited 33% over 50 batches; 1 worker busy 100% "
                              "delivered 1,000 img/s (1,000 per busy worker); the consumer "
                              "takes up to 1,500 img/s, about 2 workers' worth"),
            std::string::npos)
      << grow->reason;
  // Two workers keep up; one would deliver 1,000 < 1.2 x 1,500: no retirement.
  EXPECT_FALSE(t.evaluate(steady(1500, 2, 1000), auto_limits(8)));
}

TEST(PoolTuner, GrowsStraightToWhatTheDemandNeedsWithinTheCoreLimit) {
  PoolTuner t;
  const auto a = t.evaluate(steady(5000, 1, 1000), auto_limits(16));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->to, 6);  // ceil(5000 * 1.1 / 1000)
  const auto b = t.evaluate(steady(5000, 1, 1000), auto_limits(4));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->to, 4);
  EXPECT_NE(b->reason.find("limited to 4 (4 cores available)"), std::string::npos) << b->reason;
  EXPECT_FALSE(t.evaluate(steady(5000, 4, 1000), auto_limits(4)));  // at the limit
}

TEST(PoolTuner, RetiresOneWorkerAtATimeWhileFewerStillKeepUp) {
  PoolTuner t;
  const auto a = t.evaluate(steady(1000, 4, 1000), auto_limits(8));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->to, 3);
  EXPECT_NE(a->reason.find("3 would deliver about 3,000 img/s"), std::string::npos);
  ASSERT_TRUE(t.evaluate(steady(1000, 3, 1000), auto_limits(8)));
  // One worker would give 1,000, not 1.2 x 1,000: two stay.
  EXPECT_FALSE(t.evaluate(steady(1000, 2, 1000), auto_limits(8)));
}

TEST(PoolTuner, ARetirementThatHadToBeUndoneIsNotRetriedForAWhile) {
  PoolTuner t;
  // 3 -> 2 looked safe (the measured rate was optimistic), then 2 could not keep up.
  ASSERT_EQ(t.evaluate(steady(1500, 3, 1000, 10), auto_limits(8))->to, 2);
  TunerInput starving = steady(1500, 2, 700, 12);
  ASSERT_EQ(t.evaluate(starving, auto_limits(8))->to, 3);
  // Back at 3 with the same optimistic numbers: not retried for 30 s...
  EXPECT_FALSE(t.evaluate(steady(1500, 3, 1000, 20), auto_limits(8)));
  EXPECT_FALSE(t.evaluate(steady(1500, 3, 1000, 41), auto_limits(8)));
  // ...then tried again.
  ASSERT_TRUE(t.evaluate(steady(1500, 3, 1000, 43), auto_limits(8)));
  // Undone a second time: 60 s now.
  ASSERT_EQ(t.evaluate(steady(1500, 2, 700, 45), auto_limits(8))->to, 3);
  EXPECT_FALSE(t.evaluate(steady(1500, 3, 1000, 100), auto_limits(8)));
  EXPECT_TRUE(t.evaluate(steady(1500, 3, 1000, 106), auto_limits(8)));
}

TEST(PoolTuner, WaitingWhileTheWorkersIdleDeepensThePrefetchWithinTheBudget) {
  PoolTuner t;
  TunerInput bursty = steady(1000, 2, 1000);
  bursty.wait_fraction = 0.08;
  bursty.busy_fraction = 0.5;
  bursty.slots = 6;
  const auto a = t.evaluate(bursty, auto_limits(8, 8));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->what, TuneTarget::kPrefetch);
  EXPECT_EQ(a->to, 8);  // 6 + 3, capped by the budget's 8
  bursty.slots = 8;
  EXPECT_FALSE(t.evaluate(bursty, auto_limits(8, 8)));
  // Workers busy all the time are not waiting for slots: no deeper prefetch.
  bursty.slots = 6;
  bursty.busy_fraction = 0.9;
  EXPECT_FALSE(t.evaluate(bursty, auto_limits(8, 64)));
  bursty.busy_fraction = 0.5;
  // A fixed prefetch is left alone.
  TunerLimits fixed = auto_limits(8, 64);
  fixed.tune_prefetch = false;
  bursty.slots = 6;
  EXPECT_FALSE(t.evaluate(bursty, fixed));
}

// ---- the live pool ------------------------------------------------------------------------

Options png_options(int workers) {
  return test::slow_png_options(workers, /*seed=*/11);
}

// Waits (bounded) until this process has `n` worker children.
bool wait_for_children(std::size_t n) {
  for (int i = 0; i < 1000; ++i) {
    if (test::children().size() == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// What a fixed pool of `workers` delivers in epoch 0 (its workers gone afterwards, so the
// tests can count the children of the loader under test).
test::Delivered reference_epoch(int workers) {
  Loader reference(png_options(workers));
  return test::collect(reference);
}

TEST(PoolResize, GrowingAndShrinkingMidEpochKeepsEveryByte) {
  const test::Delivered expected = reference_epoch(2);

  Options o = png_options(1);
  o.chunk = 0;  // chunk size follows the pool size: resizing changes it too
  std::vector<std::string> log;
  o.log = [&](std::string_view l) { log.emplace_back(l); };
  Loader loader(o);
  test::Delivered got;
  for (std::int64_t k = 0;; ++k) {
    if (k == 5) {
      loader.resize_workers(3);
      ASSERT_TRUE(wait_for_children(3));
    }
    if (k == 20) {
      loader.resize_workers(1);
      ASSERT_TRUE(wait_for_children(1)) << "the two retiring workers did not exit";
    }
    if (k == 35) loader.resize_workers(2);
    auto b = loader.next();
    if (!b) break;
    append(got, *b);
  }
  EXPECT_TRUE(got == expected);
  const Stats s = loader.stats();
  EXPECT_EQ(s.workers, 2);
  EXPECT_FALSE(s.workers_auto);
  EXPECT_EQ(s.worker_restarts, 0);
  EXPECT_EQ(
      std::count_if(log.begin(), log.end(),
                    [](const std::string& l) { return l.find("resizing the worker pool") == 0; }),
      3);
}

// Two workers added, then stopped (SIGSTOP) while chunks sit in their rings, then retired and
// killed: what they held must be produced by the remaining worker, with the same bytes.
TEST(PoolResize, AWorkerKilledWhileRetiringHasItsChunksRedoneElsewhere) {
  const test::Delivered expected = reference_epoch(1);

  Options o = png_options(1);
  // A backlog of queued chunks (200 batches, seconds of work) that the new workers cannot
  // finish in the moments between their handshake and being stopped, however the test thread
  // is scheduled.
  o.prefetch = 200;
  std::mutex log_mutex;
  std::vector<std::string> log;
  o.log = [&](std::string_view l) {
    std::lock_guard lock(log_mutex);
    log.emplace_back(l);
  };
  Loader loader(o);
  test::Delivered got;
  for (std::int64_t k = 0;; ++k) {
    if (k == 3) {
      const auto before = test::children();
      // The first worker pauses while the new ones start, so that the queue still holds chunks
      // for them when they finish their handshake (work goes only to workers past it).
      const pid_t first = *before.begin();
      ::kill(first, SIGSTOP);
      // Should an assertion below fail, the loader's shutdown must not wait on stopped workers.
      struct Continue {
        std::vector<pid_t> pids;
        ~Continue() {
          for (pid_t pid : pids) ::kill(pid, SIGCONT);
        }
      } resume{{first}};
      loader.resize_workers(3);
      ASSERT_TRUE(wait_for_children(3));
      const auto after = test::children();
      std::vector<pid_t> added;
      std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                          std::back_inserter(added));
      ASSERT_EQ(added.size(), 2u);
      // Only once they run stoke-worker: a child stopped between posix_spawn's clone and its
      // exec would hold the spawning thread (vfork semantics) and so the whole supervisor.
      // And only once they finished their handshake: work goes only to workers past it.
      for (pid_t pid : added) {
        for (int i = 0; i < 1000 && !test::maps_arena(pid); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ASSERT_TRUE(test::maps_arena(pid)) << "worker " << pid << " never mapped the arena";
      }
      for (int i = 0; i < 1000 && loader.stats().workers_starting != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ASSERT_EQ(loader.stats().workers_starting, 0);
      for (pid_t pid : added) ::kill(pid, SIGSTOP);
      ::kill(first, SIGCONT);
      resume.pids = added;
      // Stopped workers still receive chunks into their rings (up to 4 each): wait until each
      // holds one, so that retiring them has work to redo however the machine is loaded.
      for (pid_t pid : added) {
        for (int i = 0; i < 2000 && detail::LoaderAccess::chunks_queued_for(loader, pid) == 0; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ASSERT_GT(detail::LoaderAccess::chunks_queued_for(loader, pid), 0u)
            << "worker " << pid << " was given no chunk";
      }
      loader.resize_workers(1);
      for (int i = 0; i < 500 && loader.stats().workers != 1; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ASSERT_EQ(loader.stats().workers, 1);
      for (pid_t pid : added) ::kill(pid, SIGKILL);
      resume.pids.clear();
      ASSERT_TRUE(wait_for_children(1));
    }
    auto b = loader.next();
    if (!b) break;
    append(got, *b);
  }
  EXPECT_TRUE(got == expected);
  const Stats s = loader.stats();
  EXPECT_EQ(s.workers, 1);
  EXPECT_EQ(s.worker_restarts, 0);  // retired, not replaced
  std::lock_guard lock(log_mutex);
  int redone = 0;
  const std::regex line(
      "^worker \\d+ \\(pid \\d+\\) died with signal 9 \\(Killed\\).*; it was "
      "retiring, so the other workers redo its (\\d+) chunk\\(s\\)$");
  for (const std::string& l : log) {
    std::smatch m;
    if (std::regex_match(l, m, line)) redone += std::stoi(m[1]);
  }
  EXPECT_GT(redone, 0) << "the killed workers held no chunks; log lines: " << log.size();
}

TEST(PoolResize, OutOfRangeSizesAndInProcessLoadersAreRefused) {
  Loader pooled(png_options(1));
  EXPECT_THROW(pooled.resize_workers(0), ConfigError);
  EXPECT_THROW(pooled.resize_workers(513), ConfigError);
  Loader in_process(png_options(0));
  try {
    in_process.resize_workers(2);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("in-process"), std::string::npos) << e.what();
  }
}

TEST(PoolAuto, AConsumerThatNeverComputesGrowsThePoolToItsLimitWithoutChangingAByte) {
  Loader reference(png_options(2));
  Options o = png_options(kAuto);
  o.chunk = 0;
  o.max_workers = 3;
  std::vector<std::string> log;
  o.log = [&](std::string_view l) { log.emplace_back(l); };
  Loader loader(o);
  EXPECT_EQ(loader.stats().workers, 1);  // it starts small
  // Epochs until the tuner has measured enough (a fast machine finishes an epoch in well under
  // its settling time), each compared with the fixed pool's.
  int epoch = 0;
  for (; epoch < 40 && (epoch < 2 || loader.stats().workers < 3); ++epoch) {
    reference.set_epoch(epoch);
    loader.set_epoch(epoch);
    ASSERT_TRUE(test::collect(loader) == test::collect(reference)) << "epoch " << epoch;
  }
  const Stats s = loader.stats();
  EXPECT_TRUE(s.workers_auto);
  EXPECT_EQ(s.workers, 3);
  ASSERT_FALSE(s.decisions.empty());
  EXPECT_EQ(s.decisions[0].what, TuneTarget::kWorkers);
  EXPECT_EQ(s.decisions[0].from, 1);
  EXPECT_EQ(s.decisions[0].to, 3);
  EXPECT_NE(s.decisions[0].reason.find("limited to 3 (max_workers 3)"), std::string::npos)
      << s.decisions[0].reason;
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log[0].rfind("autotune at ", 0), 0u) << log[0];
  EXPECT_NE(log[0].find(": workers 1 -> 3: the consumer waited"), std::string::npos) << log[0];
}

// A consumer that takes 12 batches at once, then computes for 20 batch-times of the pool: on
// average the pool keeps up (0.6 of its rate), but each burst outruns the 6 default slots, and
// the workers idle while the slots are full. prefetch=auto deepens the arena instead of adding
// workers (which are fixed here). The first epoch, consumed as fast as it comes, measures the
// pool's batch time on this machine.
TEST(PoolAuto, ABurstyConsumerGetsDeeperPrefetchAndTheSameBytes) {
  using Clock = std::chrono::steady_clock;
  Loader reference(png_options(2));
  Options o = png_options(2);
  o.prefetch = kAuto;
  Loader loader(o);
  ASSERT_EQ(loader.stats().slots, 6);
  Clock::duration burst_pause{};
  for (int epoch = 0; epoch < 30 && (epoch < 2 || loader.stats().decisions.empty()); ++epoch) {
    reference.set_epoch(epoch);
    loader.set_epoch(epoch);
    test::Delivered got;
    Clock::time_point after_prefetched{};
    int k = 0;
    while (auto b = loader.next()) {
      append(got, *b);
      ++k;
      if (epoch == 0 && k == 6) after_prefetched = Clock::now();
      if (epoch > 0 && k % 12 == 0) std::this_thread::sleep_for(burst_pause);
    }
    if (epoch == 0)
      burst_pause = std::max<Clock::duration>(20 * (Clock::now() - after_prefetched) / (k - 6),
                                              std::chrono::milliseconds(10));
    ASSERT_TRUE(got == test::collect(reference)) << "epoch " << epoch;
  }
  const Stats s = loader.stats();
  EXPECT_TRUE(s.prefetch_auto);
  EXPECT_FALSE(s.workers_auto);
  EXPECT_EQ(s.workers, 2);
  ASSERT_FALSE(s.decisions.empty());
  EXPECT_EQ(s.decisions[0].what, TuneTarget::kPrefetch);
  EXPECT_EQ(s.decisions[0].from, 6);
  EXPECT_EQ(s.decisions[0].to, 9);
  EXPECT_NE(s.decisions[0].reason.find("bursts: deeper prefetch"), std::string::npos)
      << s.decisions[0].reason;
  EXPECT_GE(s.slots, 9);
}

TEST(PoolAuto, InvalidSettingsAreRefusedWithWhatToChange) {
  Options o = png_options(kAuto);
  o.stall_target = 2;
  EXPECT_THROW(Loader{o}, ConfigError);
  o = png_options(-5);
  EXPECT_THROW(Loader{o}, ConfigError);
  o = png_options(kAuto);
  o.monitor_window = 2;
  EXPECT_THROW(Loader{o}, ConfigError);
}

}  // namespace
}  // namespace stoke
