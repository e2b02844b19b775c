#pragma once
// One training device's memory and math: the trainer drives every replica through this
// interface, so one model code runs on host devices (CpuOps) and GPUs (CudaOps).
//
// Thread-safety: one DeviceOps is used by one thread at a time. Operations on a GPU are enqueued
// in order on the device's stream and may complete after the call returns; synchronize() waits
// for them. Pointers passed to the ops are this device's memory unless a comment says "host".

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "stoke/batch.hpp"
#include "stoke/kernels/nn.hpp"

namespace stoke::train {

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  virtual std::string name() const = 0;  // "cpu:0", "cuda:1"
  // The CUDA ordinal and the stream all work is enqueued on; -1 and null on host devices.
  virtual int cuda_device() const { return -1; }
  virtual CUstream_st* stream() const { return nullptr; }

  // Zero-filled device memory; released by release().
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  // Completes before the call returns.
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Orders the following work after the chunk's data has arrived, and keeps the chunk's memory
  // from being rewritten before that work has read it.
  virtual void use_input(const Batch& batch, int device) = 0;

  virtual void conv3x3_forward(const float* x, const float* w, float* y,
                               const nn::ConvShape& s) = 0;
  virtual void conv3x3_backward_data(const float* dy, const float* w, float* dx,
                                     const nn::ConvShape& s) = 0;
  virtual void conv3x3_backward_weights(const float* x, const float* dy, float* dw,
                                        const nn::ConvShape& s) = 0;
  virtual void bn_sums(const float* x, const nn::BnShape& s, double* sums) = 0;
  virtual void bn_finalize(const double* sums, double count, int c, float* mean,
                           float* invstd) = 0;
  virtual void bn_update_running(const double* sums, double count, int c, float momentum,
                                 float* running_mean, float* running_var) = 0;
  virtual void bn_relu_forward(const float* x, const float* mean, const float* invstd,
                               const float* gamma, const float* beta, const nn::BnShape& s,
                               float* y) = 0;
  virtual void bn_relu_inference(const float* x, const float* running_mean,
                                 const float* running_var, const float* gamma, const float* beta,
                                 const nn::BnShape& s, float* y) = 0;
  virtual void relu_backward(const float* dy, const float* y, const nn::BnShape& s,
                             float* dz) = 0;
  virtual void bn_backward_sums(const float* dz, const float* x, const float* mean,
                                const float* invstd, const nn::BnShape& s, double* sums) = 0;
  virtual void bn_backward_input(const float* dz, const float* x, const float* mean,
                                 const float* invstd, const float* gamma, const double* sums,
                                 double count, const nn::BnShape& s, float* dx) = 0;
  virtual void bn_param_grads(const double* sums, int c, float* dgamma, float* dbeta) = 0;
  virtual void maxpool2x2_forward(const float* x, const nn::BnShape& s, int h, int w, float* y,
                                  std::uint8_t* argmax) = 0;
  virtual void maxpool2x2_backward(const float* dy, const std::uint8_t* argmax,
                                   const nn::BnShape& s, int h, int w, float* dx) = 0;
  virtual void linear_forward(const float* x, const float* w, const float* b, int n, int in,
                              int out, float* y) = 0;
  virtual void linear_backward(const float* x, const float* w, const float* dy, int n, int in,
                               int out, float* dx, float* dw, float* db) = 0;
  virtual void softmax_cross_entropy(const float* logits, const std::int32_t* labels,
                                     const std::uint8_t* valid, int n, int classes, float scale,
                                     float* dlogits, float* losses, std::uint8_t* correct) = 0;
  virtual void sgd_momentum(float* w, const float* g, float* v, std::int64_t count, float lr,
                            float momentum, float weight_decay) = 0;
};

// A host device: host memory and the nn::cpu ops.
std::unique_ptr<DeviceOps> make_cpu_ops(int index);
// A GPU (CUDA ordinal): device memory, one stream, cuBLAS and the nn::cuda kernels. Throws Error
// in builds without CUDA.
std::unique_ptr<DeviceOps> make_cuda_ops(int ordinal);

// Typed device memory owned through a DeviceOps.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(DeviceOps& ops, std::int64_t count)
      : ops_(&ops),
        data_(static_cast<T*>(ops.allocate(sizeof(T) * static_cast<std::size_t>(count)))),
        count_(count) {}
  ~DeviceArray() {
    if (data_ != nullptr) ops_->release(data_);
  }
  DeviceArray(DeviceArray&& o) noexcept { swap(o); }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    swap(o);
    return *this;
  }
  T* get() const { return data_; }
  std::int64_t size() const { return count_; }
  std::size_t bytes() const { return sizeof(T) * static_cast<std::size_t>(count_); }

 private:
  void swap(DeviceArray& o) noexcept {
    std::swap(ops_, o.ops_);
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
  }
  DeviceOps* ops_ = nullptr;
  T* data_ = nullptr;
  std::int64_t count_ = 0;
};

}  // namespace stoke::train
