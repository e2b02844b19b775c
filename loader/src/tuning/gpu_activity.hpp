#pragma once
// Background sampling of GPU utilization, and the classifier that tells a starved GPU (bursts of
// work separated by idle gaps while it waits for input) from a busy or an idle one.
//
// Thread-safety: summarize_utilization() is pure. A UtilizationSource is used by one thread at a
// time: open() on the thread that constructs the monitor, then read() only on the monitor's
// sampling thread. GpuActivityMonitor's status() and snapshot() may be called from any thread,
// concurrently with the sampling thread; the destructor must not race with them.
// Invariants: each device's ring holds at most `window` readings, in the order they were read;
// only the sampling thread writes the rings, under the monitor's mutex.

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.hpp"
#include "stoke/stats.hpp"

namespace stoke::detail {

// Where utilization readings come from: NVML on a real machine, a script in tests.
class UtilizationSource {
 public:
  virtual ~UtilizationSource() = default;
  // Prepares to read the devices `cuda_ids` (CUDA ordinals as this process sees them). Returns ""
  // on success, or why they cannot be read, in words (it names the library, code or device).
  virtual std::string open(const std::vector<int>& cuda_ids) = 0;
  // One reading of the device at `device_position` in open()'s list: percent of the last sample
  // period a kernel was running, 0..100. False when no reading is available this time.
  // REQUIRES: open() succeeded; device_position < cuda_ids.size().
  virtual bool read(std::size_t device_position, int& percent) = 0;
};

// NVML's "GPU busy" percentage, through `library` loaded with dlopen (see device/nvml.hpp). CUDA
// ordinal k is NVML index devices().gpus[k].physical_index, so CUDA_VISIBLE_DEVICES is honoured.
// Never creates a CUDA context; never throws: failures are reported by open().
std::unique_ptr<UtilizationSource> make_nvml_source(std::string library = "libnvidia-ml.so.1");

// The classifier's thresholds (readings are percentages).
inline constexpr float kIdlePercent = 10;  // a reading at or below this is idle
inline constexpr float kBusyPercent = 50;  // a reading at or above this is busy
inline constexpr int kStarvedMinSamples = 10;
inline constexpr int kStarvedMinBursts = 3;
inline constexpr double kStarvedMinFraction = 0.15;

// Summarizes one device's readings, oldest first. A burst is a busy stretch that later falls
// back to idle: it starts at a busy reading and is counted at the first idle reading after it;
// readings between the thresholds neither start nor end one, and a stretch still busy at the end
// is not counted. burst_then_idle (the starved-GPU pattern) holds when there are at least
// kStarvedMinSamples readings, at least kStarvedMinBursts bursts, and both idle_fraction and
// busy_fraction are at least kStarvedMinFraction: so a steadily busy or steadily idle GPU, one
// idle only while starting up, and one with a few short dips in busy work are not starved.
// With no readings everything but `device` is zero.
GpuActivity summarize_utilization(int device, std::span<const float> percents);

// Reads every device once per period on a background thread and keeps each device's last
// `window` readings.
class GpuActivityMonitor {
 public:
  // Calls source->open(cuda_ids). If that fails, status() is "unavailable: <reason>", snapshot()
  // reports zero samples per device, and no thread runs. Otherwise status() is "nvml" and the
  // sampling thread starts (its first reading is immediate).
  // REQUIRES: source != nullptr, period > 0, window > 0 (else std::invalid_argument).
  GpuActivityMonitor(std::unique_ptr<UtilizationSource> source, std::vector<int> cuda_ids,
                     std::chrono::milliseconds period = std::chrono::milliseconds(100),
                     std::size_t window = 300);
  // Stops the sampling thread without waiting out the period.
  ~GpuActivityMonitor();
  GpuActivityMonitor(const GpuActivityMonitor&) = delete;
  GpuActivityMonitor& operator=(const GpuActivityMonitor&) = delete;

  const std::string& status() const { return status_; }  // fixed by the constructor

  // One summary per device, in cuda_ids order, of its readings in the window now.
  std::vector<GpuActivity> snapshot() const;

 private:
  // Fixed-capacity history of one device; never allocates after construction.
  struct Ring {
    std::vector<float> values;  // capacity `window`; filled in order, then overwritten at next
    std::size_t next = 0;       // where the next reading goes once values is full
  };

  // The sampling thread. `got` and `percents` hold one round (one entry per device); they are
  // allocated by the constructor.
  void run(std::vector<char> got, std::vector<int> percents) noexcept;

  const std::unique_ptr<UtilizationSource> source_;  // the sampling thread's after construction
  const std::vector<int> cuda_ids_;
  const std::chrono::milliseconds period_;
  const std::size_t window_;
  std::string status_;

  mutable Mutex mu_;
  CondVar wake_;  // signalled when stop_ is set
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<Ring> rings_ GUARDED_BY(mu_);  // one per device
  std::thread thread_;                       // last member: started once everything above exists
};

}  // namespace stoke::detail
