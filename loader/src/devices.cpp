#include "stoke/devices.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace stoke {
namespace {

// The few NVML entry points stoke needs, declared by hand: the toolkit ships no NVML header
// here, and nothing may link against libnvidia-ml.
using NvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlPciInfo {  // nvmlPciInfo_t (v3 layout)
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

class Nvml {
 public:
  explicit Nvml(const std::string& library) {
    handle_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    init_ = sym<int (*)()>("nvmlInit_v2");
    shutdown_ = sym<int (*)()>("nvmlShutdown");
    count_ = sym<int (*)(unsigned*)>("nvmlDeviceGetCount_v2");
    by_index_ = sym<int (*)(unsigned, NvmlDevice*)>("nvmlDeviceGetHandleByIndex_v2");
    name_ = sym<int (*)(NvmlDevice, char*, unsigned)>("nvmlDeviceGetName");
    uuid_ = sym<int (*)(NvmlDevice, char*, unsigned)>("nvmlDeviceGetUUID");
    memory_ = sym<int (*)(NvmlDevice, NvmlMemory*)>("nvmlDeviceGetMemoryInfo");
    pci_ = sym<int (*)(NvmlDevice, NvmlPciInfo*)>("nvmlDeviceGetPciInfo_v3");
  }
  ~Nvml() {
    if (initialized_ && shutdown_ != nullptr) shutdown_();
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool loaded() const { return handle_ != nullptr; }

  // Physical devices in NVML (PCI bus) order; false when NVML is unusable.
  bool list(std::vector<GpuInfo>& out, std::string& why) {
    if (init_ == nullptr || count_ == nullptr || by_index_ == nullptr) {
      why = "NVML lacks the expected entry points";
      return false;
    }
    if (const int rc = init_(); rc != 0) {
      why = "nvmlInit failed with code " + std::to_string(rc) + " (is the driver loaded?)";
      return false;
    }
    initialized_ = true;
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

 private:
  template <class F>
  F sym(const char* name) {
    return reinterpret_cast<F>(::dlsym(handle_, name));
  }

  void* handle_ = nullptr;
  bool initialized_ = false;
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  int (*count_)(unsigned*) = nullptr;
  int (*by_index_)(unsigned, NvmlDevice*) = nullptr;
  int (*name_)(NvmlDevice, char*, unsigned) = nullptr;
  int (*uuid_)(NvmlDevice, char*, unsigned) = nullptr;
  int (*memory_)(NvmlDevice, NvmlMemory*) = nullptr;
  int (*pci_)(NvmlDevice, NvmlPciInfo*) = nullptr;
};

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// The driver's /proc/driver/nvidia/gpus/<bus id>/information files ("Model:", "GPU UUID:",
// "Bus Location:"), in bus order. They carry no memory size.
std::vector<GpuInfo> list_procfs(const std::string& root) {
  std::vector<GpuInfo> out;
  std::error_code ec;
  std::vector<std::filesystem::path> dirs;
  for (auto it = std::filesystem::directory_iterator(root, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    dirs.push_back(it->path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    std::ifstream in(dir / "information");
    if (!in) continue;
    GpuInfo g;
    g.physical_index = static_cast<int>(out.size());
    g.pci_bus_id = dir.filename().string();
    std::string line;
    while (std::getline(in, line)) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
      if (key == "Model") g.name = value;
      if (key == "GPU UUID") g.uuid = value;
      if (key == "Bus Location") g.pci_bus_id = value;
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace

std::vector<int> apply_visible_devices(const std::string& value,
                                       const std::vector<std::string>& uuids) {
  std::vector<int> visible;
  std::stringstream entries(value);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    entry = trim(entry);
    int physical = -1;
    if (!entry.empty() && std::isdigit(static_cast<unsigned char>(entry[0]))) {
      int index = -1;
      const auto [ptr, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), index);
      if (ec == std::errc() && ptr == entry.data() + entry.size() && index >= 0 &&
          index < static_cast<int>(uuids.size()))
        physical = index;
    } else if (entry.rfind("GPU-", 0) == 0) {
      for (std::size_t i = 0; i < uuids.size(); ++i) {
        if (uuids[i].rfind(entry, 0) != 0) continue;
        if (physical >= 0) {  // ambiguous prefix
          physical = -1;
          break;
        }
        physical = static_cast<int>(i);
      }
    }
    if (physical < 0 || std::find(visible.begin(), visible.end(), physical) != visible.end()) break;
    visible.push_back(physical);
  }
  return visible;
}

DiscoverySources default_discovery_sources() {
  DiscoverySources s;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v != nullptr) {
    s.has_visible_devices = true;
    s.visible_devices = v;
  }
  return s;
}

DeviceDiscovery discover_devices(const DiscoverySources& sources) {
  DeviceDiscovery d;
  std::vector<GpuInfo> physical;
  Nvml nvml(sources.nvml_library);
  std::string why;
  if (nvml.loaded() && nvml.list(physical, why)) {
    d.method = "nvml";
    d.detail = "NVML (" + sources.nvml_library + ")";
  } else {
    d.detail =
        nvml.loaded() ? "NVML unusable: " + why + "; " : sources.nvml_library + " not found; ";
    physical = list_procfs(sources.procfs_root);
    if (!physical.empty()) {
      d.method = "procfs";
      d.detail += "read " + sources.procfs_root;
    } else {
      d.method = "none";
      d.detail += "no GPUs under " + sources.procfs_root;
    }
  }
  std::vector<int> order(physical.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  if (sources.has_visible_devices) {
    std::vector<std::string> uuids;
    for (const auto& g : physical) uuids.push_back(g.uuid);
    order = apply_visible_devices(sources.visible_devices, uuids);
    d.detail += "; CUDA_VISIBLE_DEVICES=\"" + sources.visible_devices + "\"";
  }
  for (std::size_t i = 0; i < order.size(); ++i) {
    GpuInfo g = physical[static_cast<std::size_t>(order[i])];
    g.index = static_cast<int>(i);
    d.gpus.push_back(g);
  }
  return d;
}

const DeviceDiscovery& devices() {
  static const DeviceDiscovery cached = discover_devices(default_discovery_sources());
  return cached;
}

}  // namespace stoke
