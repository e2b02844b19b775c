#pragma once
// Discovering the GPUs a job may use, without side effects.
//
// Thread-safety: devices() computes once (thread-safe) and returns the cached result.
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

}  // namespace stoke
