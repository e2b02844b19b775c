#include "tuning/gpu_activity.hpp"

#include <stdexcept>
#include <utility>

#include "device/nvml.hpp"
#include "stoke/devices.hpp"

namespace stoke::detail {
namespace {

class NvmlSource final : public UtilizationSource {
 public:
  explicit NvmlSource(std::string library) : library_(std::move(library)) {}

  std::string open(const std::vector<int>& cuda_ids) override {
    // Loaded here rather than in the constructor so that make_nvml_source() cannot fail.
    nvml_ = std::make_unique<Nvml>(library_);
    if (!nvml_->loaded()) return library_ + " could not be loaded: " + nvml_->load_error();
    if (std::string why = nvml_->init(); !why.empty()) return why;
    if (!nvml_->has_utilization()) return library_ + " lacks nvmlDeviceGetUtilizationRates";
    const std::vector<GpuInfo>& gpus = devices().gpus;
    handles_.clear();
    for (const int id : cuda_ids) {
      if (id < 0 || static_cast<std::size_t>(id) >= gpus.size())
        return "CUDA device " + std::to_string(id) + " has no NVML entry (" +
               std::to_string(gpus.size()) + " visible)";
      const int physical = gpus[static_cast<std::size_t>(id)].physical_index;
      NvmlDevice handle = nullptr;
      if (physical < 0 || !nvml_->device_by_index(static_cast<unsigned>(physical), handle))
        return "CUDA device " + std::to_string(id) + " has no NVML entry (NVML index " +
               std::to_string(physical) + ")";
      handles_.push_back(handle);
    }
    return "";
  }

  bool read(std::size_t device_position, int& percent) override {
    NvmlUtilization u{};
    if (!nvml_->utilization(handles_[device_position], u)) return false;
    percent = static_cast<int>(u.gpu);
    return true;
  }

 private:
  std::string library_;
  std::unique_ptr<Nvml> nvml_;
  std::vector<NvmlDevice> handles_;  // by position in open()'s list
};

// The ring's readings, oldest first.
std::vector<float> in_order(const std::vector<float>& values, std::size_t next) {
  std::vector<float> out;
  out.reserve(values.size());
  out.insert(out.end(), values.begin() + static_cast<std::ptrdiff_t>(next), values.end());
  out.insert(out.end(), values.begin(), values.begin() + static_cast<std::ptrdiff_t>(next));
  return out;
}

}  // namespace

std::unique_ptr<UtilizationSource> make_nvml_source(std::string library) {
  return std::make_unique<NvmlSource>(std::move(library));
}

GpuActivity summarize_utilization(int device, std::span<const float> percents) {
  GpuActivity a;
  a.device = device;
  if (percents.empty()) return a;
  double sum = 0;
  int idle = 0, busy = 0;
  bool in_burst = false;
  for (const float p : percents) {
    sum += p;
    if (p <= kIdlePercent) {
      ++idle;
      if (in_burst) ++a.bursts;
      in_burst = false;
    } else if (p >= kBusyPercent) {
      ++busy;
      in_burst = true;
    }
  }
  const double n = static_cast<double>(percents.size());
  a.samples = static_cast<int>(percents.size());
  a.mean_percent = sum / n;
  a.idle_fraction = idle / n;
  a.busy_fraction = busy / n;
  a.burst_then_idle = a.samples >= kStarvedMinSamples && a.bursts >= kStarvedMinBursts &&
                      a.idle_fraction >= kStarvedMinFraction &&
                      a.busy_fraction >= kStarvedMinFraction;
  return a;
}

GpuActivityMonitor::GpuActivityMonitor(std::unique_ptr<UtilizationSource> source,
                                       std::vector<int> cuda_ids, std::chrono::milliseconds period,
                                       std::size_t window)
    : source_(std::move(source)),
      cuda_ids_(std::move(cuda_ids)),
      period_(period),
      window_(window),
      rings_(cuda_ids_.size()) {
  if (source_ == nullptr) throw std::invalid_argument("GpuActivityMonitor: no source");
  if (period_.count() <= 0 || window_ == 0)
    throw std::invalid_argument("GpuActivityMonitor: period and window must be positive");
  if (std::string why = source_->open(cuda_ids_); !why.empty()) {
    status_ = "unavailable: " + why;
    return;
  }
  // Everything the sampling thread needs is allocated here, so that it never allocates (and so
  // never throws).
  for (Ring& r : rings_) r.values.reserve(window_);
  status_ = "nvml";
  thread_ = std::thread(&GpuActivityMonitor::run, this, std::vector<char>(cuda_ids_.size()),
                        std::vector<int>(cuda_ids_.size()));
}

GpuActivityMonitor::~GpuActivityMonitor() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<GpuActivity> GpuActivityMonitor::snapshot() const {
  std::vector<std::vector<float>> readings;
  readings.reserve(cuda_ids_.size());
  {
    MutexLock lock(mu_);
    for (const Ring& r : rings_) readings.push_back(in_order(r.values, r.next));
  }
  std::vector<GpuActivity> out;
  out.reserve(readings.size());
  for (std::size_t i = 0; i < readings.size(); ++i)
    out.push_back(summarize_utilization(cuda_ids_[i], readings[i]));
  return out;
}

void GpuActivityMonitor::run(std::vector<char> got, std::vector<int> percents) noexcept {
  // Read outside the lock (an NVML call can take milliseconds), then publish the round at once.
  MutexLock lock(mu_);
  while (!stop_) {
    without_lock(mu_, [&] {
      for (std::size_t i = 0; i < cuda_ids_.size(); ++i) {
        try {
          got[i] = source_->read(i, percents[i]);
        } catch (...) {  // a source that throws loses that reading, not the process
          got[i] = false;
        }
      }
    });
    for (std::size_t i = 0; i < rings_.size(); ++i) {
      if (!got[i]) continue;
      Ring& r = rings_[i];
      const float value = static_cast<float>(percents[i]);
      if (r.values.size() < window_) {
        r.values.push_back(value);  // within the reserved capacity
      } else {
        r.values[r.next] = value;
        r.next = (r.next + 1) % window_;
      }
    }
    const auto until = std::chrono::steady_clock::now() + period_;
    for (auto now = std::chrono::steady_clock::now(); !stop_ && now < until;
         now = std::chrono::steady_clock::now())
      wake_.wait_for(lock, until - now);
  }
}

}  // namespace stoke::detail
