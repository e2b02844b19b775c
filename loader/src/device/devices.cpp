#include "stoke/devices.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/text.hpp"
#include "device/device_discovery.hpp"
#include "device/nvml.hpp"

namespace stoke {
namespace {

using detail::trim;

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
  detail::Nvml nvml(sources.nvml_library);
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
