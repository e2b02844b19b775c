#include "device/nvml.hpp"

#include <dlfcn.h>

namespace stoke::detail {

Nvml::Nvml(const std::string& library) {
  handle_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = ::dlerror();
    load_error_ = why != nullptr ? why : "dlopen failed";
    return;
  }
  init_ = sym<int (*)()>("nvmlInit_v2");
  shutdown_ = sym<int (*)()>("nvmlShutdown");
  count_ = sym<int (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  by_index_ = sym<int (*)(unsigned, NvmlDevice*)>("nvmlDeviceGetHandleByIndex_v2");
  name_ = sym<int (*)(NvmlDevice, char*, unsigned)>("nvmlDeviceGetName");
  uuid_ = sym<int (*)(NvmlDevice, char*, unsigned)>("nvmlDeviceGetUUID");
  memory_ = sym<int (*)(NvmlDevice, NvmlMemory*)>("nvmlDeviceGetMemoryInfo");
  pci_ = sym<int (*)(NvmlDevice, NvmlPciInfo*)>("nvmlDeviceGetPciInfo_v3");
  utilization_ = sym<int (*)(NvmlDevice, NvmlUtilization*)>("nvmlDeviceGetUtilizationRates");
}

Nvml::~Nvml() {
  if (initialized_ && shutdown_ != nullptr) shutdown_();
  if (handle_ != nullptr) ::dlclose(handle_);
}

template <class F>
F Nvml::sym(const char* name) {
  return reinterpret_cast<F>(::dlsym(handle_, name));
}

std::string Nvml::init() {
  if (initialized_) return "";
  if (init_ == nullptr) return "NVML lacks nvmlInit_v2";
  if (const int rc = init_(); rc != 0)
    return "nvmlInit failed with code " + std::to_string(rc) + " (is the driver loaded?)";
  initialized_ = true;
  return "";
}

bool Nvml::list(std::vector<GpuInfo>& out, std::string& why) {
  // Checked before init() so that a library without them is reported as such, not as a driver
  // problem.
  if (init_ == nullptr || count_ == nullptr || by_index_ == nullptr) {
    why = "NVML lacks the expected entry points";
    return false;
  }
  if (why = init(); !why.empty()) return false;
  unsigned n = 0;
  if (count_(&n) != 0) {
    why = "nvmlDeviceGetCount failed";
    return false;
  }
  for (unsigned i = 0; i < n; ++i) {
    NvmlDevice dev = nullptr;
    if (by_index_(i, &dev) != 0) continue;
    GpuInfo g;
    g.physical_index = static_cast<int>(i);
    char text[96] = {};
    if (name_ != nullptr && name_(dev, text, sizeof text) == 0) g.name = text;
    if (uuid_ != nullptr && uuid_(dev, text, sizeof text) == 0) g.uuid = text;
    NvmlMemory mem{};
    if (memory_ != nullptr && memory_(dev, &mem) == 0) g.memory_bytes = mem.total;
    NvmlPciInfo pci{};
    if (pci_ != nullptr && pci_(dev, &pci) == 0) g.pci_bus_id = pci.bus_id;
    out.push_back(g);
  }
  return true;
}

bool Nvml::device_by_index(unsigned index, NvmlDevice& device) {
  return by_index_ != nullptr && by_index_(index, &device) == 0;
}

bool Nvml::utilization(NvmlDevice device, NvmlUtilization& out) {
  return utilization_ != nullptr && utilization_(device, &out) == 0;
}

}  // namespace stoke::detail
