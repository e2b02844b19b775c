// The GPU activity monitor: the classifier on known utilization patterns, the background sampler
// driven by a scripted source, and the NVML source failing with a reason instead of throwing.
#include "tuning/gpu_activity.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "stoke/devices.hpp"

namespace stoke::detail {
namespace {

// Checks every field of a summary but the device.
void expect_summary(const GpuActivity& a, int samples, double mean, double idle, double busy,
                    int bursts, bool starved) {
  EXPECT_EQ(a.samples, samples);
  EXPECT_DOUBLE_EQ(a.mean_percent, mean);
  EXPECT_DOUBLE_EQ(a.idle_fraction, idle);
  EXPECT_DOUBLE_EQ(a.busy_fraction, busy);
  EXPECT_EQ(a.bursts, bursts);
  EXPECT_EQ(a.burst_then_idle, starved);
}

using namespace std::chrono_literals;

// `times` copies of `pattern`, as readings.
std::vector<float> repeat(std::initializer_list<float> pattern, int times) {
  std::vector<float> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), pattern);
  return out;
}

// Polls `done` until it holds or ten seconds pass: generous, so a slow machine is never a
// failure, and bounded, so a broken monitor fails instead of hanging.
template <class Pred>
bool eventually(Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(GpuActivity, AlternatingBurstsAndIdleGapsAreTheStarvedPattern) {
  const std::vector<float> r = repeat({95, 0}, 10);
  const GpuActivity a = summarize_utilization(3, r);
  EXPECT_EQ(a.device, 3);
  expect_summary(a, 20, 47.5, 0.5, 0.5, 10, true);
}

TEST(GpuActivity, LongerBurstsAndGapsWithNoisyReadingsAreStarvedToo) {
  const std::vector<float> r = repeat({97, 93, 2, 0, 0}, 4);
  const GpuActivity a = summarize_utilization(0, r);
  expect_summary(a, 20, 38.4, 0.6, 0.4, 4, true);  // mean: 192 * 4 / 20
}

TEST(GpuActivity, ASteadilyBusyGpuIsNotStarved) {
  const std::vector<float> r(20, 90);
  const GpuActivity a = summarize_utilization(0, r);
  expect_summary(a, 20, 90, 0, 1, 0, false);
}

TEST(GpuActivity, ASteadilyIdleGpuIsNotStarved) {
  const std::vector<float> r(20, 0);
  const GpuActivity a = summarize_utilization(0, r);
  expect_summary(a, 20, 0, 1, 0, 0, false);
}

TEST(GpuActivity, IdleOnlyWhileStartingUpThenBusyIsNotStarved) {
  std::vector<float> r(5, 0);
  r.insert(r.end(), 15, 90);
  const GpuActivity a = summarize_utilization(0, r);
  expect_summary(a, 20, 67.5, 0.25, 0.75, 0, false);
}

TEST(GpuActivity, AFewShortDipsInBusyWorkAreNotStarvation) {
  std::vector<float> r;
  for (int dip = 0; dip < 3; ++dip) {
    r.insert(r.end(), 9, 90);
    r.push_back(0);
  }
  const GpuActivity a = summarize_utilization(0, r);
  EXPECT_EQ(a.samples, 30);
  EXPECT_DOUBLE_EQ(a.mean_percent, 81);
  EXPECT_DOUBLE_EQ(a.idle_fraction, 0.1);  // below kStarvedMinFraction
  EXPECT_DOUBLE_EQ(a.busy_fraction, 0.9);
  EXPECT_EQ(a.bursts, 3);
  EXPECT_FALSE(a.burst_then_idle);
}

TEST(GpuActivity, TooFewReadingsAreNeverCalledStarved) {
  const std::vector<float> r = repeat({95, 0}, 4);
  const GpuActivity a = summarize_utilization(0, r);
  EXPECT_EQ(a.samples, 8);
  EXPECT_EQ(a.bursts, 4);
  EXPECT_DOUBLE_EQ(a.idle_fraction, 0.5);
  EXPECT_DOUBLE_EQ(a.busy_fraction, 0.5);
  EXPECT_FALSE(a.burst_then_idle);
}

TEST(GpuActivity, NoReadingsGiveAnEmptySummaryForTheDevice) {
  const GpuActivity a = summarize_utilization(2, {});
  EXPECT_EQ(a.device, 2);
  EXPECT_EQ(a.samples, 0);
  EXPECT_DOUBLE_EQ(a.mean_percent, 0);
  EXPECT_EQ(a.bursts, 0);
  EXPECT_FALSE(a.burst_then_idle);
}

TEST(GpuActivity, ThresholdsAreInclusiveAndMiddleReadingsNeitherStartNorEndABurst) {
  // 50 is busy and 10 is idle.
  const GpuActivity edges = summarize_utilization(0, repeat({50, 10}, 5));
  EXPECT_DOUBLE_EQ(edges.mean_percent, 30);
  EXPECT_DOUBLE_EQ(edges.idle_fraction, 0.5);
  EXPECT_DOUBLE_EQ(edges.busy_fraction, 0.5);
  EXPECT_EQ(edges.bursts, 5);
  EXPECT_TRUE(edges.burst_then_idle);
  // A busy stretch that passes through 30% on its way to idle counts once; 30% alone is no burst.
  EXPECT_EQ(summarize_utilization(0, std::vector<float>{95, 30, 0, 30, 95, 30, 0}).bursts, 2);
  EXPECT_EQ(summarize_utilization(0, std::vector<float>{30, 0, 30, 0, 49, 11}).bursts, 0);
}

// What the scripted source has done, shared with the test (the monitor owns the source).
struct ScriptProgress {
  std::vector<int> opened_ids;          // written by open(), before the sampling thread starts
  std::atomic<bool> exhausted = false;  // set at the first read past device 0's script
};

// Yields each device's script, one reading per read(); kFail makes that read fail and kThrow
// makes it throw. Past its end, every read fails.
constexpr int kFail = -1, kThrow = -2;
class ScriptedSource final : public UtilizationSource {
 public:
  ScriptedSource(std::vector<std::vector<int>> scripts, std::shared_ptr<ScriptProgress> progress,
                 std::string open_error = "")
      : scripts_(std::move(scripts)),
        next_(scripts_.size()),
        progress_(std::move(progress)),
        open_error_(std::move(open_error)) {}

  std::string open(const std::vector<int>& cuda_ids) override {
    progress_->opened_ids = cuda_ids;
    return open_error_;
  }

  bool read(std::size_t position, int& percent) override {
    const std::vector<int>& script = scripts_.at(position);
    std::size_t& next = next_.at(position);
    if (next == script.size()) {
      if (position == 0) progress_->exhausted = true;
      return false;
    }
    const int value = script[next++];
    if (value == kThrow) throw std::runtime_error("planted");
    if (value == kFail) return false;
    percent = value;
    return true;
  }

 private:
  std::vector<std::vector<int>> scripts_;
  std::vector<std::size_t> next_;
  std::shared_ptr<ScriptProgress> progress_;
  std::string open_error_;
};

std::vector<int> repeat_int(std::initializer_list<int> pattern, int times) {
  std::vector<int> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), pattern);
  return out;
}

TEST(GpuActivity, TheMonitorSamplesEveryDeviceInTheBackgroundAndSummarizesEach) {
  auto progress = std::make_shared<ScriptProgress>();
  auto source = std::make_unique<ScriptedSource>(
      std::vector<std::vector<int>>{repeat_int({95, 0}, 10), std::vector<int>(20, 90)}, progress);
  GpuActivityMonitor monitor(std::move(source), {2, 5}, 1ms, 300);
  EXPECT_EQ(monitor.status(), "nvml");
  EXPECT_EQ(progress->opened_ids, (std::vector<int>{2, 5}));
  ASSERT_TRUE(eventually([&] { return monitor.snapshot()[0].samples == 20; }));
  const std::vector<GpuActivity> s = monitor.snapshot();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].device, 2);
  EXPECT_EQ(s[0].samples, 20);
  EXPECT_DOUBLE_EQ(s[0].mean_percent, 47.5);
  EXPECT_EQ(s[0].bursts, 10);
  EXPECT_TRUE(s[0].burst_then_idle);
  EXPECT_EQ(s[1].device, 5);
  EXPECT_EQ(s[1].samples, 20);
  EXPECT_DOUBLE_EQ(s[1].mean_percent, 90);
  EXPECT_DOUBLE_EQ(s[1].busy_fraction, 1);
  EXPECT_FALSE(s[1].burst_then_idle);
}

TEST(GpuActivity, TheMonitorKeepsOnlyTheLastWindowOfReadingsOldestFirst) {
  // 13 readings through a window of 10: the first three (a burst that the fourth would end) fall
  // out. Read oldest first, the window ends busy, so it holds no burst; read in the ring's
  // storage order it would hold one.
  std::vector<int> script = {95, 95, 95};
  script.insert(script.end(), 7, 0);
  script.insert(script.end(), 3, 95);
  auto progress = std::make_shared<ScriptProgress>();
  GpuActivityMonitor monitor(
      std::make_unique<ScriptedSource>(std::vector<std::vector<int>>{script}, progress), {0}, 1ms,
      10);
  ASSERT_TRUE(eventually([&] { return progress->exhausted.load(); }));
  const GpuActivity a = monitor.snapshot().at(0);
  EXPECT_EQ(a.samples, 10);
  EXPECT_DOUBLE_EQ(a.mean_percent, 28.5);
  EXPECT_DOUBLE_EQ(a.idle_fraction, 0.7);
  EXPECT_DOUBLE_EQ(a.busy_fraction, 0.3);
  EXPECT_EQ(a.bursts, 0);
}

TEST(GpuActivity, FailedAndThrowingReadsAreSkipped) {
  auto progress = std::make_shared<ScriptProgress>();
  const std::vector<int> script = {90, kFail, 90, kThrow, 0, kFail, 0};
  GpuActivityMonitor monitor(
      std::make_unique<ScriptedSource>(std::vector<std::vector<int>>{script}, progress), {0}, 1ms);
  ASSERT_TRUE(eventually([&] { return progress->exhausted.load(); }));
  const GpuActivity a = monitor.snapshot().at(0);
  EXPECT_EQ(a.samples, 4);
  EXPECT_DOUBLE_EQ(a.mean_percent, 45);
  EXPECT_EQ(a.bursts, 1);
}

TEST(GpuActivity, AMonitorWhoseSourceCannotOpenSaysWhyAndReportsNoSamples) {
  auto progress = std::make_shared<ScriptProgress>();
  GpuActivityMonitor monitor(
      std::make_unique<ScriptedSource>(std::vector<std::vector<int>>{{90}}, progress,
                                       "nvmlInit failed with code 9"),
      {0}, 1ms);
  EXPECT_EQ(monitor.status(), "unavailable: nvmlInit failed with code 9");
  std::this_thread::sleep_for(20ms);  // time a (wrongly) running thread would use to read
  EXPECT_FALSE(progress->exhausted.load());
  const std::vector<GpuActivity> s = monitor.snapshot();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].device, 0);
  EXPECT_EQ(s[0].samples, 0);
}

TEST(GpuActivity, TheMonitorStopsWithoutWaitingOutItsPeriod) {
  // With an hour's period, a destructor that slept instead of waking the thread would hang here
  // (and the test's timeout would report it).
  auto progress = std::make_shared<ScriptProgress>();
  auto monitor = std::make_unique<GpuActivityMonitor>(
      std::make_unique<ScriptedSource>(std::vector<std::vector<int>>{{90}}, progress),
      std::vector<int>{0}, std::chrono::hours(1));
  ASSERT_TRUE(eventually([&] { return monitor->snapshot()[0].samples == 1; }));
  monitor.reset();
}

TEST(GpuActivity, TheNvmlSourceNamesALibraryItCannotLoadInsteadOfThrowing) {
  std::unique_ptr<UtilizationSource> source = make_nvml_source("/nonexistent/libnvidia-ml.so.1");
  std::string why;
  EXPECT_NO_THROW(why = source->open({0}));
  EXPECT_EQ(why.rfind("/nonexistent/libnvidia-ml.so.1 could not be loaded: ", 0), 0u) << why;
  GpuActivityMonitor monitor(make_nvml_source("/nonexistent/libnvidia-ml.so.1"), {0});
  EXPECT_EQ(monitor.status().rfind("unavailable: /nonexistent/libnvidia-ml.so.1 could not be "
                                   "loaded: ",
                                   0),
            0u)
      << monitor.status();
}

TEST(GpuActivity, TheNvmlSourceReadsThisMachinesGpusByCudaOrdinal) {
  if (devices().method != "nvml" || devices().gpus.empty())
    GTEST_SKIP() << "no GPU through NVML here: " << devices().detail;
  std::unique_ptr<UtilizationSource> source = make_nvml_source();
  ASSERT_EQ(source->open({0}), "");
  int percent = -1;
  ASSERT_TRUE(source->read(0, percent));
  EXPECT_GE(percent, 0);
  EXPECT_LE(percent, 100);
  const int missing = static_cast<int>(devices().gpus.size());
  const std::string why = make_nvml_source()->open({0, missing});
  EXPECT_EQ(why.rfind("CUDA device " + std::to_string(missing) + " has no NVML entry", 0), 0u)
      << why;
}

}  // namespace
}  // namespace stoke::detail
