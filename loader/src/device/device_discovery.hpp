#pragma once
// Device discovery with its sources injectable: stoke::devices() (stoke/devices.hpp) runs it
// once on the real ones, tests point it at fake NVML libraries and /proc trees.
// Thread-safety: pure functions.

#include <string>
#include <vector>

#include "stoke/devices.hpp"

namespace stoke {

// Where discovery looks; tests point it at fakes.
struct DiscoverySources {
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string procfs_root = "/proc/driver/nvidia/gpus";
  bool has_visible_devices = false;  // CUDA_VISIBLE_DEVICES is set
  std::string visible_devices;       // its value
};
DiscoverySources default_discovery_sources();
DeviceDiscovery discover_devices(const DiscoverySources& sources);

// Applies CUDA_VISIBLE_DEVICES to the physical devices (given by their UUIDs, in physical order):
// the physical indices visible, in CUDA ordinal order. Like the CUDA runtime, entries are indices
// or (unique prefixes of) UUIDs, separated by commas; the list ends at the first invalid,
// unknown or repeated entry, so "-1" or "" hides every device.
std::vector<int> apply_visible_devices(const std::string& value,
                                       const std::vector<std::string>& uuids);

}  // namespace stoke
