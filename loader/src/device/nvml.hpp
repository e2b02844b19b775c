#pragma once
// The few NVML entry points stoke needs, loaded with dlopen and declared by hand: the toolkit
// ships no NVML header here, and nothing may link against libnvidia-ml (worker processes and
// machines without a driver must load stoke). Device discovery and the GPU activity monitor
// share this one wrapper. NVML never creates a CUDA context.
//
// Thread-safety: an Nvml object is used by one thread at a time (NVML itself is thread-safe, but
// the wrapper's record of whether init() succeeded is not guarded). Several objects may live at
// once: NVML counts nvmlInit/nvmlShutdown pairs.

#include <string>
#include <vector>

#include "stoke/devices.hpp"

namespace stoke::detail {

using NvmlDevice = void*;
struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
struct NvmlPciInfo {  // nvmlPciInfo_t (v3 layout)
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct NvmlUtilization {  // nvmlUtilization_t: percentages of the last sample period
  unsigned gpu, memory;
};

class Nvml {
 public:
  // Loads `library` (a name the dynamic linker resolves, or a path); never throws. loaded() says
  // whether it worked and load_error() why not.
  explicit Nvml(const std::string& library);
  ~Nvml();  // nvmlShutdown if init() succeeded, then dlclose
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  const std::string& load_error() const { return load_error_; }  // dlerror(); "" when loaded

  // Initializes NVML (once; later calls return the first success): "" on success, else why not.
  // REQUIRES: loaded().
  std::string init();

  // Physical devices in NVML (PCI bus) order, each with physical_index set; index and the
  // fields NVML cannot give stay default. Calls init(). False (and `why`) when NVML is unusable.
  bool list(std::vector<GpuInfo>& out, std::string& why);

  // The handle of the device at NVML index `index` (PCI bus order, before CUDA_VISIBLE_DEVICES);
  // false when there is no such device or the entry point is missing. REQUIRES: init() succeeded.
  bool device_by_index(unsigned index, NvmlDevice& device);

  // Whether nvmlDeviceGetUtilizationRates exists (drivers old enough to lack it are not refused
  // for discovery, only for sampling).
  bool has_utilization() const { return utilization_ != nullptr; }
  // The device's utilization over the driver's last sample period (1/6 s to 1 s, by product);
  // false when NVML refuses (e.g. the device fell off the bus). REQUIRES: init() succeeded.
  bool utilization(NvmlDevice device, NvmlUtilization& out);

 private:
  template <class F>
  F sym(const char* name);

  void* handle_ = nullptr;
  std::string load_error_;
  bool initialized_ = false;
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  int (*count_)(unsigned*) = nullptr;
  int (*by_index_)(unsigned, NvmlDevice*) = nullptr;
  int (*name_)(NvmlDevice, char*, unsigned) = nullptr;
  int (*uuid_)(NvmlDevice, char*, unsigned) = nullptr;
  int (*memory_)(NvmlDevice, NvmlMemory*) = nullptr;
  int (*pci_)(NvmlDevice, NvmlPciInfo*) = nullptr;
  int (*utilization_)(NvmlDevice, NvmlUtilization*) = nullptr;
};

}  // namespace stoke::detail
