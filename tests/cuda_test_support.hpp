#pragma once
// For tests that need a real GPU: skip without one, or fail when STOKE_REQUIRE_GPU=1 is set
// (the device check sets it, so a GPU machine never reports "passed" for skipped GPU tests).
// Include only from CUDA-aware test files.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace stoke::test {

inline bool have_gpu(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    *why = std::string("no usable CUDA driver/device: ") + cudaGetErrorString(status);
    return false;
  }
  if (count == 0) {
    *why = "no CUDA device";
    return false;
  }
  return true;
}

// Device memory owned by a test; the kernels themselves never allocate.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes != 0 && cudaMalloc(&ptr_, bytes) != cudaSuccess)
      throw std::runtime_error("cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

inline bool gpu_required() {
  const char* v = std::getenv("STOKE_REQUIRE_GPU");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace stoke::test

#define STOKE_SKIP_WITHOUT_GPU()                               \
  do {                                                         \
    std::string stoke_why_;                                    \
    if (!::stoke::test::have_gpu(&stoke_why_)) {               \
      if (::stoke::test::gpu_required()) FAIL() << stoke_why_; \
      GTEST_SKIP() << stoke_why_;                              \
    }                                                          \
  } while (0)
