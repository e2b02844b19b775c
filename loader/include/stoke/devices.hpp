#pragma once
// Discovering the GPUs a job may use, without side effects.
//
// Thread-safety: devices() computes once (thread-safe) and returns the cached result; the other
// functions are pure.
//
// Counting GPUs through the CUDA runtime creates a context on every device it touches, allocates
// memory there and is slow; worker processes must never do it. stoke reads NVML instead (loaded
// with dlopen, so nothing links against it), or the driver's /proc entries, and applies
// CUDA_VISIBLE_DEVICES (indices and UUIDs, as the CUDA runtime does) itself. On a machine without
// a driver it finds zero GPUs quickly and never throws.

#include <cstdint>
#include <string>
#include <vector>

namespace stoke {

struct GpuInfo {
  int index = 0;                   // CUDA ordinal as the job sees it (after CUDA_VISIBLE_DEVICES)
  int physical_index = 0;          // position in the driver's (PCI bus) order
  std::string name;                // e.g. "NVIDIA H200"
  std::string uuid;                // e.g. "GPU-8932f937-..."
  std::string pci_bus_id;          // e.g. "00000000:19:00.0"
  std::uint64_t memory_bytes = 0;  // 0 when the source does not say
};

struct DeviceDiscovery {
  std::vector<GpuInfo> gpus;  // visible GPUs, in CUDA ordinal order
  std::string method;         // "nvml", "procfs" or "none"
  std::string detail;         // what was tried, for `stoke-bench --list-devices`
};

// The GPUs visible to this process, discovered once and cached.
const DeviceDiscovery& devices();

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
