// GPU replicas: device memory, one non-blocking stream and one cuBLAS handle per GPU, and the
// nn::cuda kernels. Every call makes its GPU current first, so replicas on different GPUs can
// be driven from different threads.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "cuda_check.hpp"
#include "device_ops.hpp"
#include "stoke/error.hpp"
#include "stoke/kernels/nn_cuda.hpp"

#define STOKE_TRAIN_CUDA(expr) CUDA_CALL_AS(::stoke::Error, expr)

namespace stoke::train {
namespace {

namespace k = nn::cuda;

class CudaOps final : public DeviceOps {
 public:
  explicit CudaOps(int ordinal) : ordinal_(ordinal) {
    int count = 0;
    STOKE_TRAIN_CUDA(cudaGetDeviceCount(&count));
    if (ordinal < 0 || ordinal >= count)
      throw ConfigError("cuda:" + std::to_string(ordinal) + " does not exist; " +
                        std::to_string(count) + " GPU(s) are visible");
    current();
    STOKE_TRAIN_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    if (cublasCreate(&blas_) != CUBLAS_STATUS_SUCCESS) {
      cudaStreamDestroy(stream_);
      throw Error("cuda:" + std::to_string(ordinal) + ": cannot create a cuBLAS handle");
    }
  }
  ~CudaOps() override {
    cudaSetDevice(ordinal_);
    cudaStreamSynchronize(stream_);
    if (workspace_ != nullptr) cudaFree(workspace_);
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda:" + std::to_string(ordinal_); }
  int cuda_device() const override { return ordinal_; }
  CUstream_st* stream() const override { return stream_; }

  void* allocate(std::size_t bytes) override {
    current();
    void* p = nullptr;
    STOKE_TRAIN_CUDA(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
    const cudaError_t zeroed = cudaMemsetAsync(p, 0, bytes, stream_);
    const cudaError_t done = zeroed == cudaSuccess ? cudaStreamSynchronize(stream_) : zeroed;
    if (done != cudaSuccess) {
      cudaFree(p);
      STOKE_TRAIN_CUDA(done);
    }
    return p;
  }
  void release(void* p) noexcept override {
    cudaSetDevice(ordinal_);
    cudaStreamSynchronize(stream_);
    cudaFree(p);
  }
  // From pageable host memory the copy has taken the bytes when the call returns.
  void upload(void* dst, const void* src, std::size_t bytes) override {
    current();
    STOKE_TRAIN_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    current();
    STOKE_TRAIN_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    STOKE_TRAIN_CUDA(cudaStreamSynchronize(stream_));
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    current();
    STOKE_TRAIN_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void synchronize() override {
    current();
    STOKE_TRAIN_CUDA(cudaStreamSynchronize(stream_));
  }
  void use_input(const Batch& batch, int device) override {
    current();
    const DeviceChunk c = batch.chunk(device);
    if (c.cuda_device != ordinal_)
      throw ConfigError("replica " + name() +
                        " was handed a chunk on cuda:" + std::to_string(c.cuda_device));
    batch.wait_on(device, stream_);
    batch.record_stream(device, stream_);
  }

  void conv3x3_forward(const float* x, const float* w, float* y, const nn::ConvShape& s) override {
    current();
    k::conv3x3_forward(x, w, y, s, workspace(s), blas_, stream_);
  }
  void conv3x3_backward_data(const float* dy, const float* w, float* dx,
                             const nn::ConvShape& s) override {
    current();
    k::conv3x3_backward_data(dy, w, dx, s, workspace(s), blas_, stream_);
  }
  void conv3x3_backward_weights(const float* x, const float* dy, float* dw,
                                const nn::ConvShape& s) override {
    current();
    k::conv3x3_backward_weights(x, dy, dw, s, workspace(s), blas_, stream_);
  }
  void bn_sums(const float* x, const nn::BnShape& s, double* sums) override {
    current();
    k::bn_sums(x, s, sums, stream_);
  }
  void bn_finalize(const double* sums, double count, int c, float* mean, float* invstd) override {
    current();
    k::bn_finalize(sums, count, c, mean, invstd, stream_);
  }
  void bn_update_running(const double* sums, double count, int c, float momentum, float* rm,
                         float* rv) override {
    current();
    k::bn_update_running(sums, count, c, momentum, rm, rv, stream_);
  }
  void bn_relu_forward(const float* x, const float* mean, const float* invstd, const float* gamma,
                       const float* beta, const nn::BnShape& s, float* y) override {
    current();
    k::bn_relu_forward(x, mean, invstd, gamma, beta, s, y, stream_);
  }
  void bn_relu_inference(const float* x, const float* rm, const float* rv, const float* gamma,
                         const float* beta, const nn::BnShape& s, float* y) override {
    current();
    k::bn_relu_inference(x, rm, rv, gamma, beta, s, y, stream_);
  }
  void relu_backward(const float* dy, const float* y, const nn::BnShape& s, float* dz) override {
    current();
    k::relu_backward(dy, y, s, dz, stream_);
  }
  void bn_backward_sums(const float* dz, const float* x, const float* mean, const float* invstd,
                        const nn::BnShape& s, double* sums) override {
    current();
    k::bn_backward_sums(dz, x, mean, invstd, s, sums, stream_);
  }
  void bn_backward_input(const float* dz, const float* x, const float* mean, const float* invstd,
                         const float* gamma, const double* sums, double count, const nn::BnShape& s,
                         float* dx) override {
    current();
    k::bn_backward_input(dz, x, mean, invstd, gamma, sums, count, s, dx, stream_);
  }
  void bn_param_grads(const double* sums, int c, float* dgamma, float* dbeta) override {
    current();
    k::bn_param_grads(sums, c, dgamma, dbeta, stream_);
  }
  void maxpool2x2_forward(const float* x, const nn::BnShape& s, int h, int w, float* y,
                          std::uint8_t* argmax) override {
    current();
    k::maxpool2x2_forward(x, s, h, w, y, argmax, stream_);
  }
  void maxpool2x2_backward(const float* dy, const std::uint8_t* argmax, const nn::BnShape& s, int h,
                           int w, float* dx) override {
    current();
    k::maxpool2x2_backward(dy, argmax, s, h, w, dx, stream_);
  }
  void linear_forward(const float* x, const float* w, const float* b, int n, int in, int out,
                      float* y) override {
    current();
    k::linear_forward(x, w, b, n, in, out, y, blas_, stream_);
  }
  void linear_backward(const float* x, const float* w, const float* dy, int n, int in, int out,
                       float* dx, float* dw, float* db) override {
    current();
    k::linear_backward(x, w, dy, n, in, out, dx, dw, db, blas_, stream_);
  }
  void softmax_cross_entropy(const float* logits, const std::int32_t* labels,
                             const std::uint8_t* valid, int n, int classes, float scale,
                             float* dlogits, float* losses, std::uint8_t* correct) override {
    current();
    k::softmax_cross_entropy(logits, labels, valid, n, classes, scale, dlogits, losses, correct,
                             stream_);
  }
  void sgd_momentum(float* w, const float* g, float* v, std::int64_t count, float lr,
                    float momentum, float weight_decay) override {
    current();
    k::sgd_momentum(w, g, v, count, lr, momentum, weight_decay, stream_);
  }

 private:
  void current() const { STOKE_TRAIN_CUDA(cudaSetDevice(ordinal_)); }

  // The convolution workspace grows to the largest shape seen; the old one is freed only after
  // the work that used it is done.
  float* workspace(const nn::ConvShape& s) {
    const std::int64_t floats = k::conv3x3_workspace_floats(s);
    if (floats > workspace_floats_) {
      STOKE_TRAIN_CUDA(cudaStreamSynchronize(stream_));
      if (workspace_ != nullptr) STOKE_TRAIN_CUDA(cudaFree(workspace_));
      workspace_ = nullptr;
      void* p = nullptr;
      STOKE_TRAIN_CUDA(cudaMalloc(&p, sizeof(float) * static_cast<std::size_t>(floats)));
      workspace_ = static_cast<float*>(p);
      workspace_floats_ = floats;
    }
    return workspace_;
  }

  int ordinal_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  float* workspace_ = nullptr;
  std::int64_t workspace_floats_ = 0;
};

}  // namespace

std::unique_ptr<DeviceOps> make_cuda_ops(int ordinal) {
  return std::make_unique<CudaOps>(ordinal);
}

}  // namespace stoke::train
