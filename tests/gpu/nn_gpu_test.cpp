// The trainer's GPU ops (nn_cuda.hpp) against their CPU references (nn.hpp) on random inputs
// from fixed seeds, at a small odd shape and at the trainer's size. Copies and selections
// (im2col/col2im, ReLU backward, max pooling, BatchNorm parameter gradients, SGD) must match
// bit for bit; GEMMs and reductions add in another order, so they must match to a relative
// tolerance scaled by the output's magnitude. Skipped without a GPU (failed when
// STOKE_REQUIRE_GPU=1).
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../cuda_test_support.hpp"
#include "stoke/kernels/nn.hpp"
#include "stoke/kernels/nn_cuda.hpp"

#if !(defined(STOKE_WITH_CUDA) && STOKE_WITH_CUDA)
#error "nn_gpu_test.cpp is built only in CUDA builds (STOKE_WITH_CUDA=1)"
#endif

namespace stoke::nn {
namespace {

// A device array owned by the test (the ops never allocate), filled with 0xff bytes at first so
// that an element an op fails to write reads as NaN (or 255) and fails the comparison.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) : count_(count) {
    if (count_ == 0) return;
    if (cudaMalloc(&ptr_, bytes()) != cudaSuccess) throw std::runtime_error("cudaMalloc");
    if (cudaMemset(ptr_, 0xff, bytes()) != cudaSuccess) throw std::runtime_error("cudaMemset");
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    if (count_ != 0 &&
        cudaMemcpy(ptr_, host.data(), bytes(), cudaMemcpyHostToDevice) != cudaSuccess) {
      throw std::runtime_error("cudaMemcpy to device");
    }
  }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return static_cast<T*>(ptr_); }
  std::vector<T> read() const {
    std::vector<T> host(count_);
    if (count_ != 0 &&
        cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost) != cudaSuccess) {
      throw std::runtime_error("cudaMemcpy to host");
    }
    return host;
  }

 private:
  std::size_t bytes() const { return count_ * sizeof(T); }
  std::size_t count_;
  void* ptr_ = nullptr;
};

// A non-default stream (the ops must honour it) and a cuBLAS handle in its default math mode.
class Gpu {
 public:
  Gpu() {
    if (cudaStreamCreate(&stream_) != cudaSuccess) throw std::runtime_error("cudaStreamCreate");
    if (cublasCreate(&blas_) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate");
  }
  ~Gpu() {
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }
  // The ops only enqueue; results are read after this.
  void sync() const {
    if (cudaStreamSynchronize(stream_) != cudaSuccess) {
      throw std::runtime_error("cudaStreamSynchronize");
    }
  }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
};

std::vector<float> random_floats(std::size_t count, std::uint32_t seed, float lo = -1.0f,
                                 float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& f : v) f = dist(rng);
  return v;
}

// Small integers, so that max pooling and argmax see many ties.
std::vector<float> random_levels(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-2, 1);
  std::vector<float> v(count);
  for (float& f : v) f = static_cast<float>(dist(rng));
  return v;
}

template <class T>
std::string at(const std::vector<T>& got, const std::vector<T>& want, std::size_t i) {
  return "first mismatch at " + std::to_string(i) + ": got " + std::to_string(got[i]) +
         ", want " + std::to_string(want[i]);
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i])) {
      if (bad++ == 0) first = i;
    }
  }
  EXPECT_EQ(bad, 0u) << at(got, want, first);
}

void expect_equal(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want) {
  ASSERT_EQ(got.size(), want.size());
  const auto diff = std::mismatch(got.begin(), got.end(), want.begin());
  EXPECT_TRUE(diff.first == got.end())
      << at(got, want, static_cast<std::size_t>(diff.first - got.begin()));
}

// |got - want| <= rtol * (|want| + max |want|): relative, with the array's magnitude as the
// floor, since sums that cancel to near 0 carry the rounding of their large terms.
template <class T>
void expect_close(const std::vector<T>& got, const std::vector<T>& want, double rtol) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 0.0;
  for (const T w : want) scale = std::max(scale, std::fabs(static_cast<double>(w)));
  std::size_t bad = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double w = static_cast<double>(want[i]);
    const double err = std::fabs(static_cast<double>(got[i]) - w);
    if (!(err <= rtol * (std::fabs(w) + scale))) {  // also catches NaN
      if (bad++ == 0) first = i;
    }
  }
  EXPECT_EQ(bad, 0u) << at(got, want, first) << " (rtol " << rtol << ", scale " << scale << ")";
}

std::string describe(const ConvShape& s) {
  return "n=" + std::to_string(s.n) + " c=" + std::to_string(s.c) + " h=" + std::to_string(s.h) +
         " w=" + std::to_string(s.w) + " k=" + std::to_string(s.k);
}
std::string describe(const BnShape& s) {
  return "n=" + std::to_string(s.n) + " c=" + std::to_string(s.c) + " hw=" + std::to_string(s.hw);
}

// Small and odd, the trainer's size, and one large enough to need several workspace groups (the
// last one partial).
std::vector<ConvShape> conv_shapes() {
  return {ConvShape{5, 3, 8, 6, 4}, ConvShape{32, 32, 14, 14, 64}, ConvShape{27, 16, 64, 64, 16}};
}

std::vector<BnShape> bn_shapes() {
  return {BnShape{5, 3, 48}, BnShape{32, 32, 196}};
}

// Per-channel statistics from the CPU reference, as both sides' inputs.
struct BnStats {
  std::vector<float> mean, invstd;
};
BnStats cpu_stats(const std::vector<float>& x, const BnShape& s) {
  std::vector<double> sums(2 * static_cast<std::size_t>(s.c));
  cpu::bn_sums(x.data(), s, sums.data());
  BnStats st{std::vector<float>(s.c), std::vector<float>(s.c)};
  cpu::bn_finalize(sums.data(), static_cast<double>(s.per_channel()), s.c, st.mean.data(),
                   st.invstd.data());
  return st;
}

constexpr double kGemmTolerance = 1e-4;
constexpr double kDoubleSumTolerance = 1e-6;  // covers float or double products per term
constexpr double kElementwiseTolerance = 1e-5;

// ---------------------------------------------------------------- shape helpers

TEST(NnGpu, ConvWorkspaceHoldsWholeSmallBatchesAndBoundsLargeOnes) {
  const ConvShape small{5, 3, 8, 6, 4};
  EXPECT_EQ(cuda::conv3x3_workspace_floats(small), 5 * (small.col_size() + 4 * 8 * 6));
  const ConvShape big{27, 16, 64, 64, 16};
  const std::int64_t per_image = big.col_size() + 16 * 64 * 64;
  EXPECT_LE(cuda::conv3x3_workspace_floats(big), cuda::kConvWorkspaceMaxFloats);
  EXPECT_LT(cuda::conv3x3_workspace_floats(big), big.n * per_image);
  EXPECT_EQ(cuda::conv3x3_workspace_floats(big) % per_image, 0);
  const ConvShape huge{2, 512, 256, 256, 512};  // one image is beyond the bound: one at a time
  EXPECT_EQ(cuda::conv3x3_workspace_floats(huge), huge.col_size() + 512 * 256 * 256);
  EXPECT_EQ(cuda::conv3x3_workspace_floats(ConvShape{0, 3, 8, 6, 4}), 0);
}

// ---------------------------------------------------------------- im2col / col2im

struct ImageShape {
  int c, h, w;
};
std::vector<ImageShape> image_shapes() {
  return {ImageShape{3, 8, 6}, ImageShape{32, 14, 14}, ImageShape{2, 1, 5}};
}

TEST(NnGpu, Im2colMatchesCpuReferenceBitForBit) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const ImageShape& s : image_shapes()) {
    SCOPED_TRACE("c=" + std::to_string(s.c) + " h=" + std::to_string(s.h));
    const auto image = random_floats(static_cast<std::size_t>(s.c) * s.h * s.w, 1);
    std::vector<float> want(static_cast<std::size_t>(s.c) * 9 * s.h * s.w);
    cpu::im2col3x3(image.data(), s.c, s.h, s.w, want.data());
    DeviceArray<float> d_image(image), d_col(want.size());
    cuda::im2col3x3(d_image.get(), s.c, s.h, s.w, d_col.get(), gpu.stream());
    gpu.sync();
    expect_same_bits(d_col.read(), want);
  }
}

TEST(NnGpu, Col2imMatchesCpuReferenceBitForBit) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const ImageShape& s : image_shapes()) {
    SCOPED_TRACE("c=" + std::to_string(s.c) + " h=" + std::to_string(s.h));
    const auto col = random_floats(static_cast<std::size_t>(s.c) * 9 * s.h * s.w, 2);
    std::vector<float> want(static_cast<std::size_t>(s.c) * s.h * s.w);
    cpu::col2im3x3(col.data(), s.c, s.h, s.w, want.data());
    DeviceArray<float> d_col(col), d_image(want.size());
    cuda::col2im3x3(d_col.get(), s.c, s.h, s.w, d_image.get(), gpu.stream());
    gpu.sync();
    expect_same_bits(d_image.read(), want);
  }
}

// ---------------------------------------------------------------- convolution

TEST(NnGpu, ConvForwardMatchesCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const ConvShape& s : conv_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto x = random_floats(static_cast<std::size_t>(s.input_size()), 3);
    const auto weights = random_floats(static_cast<std::size_t>(s.weight_size()), 4);
    std::vector<float> want(static_cast<std::size_t>(s.output_size()));
    cpu::conv3x3_forward(x.data(), weights.data(), want.data(), s);
    DeviceArray<float> d_x(x), d_weights(weights), d_y(want.size());
    DeviceArray<float> d_workspace(static_cast<std::size_t>(cuda::conv3x3_workspace_floats(s)));
    cuda::conv3x3_forward(d_x.get(), d_weights.get(), d_y.get(), s, d_workspace.get(), gpu.blas(),
                          gpu.stream());
    gpu.sync();
    expect_close(d_y.read(), want, kGemmTolerance);
  }
}

TEST(NnGpu, ConvBackwardDataMatchesCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const ConvShape& s : conv_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto dy = random_floats(static_cast<std::size_t>(s.output_size()), 5);
    const auto weights = random_floats(static_cast<std::size_t>(s.weight_size()), 6);
    std::vector<float> want(static_cast<std::size_t>(s.input_size()));
    cpu::conv3x3_backward_data(dy.data(), weights.data(), want.data(), s);
    DeviceArray<float> d_dy(dy), d_weights(weights), d_dx(want.size());
    DeviceArray<float> d_workspace(static_cast<std::size_t>(cuda::conv3x3_workspace_floats(s)));
    cuda::conv3x3_backward_data(d_dy.get(), d_weights.get(), d_dx.get(), s, d_workspace.get(),
                                gpu.blas(), gpu.stream());
    gpu.sync();
    expect_close(d_dx.read(), want, kGemmTolerance);
  }
}

TEST(NnGpu, ConvBackwardWeightsMatchesCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const ConvShape& s : conv_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto x = random_floats(static_cast<std::size_t>(s.input_size()), 7);
    const auto dy = random_floats(static_cast<std::size_t>(s.output_size()), 8);
    std::vector<float> want(static_cast<std::size_t>(s.weight_size()));
    cpu::conv3x3_backward_weights(x.data(), dy.data(), want.data(), s);
    DeviceArray<float> d_x(x), d_dy(dy), d_dweights(want.size());
    DeviceArray<float> d_workspace(static_cast<std::size_t>(cuda::conv3x3_workspace_floats(s)));
    cuda::conv3x3_backward_weights(d_x.get(), d_dy.get(), d_dweights.get(), s, d_workspace.get(),
                                   gpu.blas(), gpu.stream());
    gpu.sync();
    expect_close(d_dweights.read(), want, kGemmTolerance);
  }
}

// ---------------------------------------------------------------- BatchNorm statistics

TEST(NnGpu, BnSumsMatchCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const BnShape& s : bn_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto x = random_floats(static_cast<std::size_t>(s.size()), 9, -1.0f, 3.0f);
    std::vector<double> want(2 * static_cast<std::size_t>(s.c));
    cpu::bn_sums(x.data(), s, want.data());
    DeviceArray<float> d_x(x);
    DeviceArray<double> d_sums(want.size());
    cuda::bn_sums(d_x.get(), s, d_sums.get(), gpu.stream());
    gpu.sync();
    expect_close(d_sums.read(), want, kDoubleSumTolerance);
  }
}

TEST(NnGpu, BnFinalizeMatchesCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const BnShape& s : bn_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto x = random_floats(static_cast<std::size_t>(s.size()), 10, -1.0f, 3.0f);
    std::vector<double> sums(2 * static_cast<std::size_t>(s.c));
    cpu::bn_sums(x.data(), s, sums.data());
    const auto count = static_cast<double>(s.per_channel());
    std::vector<float> mean(s.c), invstd(s.c);
    cpu::bn_finalize(sums.data(), count, s.c, mean.data(), invstd.data());
    DeviceArray<double> d_sums(sums);
    DeviceArray<float> d_mean(mean.size()), d_invstd(invstd.size());
    cuda::bn_finalize(d_sums.get(), count, s.c, d_mean.get(), d_invstd.get(), gpu.stream());
    gpu.sync();
    expect_close(d_mean.read(), mean, kElementwiseTolerance);
    expect_close(d_invstd.read(), invstd, kElementwiseTolerance);
  }
}

TEST(NnGpu, BnUpdateRunningMatchesCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const BnShape& s : bn_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto x = random_floats(static_cast<std::size_t>(s.size()), 11, -1.0f, 3.0f);
    std::vector<double> sums(2 * static_cast<std::size_t>(s.c));
    cpu::bn_sums(x.data(), s, sums.data());
    const auto count = static_cast<double>(s.per_channel());
    auto running_mean = random_floats(static_cast<std::size_t>(s.c), 12);
    auto running_var = random_floats(static_cast<std::size_t>(s.c), 13, 0.5f, 2.0f);
    DeviceArray<double> d_sums(sums);
    DeviceArray<float> d_mean(running_mean), d_var(running_var);
    cpu::bn_update_running(sums.data(), count, s.c, 0.1f, running_mean.data(),
                           running_var.data());
    cuda::bn_update_running(d_sums.get(), count, s.c, 0.1f, d_mean.get(), d_var.get(),
                            gpu.stream());
    gpu.sync();
    expect_close(d_mean.read(), running_mean, kElementwiseTolerance);
    expect_close(d_var.read(), running_var, kElementwiseTolerance);
  }
}

// ---------------------------------------------------------------- BatchNorm + ReLU

TEST(NnGpu, BnReluForwardMatchesCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const BnShape& s : bn_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto x = random_floats(static_cast<std::size_t>(s.size()), 14, -1.0f, 3.0f);
    const BnStats st = cpu_stats(x, s);
    const auto gamma = random_floats(static_cast<std::size_t>(s.c), 15, 0.5f, 1.5f);
    const auto beta = random_floats(static_cast<std::size_t>(s.c), 16, -0.5f, 0.5f);
    std::vector<float> want(x.size());
    cpu::bn_relu_forward(x.data(), st.mean.data(), st.invstd.data(), gamma.data(), beta.data(), s,
                         want.data());
    DeviceArray<float> d_x(x), d_mean(st.mean), d_invstd(st.invstd), d_gamma(gamma),
        d_beta(beta), d_y(want.size());
    cuda::bn_relu_forward(d_x.get(), d_mean.get(), d_invstd.get(), d_gamma.get(), d_beta.get(), s,
                          d_y.get(), gpu.stream());
    gpu.sync();
    expect_close(d_y.read(), want, kElementwiseTolerance);
  }
}

TEST(NnGpu, BnReluInferenceMatchesCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const BnShape& s : bn_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto x = random_floats(static_cast<std::size_t>(s.size()), 17, -1.0f, 3.0f);
    const auto running_mean = random_floats(static_cast<std::size_t>(s.c), 18, 0.0f, 2.0f);
    const auto running_var = random_floats(static_cast<std::size_t>(s.c), 19, 0.5f, 2.0f);
    const auto gamma = random_floats(static_cast<std::size_t>(s.c), 20, 0.5f, 1.5f);
    const auto beta = random_floats(static_cast<std::size_t>(s.c), 21, -0.5f, 0.5f);
    std::vector<float> want(x.size());
    cpu::bn_relu_inference(x.data(), running_mean.data(), running_var.data(), gamma.data(),
                           beta.data(), s, want.data());
    DeviceArray<float> d_x(x), d_mean(running_mean), d_var(running_var), d_gamma(gamma),
        d_beta(beta), d_y(want.size());
    cuda::bn_relu_inference(d_x.get(), d_mean.get(), d_var.get(), d_gamma.get(), d_beta.get(), s,
                            d_y.get(), gpu.stream());
    gpu.sync();
    expect_close(d_y.read(), want, kElementwiseTolerance);
  }
}

TEST(NnGpu, ReluBackwardMatchesCpuReferenceBitForBit) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const BnShape& s : bn_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto dy = random_floats(static_cast<std::size_t>(s.size()), 22);
    auto y = random_floats(static_cast<std::size_t>(s.size()), 23);
    for (float& v : y) v = std::max(v, 0.0f);  // a ReLU output: about half exactly 0
    std::vector<float> want(y.size());
    cpu::relu_backward(dy.data(), y.data(), s, want.data());
    DeviceArray<float> d_dy(dy), d_y(y), d_dz(want.size());
    cuda::relu_backward(d_dy.get(), d_y.get(), s, d_dz.get(), gpu.stream());
    gpu.sync();
    expect_same_bits(d_dz.read(), want);
  }
}

TEST(NnGpu, BnBackwardSumsMatchCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const BnShape& s : bn_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto x = random_floats(static_cast<std::size_t>(s.size()), 24, -1.0f, 3.0f);
    const auto dz = random_floats(static_cast<std::size_t>(s.size()), 25);
    const BnStats st = cpu_stats(x, s);
    std::vector<double> want(2 * static_cast<std::size_t>(s.c));
    cpu::bn_backward_sums(dz.data(), x.data(), st.mean.data(), st.invstd.data(), s, want.data());
    DeviceArray<float> d_dz(dz), d_x(x), d_mean(st.mean), d_invstd(st.invstd);
    DeviceArray<double> d_sums(want.size());
    cuda::bn_backward_sums(d_dz.get(), d_x.get(), d_mean.get(), d_invstd.get(), s, d_sums.get(),
                           gpu.stream());
    gpu.sync();
    expect_close(d_sums.read(), want, kDoubleSumTolerance);
  }
}

TEST(NnGpu, BnBackwardInputMatchesCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const BnShape& s : bn_shapes()) {
    SCOPED_TRACE(describe(s));
    const auto x = random_floats(static_cast<std::size_t>(s.size()), 26, -1.0f, 3.0f);
    const auto dz = random_floats(static_cast<std::size_t>(s.size()), 27);
    const auto gamma = random_floats(static_cast<std::size_t>(s.c), 28, 0.5f, 1.5f);
    const BnStats st = cpu_stats(x, s);
    std::vector<double> sums(2 * static_cast<std::size_t>(s.c));
    cpu::bn_backward_sums(dz.data(), x.data(), st.mean.data(), st.invstd.data(), s, sums.data());
    const auto count = static_cast<double>(s.per_channel());
    std::vector<float> want(x.size());
    cpu::bn_backward_input(dz.data(), x.data(), st.mean.data(), st.invstd.data(), gamma.data(),
                           sums.data(), count, s, want.data());
    DeviceArray<float> d_dz(dz), d_x(x), d_mean(st.mean), d_invstd(st.invstd), d_gamma(gamma),
        d_dx(want.size());
    DeviceArray<double> d_sums(sums);
    cuda::bn_backward_input(d_dz.get(), d_x.get(), d_mean.get(), d_invstd.get(), d_gamma.get(),
                            d_sums.get(), count, s, d_dx.get(), gpu.stream());
    gpu.sync();
    expect_close(d_dx.read(), want, kElementwiseTolerance);
  }
}

TEST(NnGpu, BnParamGradsMatchCpuReferenceBitForBit) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const BnShape& s : bn_shapes()) {
    SCOPED_TRACE(describe(s));
    std::mt19937 rng(44);
    std::uniform_real_distribution<double> dist(-100.0, 100.0);
    std::vector<double> sums(2 * static_cast<std::size_t>(s.c));
    for (double& v : sums) v = dist(rng);
    std::vector<float> want_dgamma(s.c), want_dbeta(s.c);
    cpu::bn_param_grads(sums.data(), s.c, want_dgamma.data(), want_dbeta.data());
    DeviceArray<double> d_sums(sums);
    DeviceArray<float> d_dgamma(want_dgamma.size()), d_dbeta(want_dbeta.size());
    cuda::bn_param_grads(d_sums.get(), s.c, d_dgamma.get(), d_dbeta.get(), gpu.stream());
    gpu.sync();
    expect_same_bits(d_dgamma.read(), want_dgamma);
    expect_same_bits(d_dbeta.read(), want_dbeta);
  }
}

// ---------------------------------------------------------------- max pooling

struct PoolShape {
  BnShape planes;  // hw = h * w
  int h, w;
};
std::vector<PoolShape> pool_shapes() {
  return {PoolShape{BnShape{5, 3, 48}, 8, 6}, PoolShape{BnShape{32, 32, 196}, 14, 14}};
}

TEST(NnGpu, MaxpoolForwardMatchesCpuReferenceBitForBit) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const PoolShape& p : pool_shapes()) {
    SCOPED_TRACE(describe(p.planes));
    const auto x = random_levels(static_cast<std::size_t>(p.planes.size()), 29);  // many ties
    const std::size_t out = x.size() / 4;
    std::vector<float> want_y(out);
    std::vector<std::uint8_t> want_argmax(out);
    cpu::maxpool2x2_forward(x.data(), p.planes, p.h, p.w, want_y.data(), want_argmax.data());
    DeviceArray<float> d_x(x), d_y(out);
    DeviceArray<std::uint8_t> d_argmax(out);
    cuda::maxpool2x2_forward(d_x.get(), p.planes, p.h, p.w, d_y.get(), d_argmax.get(),
                             gpu.stream());
    gpu.sync();
    expect_same_bits(d_y.read(), want_y);
    expect_equal(d_argmax.read(), want_argmax);
  }
}

TEST(NnGpu, MaxpoolBackwardMatchesCpuReferenceBitForBit) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const PoolShape& p : pool_shapes()) {
    SCOPED_TRACE(describe(p.planes));
    const auto x = random_levels(static_cast<std::size_t>(p.planes.size()), 30);
    const std::size_t out = x.size() / 4;
    std::vector<float> y(out);
    std::vector<std::uint8_t> argmax(out);
    cpu::maxpool2x2_forward(x.data(), p.planes, p.h, p.w, y.data(), argmax.data());
    const auto dy = random_floats(out, 31);
    std::vector<float> want(x.size());
    cpu::maxpool2x2_backward(dy.data(), argmax.data(), p.planes, p.h, p.w, want.data());
    DeviceArray<float> d_dy(dy), d_dx(want.size());
    DeviceArray<std::uint8_t> d_argmax(argmax);
    cuda::maxpool2x2_backward(d_dy.get(), d_argmax.get(), p.planes, p.h, p.w, d_dx.get(),
                              gpu.stream());
    gpu.sync();
    expect_same_bits(d_dx.read(), want);
  }
}

// ---------------------------------------------------------------- linear layer

struct LinearShape {
  int n, in, out;
};
std::vector<LinearShape> linear_shapes() {
  return {LinearShape{5, 7, 3}, LinearShape{32, 64 * 7 * 7, 10}};
}

TEST(NnGpu, LinearForwardMatchesCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const LinearShape& s : linear_shapes()) {
    SCOPED_TRACE("n=" + std::to_string(s.n) + " in=" + std::to_string(s.in));
    const auto x = random_floats(static_cast<std::size_t>(s.n) * s.in, 32);
    const auto weights = random_floats(static_cast<std::size_t>(s.out) * s.in, 33);
    const auto bias = random_floats(static_cast<std::size_t>(s.out), 34);
    std::vector<float> want(static_cast<std::size_t>(s.n) * s.out);
    cpu::linear_forward(x.data(), weights.data(), bias.data(), s.n, s.in, s.out, want.data());
    DeviceArray<float> d_x(x), d_weights(weights), d_bias(bias), d_y(want.size());
    cuda::linear_forward(d_x.get(), d_weights.get(), d_bias.get(), s.n, s.in, s.out, d_y.get(),
                         gpu.blas(), gpu.stream());
    gpu.sync();
    expect_close(d_y.read(), want, kGemmTolerance);
  }
}

TEST(NnGpu, LinearBackwardMatchesCpuReferenceWithAndWithoutDx) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  for (const LinearShape& s : linear_shapes()) {
    SCOPED_TRACE("n=" + std::to_string(s.n) + " in=" + std::to_string(s.in));
    const auto x = random_floats(static_cast<std::size_t>(s.n) * s.in, 35);
    const auto weights = random_floats(static_cast<std::size_t>(s.out) * s.in, 36);
    const auto dy = random_floats(static_cast<std::size_t>(s.n) * s.out, 37);
    std::vector<float> want_dx(x.size()), want_dweights(weights.size()), want_dbias(s.out);
    cpu::linear_backward(x.data(), weights.data(), dy.data(), s.n, s.in, s.out, want_dx.data(),
                         want_dweights.data(), want_dbias.data());
    DeviceArray<float> d_x(x), d_weights(weights), d_dy(dy), d_dx(x.size()),
        d_dweights(weights.size()), d_dbias(want_dbias.size());
    cuda::linear_backward(d_x.get(), d_weights.get(), d_dy.get(), s.n, s.in, s.out, d_dx.get(),
                          d_dweights.get(), d_dbias.get(), gpu.blas(), gpu.stream());
    gpu.sync();
    expect_close(d_dx.read(), want_dx, kGemmTolerance);
    expect_close(d_dweights.read(), want_dweights, kGemmTolerance);
    expect_close(d_dbias.read(), want_dbias, kGemmTolerance);

    DeviceArray<float> d_dweights2(weights.size()), d_dbias2(want_dbias.size());
    cuda::linear_backward(d_x.get(), d_weights.get(), d_dy.get(), s.n, s.in, s.out, nullptr,
                          d_dweights2.get(), d_dbias2.get(), gpu.blas(), gpu.stream());
    gpu.sync();
    expect_close(d_dweights2.read(), want_dweights, kGemmTolerance);
    expect_close(d_dbias2.read(), want_dbias, kGemmTolerance);
  }
}

// ---------------------------------------------------------------- loss and optimizer

TEST(NnGpu, SoftmaxCrossEntropyMatchesCpuReference) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  // 10 classes (fewer than a warp's lanes) and 1000 (several per lane).
  for (const auto& [n, classes] : {std::pair{5, 10}, std::pair{32, 10}, std::pair{70, 1000}}) {
    SCOPED_TRACE("n=" + std::to_string(n) + " classes=" + std::to_string(classes));
    auto logits = random_floats(static_cast<std::size_t>(n) * classes, 38, -4.0f, 4.0f);
    const auto levels = random_levels(logits.size(), 39);
    std::mt19937 rng(40);
    std::vector<std::int32_t> labels(n);
    std::vector<std::uint8_t> valid(n);
    int valid_count = 0;
    for (int i = 0; i < n; ++i) {
      labels[i] = static_cast<std::int32_t>(rng() % static_cast<unsigned>(classes));
      valid[i] = i % 4 != 3;  // every fourth sample is padding
      valid_count += valid[i];
      if (i % 3 == 0) {  // rows of small integers: ties for the first-largest rule
        std::copy_n(levels.begin() + std::int64_t{i} * classes, classes,
                    logits.begin() + std::int64_t{i} * classes);
      }
    }
    const float scale = 1.0f / static_cast<float>(valid_count);
    std::vector<float> want_dlogits(logits.size()), want_losses(n);
    std::vector<std::uint8_t> want_correct(n);
    cpu::softmax_cross_entropy(logits.data(), labels.data(), valid.data(), n, classes, scale,
                               want_dlogits.data(), want_losses.data(), want_correct.data());
    DeviceArray<float> d_logits(logits), d_dlogits(logits.size()), d_losses(want_losses.size());
    DeviceArray<std::int32_t> d_labels(labels);
    DeviceArray<std::uint8_t> d_valid(valid), d_correct(want_correct.size());
    cuda::softmax_cross_entropy(d_logits.get(), d_labels.get(), d_valid.get(), n, classes, scale,
                                d_dlogits.get(), d_losses.get(), d_correct.get(), gpu.stream());
    gpu.sync();
    expect_close(d_dlogits.read(), want_dlogits, kElementwiseTolerance);
    expect_close(d_losses.read(), want_losses, kElementwiseTolerance);
    expect_equal(d_correct.read(), want_correct);
  }
}

TEST(NnGpu, SgdMomentumMatchesCpuReferenceBitForBit) {
  STOKE_SKIP_WITHOUT_GPU();
  Gpu gpu;
  const std::int64_t count = 100003;  // not a multiple of any block size
  auto weights = random_floats(count, 41);
  auto velocity = random_floats(count, 42, -0.1f, 0.1f);
  DeviceArray<float> d_weights(weights), d_velocity(velocity);
  for (std::uint32_t step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const auto grads = random_floats(count, 43 + step);
    DeviceArray<float> d_grads(grads);
    cpu::sgd_momentum(weights.data(), grads.data(), velocity.data(), count, 0.05f, 0.9f, 5e-4f);
    cuda::sgd_momentum(d_weights.get(), d_grads.get(), d_velocity.get(), count, 0.05f, 0.9f,
                       5e-4f, gpu.stream());
    gpu.sync();
    expect_same_bits(d_weights.read(), weights);
    expect_same_bits(d_velocity.read(), velocity);
  }
}

}  // namespace
}  // namespace stoke::nn
