// The stall monitor: per-batch timings, the moving window, the verdict, and the figures a real
// loader reports for a simulated consumer with a known compute time.

#include "tuning/stall_monitor.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

using detail::StallMonitor;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Feeds the monitor a consumer that computes `compute` ms and then waits `wait` ms per batch.
void feed(StallMonitor& m, Clock::time_point& t, int batches, int compute_ms, int wait_ms,
          int samples = 10) {
  for (int i = 0; i < batches; ++i) {
    t += milliseconds(compute_ms);
    const Clock::time_point entered = t;
    t += milliseconds(wait_ms);
    m.delivered(entered, t, samples);
  }
}

TEST(StallMonitor, TheFirstBatchIsStartUpAndThenEachBatchCountsItsWaitAndCompute) {
  StallMonitor m(100);
  Clock::time_point t{};
  feed(m, t, 1, 0, 500);  // start-up: no compute before it to measure
  EXPECT_EQ(m.window().batches, 0);
  feed(m, t, 10, 30, 10);
  const StallMonitor::Totals w = m.window();
  EXPECT_EQ(w.batches, 10);
  EXPECT_EQ(w.samples, 100);
  EXPECT_NEAR(w.wait_s, 0.100, 1e-9);
  EXPECT_NEAR(w.compute_s, 0.300, 1e-9);
  EXPECT_NEAR(w.wait_fraction(), 0.25, 1e-9);
  EXPECT_NEAR(w.delivered_per_s(), 250, 1e-6);  // 100 samples in 0.4 s
  EXPECT_NEAR(w.demand_per_s(), 100.0 / 0.3, 1e-6);
  EXPECT_NEAR(m.compute_s(), 0.300, 1e-9);
}

TEST(StallMonitor, TheWindowHoldsOnlyTheLastBatchesWhileTheRunTotalKeepsEverything) {
  StallMonitor m(4);
  Clock::time_point t{};
  feed(m, t, 1, 0, 0);
  feed(m, t, 6, 10, 90);  // input-bound stretch
  feed(m, t, 4, 90, 10);  // then the pool caught up
  const StallMonitor::Totals w = m.window();
  EXPECT_EQ(w.batches, 4);
  EXPECT_NEAR(w.wait_fraction(), 0.10, 1e-9);
  EXPECT_NEAR(m.compute_s(), 6 * 0.010 + 4 * 0.090, 1e-9);
}

TEST(StallMonitor, AnEpochBoundaryIsNotCountedAsComputeAndARestartEmptiesTheWindow) {
  StallMonitor m(50);
  Clock::time_point t{};
  feed(m, t, 3, 10, 10);  // 2 measured
  m.interrupt();          // the consumer evaluated for a minute between epochs
  t += std::chrono::minutes(1);
  feed(m, t, 3, 10, 10);  // the first after the break is not measured
  EXPECT_EQ(m.window().batches, 4);
  EXPECT_NEAR(m.compute_s(), 0.040, 1e-9);
  m.restart_window();
  EXPECT_EQ(m.window().batches, 0);
  EXPECT_NEAR(m.compute_s(), 0.040, 1e-9);
}

Stats window_stats(double wait, double delivered, double demand, int workers, double busy,
                   double per_worker) {
  Stats s;
  s.window_batches = 50;
  s.window_wait_fraction = wait;
  s.window_samples_per_s = delivered;
  s.demand_samples_per_s = demand;
  s.workers = workers;
  s.worker_busy_fraction = busy;
  s.worker_samples_per_s = per_worker;
  return s;
}

TEST(StallMonitor, AnInputBoundVerdictSaysHowLongItWaitedWhatFlowedAndHowManyWorkersToTry) {
  const Stats s = window_stats(0.37, 1900, 3000, 2, 0.98, 950);
  EXPECT_EQ(detail::stall_verdict(s, {.cores = 8, .target = 0.02}),
            "input-bound: the consumer waited 37% of the time over the last 50 batches; "
            "2 workers delivered 1,900 img/s, the consumer took up to 3,000 img/s; try 4 workers");
}

TEST(StallMonitor, AVerdictBeyondTheCoresSaysSoAndAutoAtItsLimitSaysThat) {
  const Stats s = window_stats(0.5, 1000, 4000, 2, 0.99, 500);
  EXPECT_EQ(detail::stall_verdict(s, {.cores = 2, .target = 0.02}),
            "input-bound: the consumer waited 50% of the time over the last 50 batches; "
            "2 workers delivered 1,000 img/s, the consumer took up to 4,000 img/s; try 9 "
            "workers, but only 2 cores are available: a cheaper pipeline or a bigger host would "
            "help");
  EXPECT_NE(
      detail::stall_verdict(
          s, {.cores = 2, .target = 0.02, .max_workers = 2, .limit_reason = "2 cores available"})
          .find("workers=auto is at its limit of 2 workers (2 cores available): a cheaper "
                "pipeline or a bigger host would help"),
      std::string::npos);
}

TEST(StallMonitor, WaitingWhileTheWorkersIdleIsABurstyConsumerAndPrefetchIsTheAdvice) {
  const Stats s = window_stats(0.10, 900, 1000, 4, 0.40, 600);
  EXPECT_NE(detail::stall_verdict(s, {.cores = 8, .target = 0.02})
                .find("the workers were busy only 40%, so the consumer takes batches in bursts: "
                      "raise prefetch"),
            std::string::npos);
}

TEST(StallMonitor, WaitingWhileBusyWorkersShouldKeepUpAsksForOneMoreWorkerNotPrefetch) {
  // The rate per busy second says 4 workers suffice, but they are busy all the time: their
  // measured rate leaves out some overhead, and more prefetch would not help.
  const Stats s = window_stats(0.10, 900, 1000, 4, 0.97, 600);
  const std::string v = detail::stall_verdict(s, {.cores = 8, .target = 0.02});
  EXPECT_NE(v.find("; try 5 workers"), std::string::npos) << v;
  EXPECT_EQ(v.find("prefetch"), std::string::npos) << v;
}

TEST(StallMonitor, ANotInputBoundVerdictNamesTheDemandAndASmallerPoolThatWouldDo) {
  const Stats s = window_stats(0.004, 1200, 1210, 4, 0.30, 1000);
  EXPECT_EQ(detail::stall_verdict(s, {.cores = 8, .target = 0.02}),
            "not input-bound: the consumer waited 0.4% of the time over the last 50 batches; "
            "4 workers delivered 1,200 img/s against a demand of 1,210 img/s; 2 workers would "
            "likely keep up");
}

TEST(StallMonitor, TheVerdictAddsTheGpuBurstThenIdlePattern) {
  Stats s = window_stats(0.3, 1000, 1400, 2, 0.95, 500);
  GpuActivity g;
  g.device = 0;
  g.samples = 100;
  g.mean_percent = 52;
  g.idle_fraction = 0.38;
  g.burst_then_idle = true;
  s.gpus.push_back(g);
  const std::string v = detail::stall_verdict(s, {.cores = 8, .target = 0.02});
  EXPECT_NE(v.find("; GPU 0 ran in bursts and sat idle 38% of the time (mean utilization 52%)"),
            std::string::npos)
      << v;
}

TEST(StallMonitor, TooFewBatchesGiveNoVerdict) {
  Stats s;
  s.window_batches = 2;
  EXPECT_EQ(detail::stall_verdict(s, {}), "not enough batches yet to judge (2 measured)");
}

// A real loader and a consumer that sleeps a known time per batch: the monitor's figures must
// match what the consumer measures itself.
TEST(StallMonitor, MatchesASimulatedConsumerWithAKnownComputeTime) {
  Options o;
  o.data = test::testdata("jpeg");
  o.batch = 8;
  o.workers = 1;
  o.monitor_window = 1000;
  o.log = [](std::string_view) {};
  Loader loader(o);
  // One worker makes a batch of 8 of these photographs in about 4 ms on this 2-core machine: a
  // consumer of 2 ms waits about half the time. (3 ms left a quarter, which a machine a little
  // faster at decoding took under 0.2.)
  constexpr auto kCompute = milliseconds(2);
  // The consumer's own account, with the monitor's definitions: a batch's wait is its next()
  // call, its compute the time since the previous batch of the same epoch was returned.
  double own_wait = 0, own_compute = 0;
  int measured = 0;
  for (int epoch = 0; epoch < 15; ++epoch) {
    loader.set_epoch(epoch);
    std::optional<Clock::time_point> previous;
    for (;;) {
      const auto entered = Clock::now();
      auto batch = loader.next();
      const auto returned = Clock::now();
      if (!batch) break;
      if (previous) {
        own_wait += std::chrono::duration<double>(returned - entered).count();
        own_compute += std::chrono::duration<double>(entered - *previous).count();
        ++measured;
      }
      previous = returned;
      std::this_thread::sleep_for(kCompute);
    }
  }
  const Stats s = loader.stats();
  const double own_fraction = own_wait / (own_wait + own_compute);
  ASSERT_EQ(s.window_batches, measured);
  EXPECT_GT(own_fraction, 0.2) << "the pipeline should be slower than the consumer here";
  EXPECT_NEAR(s.window_wait_fraction, own_fraction, 0.03);
  // The consumer's demand: 8 samples per batch over its own measured compute time per batch
  // (the 2 ms sleep, and whatever the machine adds to it).
  const double own_demand = 8 * measured / own_compute;
  EXPECT_NEAR(s.demand_samples_per_s, own_demand, 0.05 * own_demand);
  EXPECT_EQ(s.verdict.rfind("input-bound: ", 0), 0u) << s.verdict;
}

}  // namespace
}  // namespace stoke
