// Host devices: plain host memory and the nn::cpu reference ops.

#include <cstdlib>
#include <cstring>
#include <new>

#include "device_ops.hpp"

namespace stoke::train {
namespace {

class CpuOps final : public DeviceOps {
 public:
  explicit CpuOps(int index) : index_(index) {}
  std::string name() const override { return "cpu:" + std::to_string(index_); }

  void* allocate(std::size_t bytes) override {
    void* p = std::calloc(1, bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void release(void* p) noexcept override { std::free(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void synchronize() override {}
  void use_input(const Batch&, int) override {}

  void conv3x3_forward(const float* x, const float* w, float* y, const nn::ConvShape& s) override {
    nn::cpu::conv3x3_forward(x, w, y, s);
  }
  void conv3x3_backward_data(const float* dy, const float* w, float* dx,
                             const nn::ConvShape& s) override {
    nn::cpu::conv3x3_backward_data(dy, w, dx, s);
  }
  void conv3x3_backward_weights(const float* x, const float* dy, float* dw,
                                const nn::ConvShape& s) override {
    nn::cpu::conv3x3_backward_weights(x, dy, dw, s);
  }
  void bn_sums(const float* x, const nn::BnShape& s, double* sums) override {
    nn::cpu::bn_sums(x, s, sums);
  }
  void bn_finalize(const double* sums, double count, int c, float* mean, float* invstd) override {
    nn::cpu::bn_finalize(sums, count, c, mean, invstd);
  }
  void bn_update_running(const double* sums, double count, int c, float momentum, float* rm,
                         float* rv) override {
    nn::cpu::bn_update_running(sums, count, c, momentum, rm, rv);
  }
  void bn_relu_forward(const float* x, const float* mean, const float* invstd, const float* gamma,
                       const float* beta, const nn::BnShape& s, float* y) override {
    nn::cpu::bn_relu_forward(x, mean, invstd, gamma, beta, s, y);
  }
  void bn_relu_inference(const float* x, const float* rm, const float* rv, const float* gamma,
                         const float* beta, const nn::BnShape& s, float* y) override {
    nn::cpu::bn_relu_inference(x, rm, rv, gamma, beta, s, y);
  }
  void relu_backward(const float* dy, const float* y, const nn::BnShape& s, float* dz) override {
    nn::cpu::relu_backward(dy, y, s, dz);
  }
  void bn_backward_sums(const float* dz, const float* x, const float* mean, const float* invstd,
                        const nn::BnShape& s, double* sums) override {
    nn::cpu::bn_backward_sums(dz, x, mean, invstd, s, sums);
  }
  void bn_backward_input(const float* dz, const float* x, const float* mean, const float* invstd,
                         const float* gamma, const double* sums, double count,
                         const nn::BnShape& s, float* dx) override {
    nn::cpu::bn_backward_input(dz, x, mean, invstd, gamma, sums, count, s, dx);
  }
  void bn_param_grads(const double* sums, int c, float* dgamma, float* dbeta) override {
    nn::cpu::bn_param_grads(sums, c, dgamma, dbeta);
  }
  void maxpool2x2_forward(const float* x, const nn::BnShape& s, int h, int w, float* y,
                          std::uint8_t* argmax) override {
    nn::cpu::maxpool2x2_forward(x, s, h, w, y, argmax);
  }
  void maxpool2x2_backward(const float* dy, const std::uint8_t* argmax, const nn::BnShape& s,
                           int h, int w, float* dx) override {
    nn::cpu::maxpool2x2_backward(dy, argmax, s, h, w, dx);
  }
  void linear_forward(const float* x, const float* w, const float* b, int n, int in, int out,
                      float* y) override {
    nn::cpu::linear_forward(x, w, b, n, in, out, y);
  }
  void linear_backward(const float* x, const float* w, const float* dy, int n, int in, int out,
                       float* dx, float* dw, float* db) override {
    nn::cpu::linear_backward(x, w, dy, n, in, out, dx, dw, db);
  }
  void softmax_cross_entropy(const float* logits, const std::int32_t* labels,
                             const std::uint8_t* valid, int n, int classes, float scale,
                             float* dlogits, float* losses, std::uint8_t* correct) override {
    nn::cpu::softmax_cross_entropy(logits, labels, valid, n, classes, scale, dlogits, losses,
                                   correct);
  }
  void sgd_momentum(float* w, const float* g, float* v, std::int64_t count, float lr,
                    float momentum, float weight_decay) override {
    nn::cpu::sgd_momentum(w, g, v, count, lr, momentum, weight_decay);
  }

 private:
  int index_;
};

}  // namespace

std::unique_ptr<DeviceOps> make_cpu_ops(int index) { return std::make_unique<CpuOps>(index); }

}  // namespace stoke::train
