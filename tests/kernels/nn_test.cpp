// The trainer's CPU ops: forward passes against naive loops, every backward against finite
// differences of a scalar loss L = sum(output * R) for a fixed random R, and independence from
// the thread count.

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "stoke/kernels/nn.hpp"

namespace stoke::nn {
namespace {

std::vector<float> random_vector(std::size_t n, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double{a[i]} * b[i];
  return s;
}

// Checks analytic[i] against (L(x + h e_i) - L(x - h e_i)) / 2h for a spread of coordinates.
void expect_gradient(std::vector<float>& x, const std::vector<float>& analytic,
                     const std::function<double()>& loss, const char* what) {
  ASSERT_EQ(x.size(), analytic.size());
  const float h = 1e-2f;
  const std::size_t step = std::max<std::size_t>(1, x.size() / 23);
  for (std::size_t i = 0; i < x.size(); i += step) {
    const float saved = x[i];
    x[i] = saved + h;
    const double up = loss();
    x[i] = saved - h;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(analytic[i], numeric, 2e-3 + 2e-2 * std::abs(numeric)) << what << " index " << i;
  }
}

ConvShape small_conv() { return ConvShape{3, 2, 5, 4, 3}; }

float naive_conv(const std::vector<float>& x, const std::vector<float>& w, const ConvShape& s,
                 int i, int k, int y, int xx) {
  double sum = 0;
  for (int c = 0; c < s.c; ++c)
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx) {
        const int sy = y + ky - 1, sx = xx + kx - 1;
        if (sy < 0 || sy >= s.h || sx < 0 || sx >= s.w) continue;
        sum += double{x[((i * s.c + c) * s.h + sy) * s.w + sx]} * w[((k * s.c + c) * 3 + ky) * 3 + kx];
      }
  return static_cast<float>(sum);
}

TEST(NnCpu, ConvForwardMatchesADirectConvolution) {
  const ConvShape s = small_conv();
  auto x = random_vector(s.input_size(), 1);
  auto w = random_vector(s.weight_size(), 2);
  std::vector<float> y(s.output_size());
  cpu::conv3x3_forward(x.data(), w.data(), y.data(), s);
  for (int i = 0; i < s.n; ++i)
    for (int k = 0; k < s.k; ++k)
      for (int yy = 0; yy < s.h; ++yy)
        for (int xx = 0; xx < s.w; ++xx)
          EXPECT_NEAR(y[((i * s.k + k) * s.h + yy) * s.w + xx], naive_conv(x, w, s, i, k, yy, xx),
                      1e-5);
}

TEST(NnCpu, Col2imIsTheAdjointOfIm2col) {
  const int c = 2, h = 4, w = 5;
  auto image = random_vector(c * h * w, 3);
  auto col = random_vector(c * 9 * h * w, 4);
  std::vector<float> im_col(col.size()), col_im(image.size());
  cpu::im2col3x3(image.data(), c, h, w, im_col.data());
  cpu::col2im3x3(col.data(), c, h, w, col_im.data());
  EXPECT_NEAR(dot(im_col, col), dot(image, col_im), 1e-4);
}

TEST(NnCpu, ConvBackwardMatchesFiniteDifferences) {
  const ConvShape s = small_conv();
  auto x = random_vector(s.input_size(), 5);
  auto w = random_vector(s.weight_size(), 6);
  const auto r = random_vector(s.output_size(), 7);
  std::vector<float> y(s.output_size()), dx(s.input_size()), dw(s.weight_size());
  cpu::conv3x3_backward_data(r.data(), w.data(), dx.data(), s);
  cpu::conv3x3_backward_weights(x.data(), r.data(), dw.data(), s);
  auto loss = [&] {
    cpu::conv3x3_forward(x.data(), w.data(), y.data(), s);
    return dot(y, r);
  };
  expect_gradient(x, dx, loss, "dx");
  expect_gradient(w, dw, loss, "dweights");
}

TEST(NnCpu, ConvWeightGradientDoesNotDependOnTheThreadCount) {
  const ConvShape s{37, 4, 6, 6, 5};  // blocks of 8 images plus a partial one
  const auto x = random_vector(s.input_size(), 8);
  const auto dy = random_vector(s.output_size(), 9);
  std::vector<float> one(s.weight_size()), two(s.weight_size());
  tbb::task_arena(1).execute([&] { cpu::conv3x3_backward_weights(x.data(), dy.data(), one.data(), s); });
  tbb::task_arena(2).execute([&] { cpu::conv3x3_backward_weights(x.data(), dy.data(), two.data(), s); });
  EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float)));
}

struct BnFixture {
  BnShape s{4, 3, 6};
  std::vector<float> x = random_vector(s.size(), 10, -2.f, 3.f);
  std::vector<float> gamma = random_vector(3, 11, 0.5f, 1.5f);
  // beta keeps every output positive, so the ReLU is the identity and L is smooth.
  std::vector<float> beta = std::vector<float>(3, 20.f);
  std::vector<float> mean = std::vector<float>(3), invstd = std::vector<float>(3);
  std::vector<float> y = std::vector<float>(s.size());
  double sums[6];

  double forward(const std::vector<float>& r) {
    cpu::bn_sums(x.data(), s, sums);
    cpu::bn_finalize(sums, static_cast<double>(s.per_channel()), s.c, mean.data(), invstd.data());
    cpu::bn_relu_forward(x.data(), mean.data(), invstd.data(), gamma.data(), beta.data(), s,
                         y.data());
    return dot(y, r);
  }
};

TEST(NnCpu, BatchNormNormalizesEachChannel) {
  BnFixture f;
  f.beta.assign(3, 0.f);
  f.gamma.assign(3, 1.f);
  f.x = random_vector(f.s.size(), 12, 5.f, 9.f);
  std::vector<float> ones(f.s.size(), 1.f);
  f.forward(ones);
  for (int ch = 0; ch < f.s.c; ++ch) {
    double sum = 0, sumsq = 0, n = 0;
    for (int i = 0; i < f.s.n; ++i)
      for (int j = 0; j < f.s.hw; ++j) {
        const double v = f.x[(i * f.s.c + ch) * f.s.hw + j];
        sum += v;
        sumsq += v * v;
        ++n;
      }
    EXPECT_NEAR(f.mean[ch], sum / n, 1e-5);
    EXPECT_NEAR(1.0 / (f.invstd[ch] * f.invstd[ch]), sumsq / n - (sum / n) * (sum / n) + kBnEpsilon,
                1e-4);
  }
}

TEST(NnCpu, BatchNormBackwardMatchesFiniteDifferences) {
  BnFixture f;
  const auto r = random_vector(f.s.size(), 13);
  f.forward(r);
  std::vector<float> dz(f.s.size()), dx(f.s.size());
  cpu::relu_backward(r.data(), f.y.data(), f.s, dz.data());
  double bsums[6];
  cpu::bn_backward_sums(dz.data(), f.x.data(), f.mean.data(), f.invstd.data(), f.s, bsums);
  cpu::bn_backward_input(dz.data(), f.x.data(), f.mean.data(), f.invstd.data(), f.gamma.data(),
                         bsums, static_cast<double>(f.s.per_channel()), f.s, dx.data());
  std::vector<float> dgamma(3), dbeta(3);
  for (int ch = 0; ch < 3; ++ch) {
    dbeta[ch] = static_cast<float>(bsums[ch]);
    dgamma[ch] = static_cast<float>(bsums[3 + ch]);
  }
  auto loss = [&] { return f.forward(r); };
  expect_gradient(f.x, dx, loss, "dx");
  expect_gradient(f.gamma, dgamma, loss, "dgamma");
  expect_gradient(f.beta, dbeta, loss, "dbeta");
}

TEST(NnCpu, ReluBackwardPassesGradientOnlyWhereTheOutputIsPositive) {
  const BnShape s{1, 1, 4};
  const std::vector<float> y{0.f, 2.f, 0.f, 0.5f}, dy{1.f, 2.f, 3.f, 4.f};
  std::vector<float> dz(4);
  cpu::relu_backward(dy.data(), y.data(), s, dz.data());
  EXPECT_EQ(dz, (std::vector<float>{0.f, 2.f, 0.f, 4.f}));
}

TEST(NnCpu, RunningStatisticsUseTheUnbiasedVariance) {
  // Values 1, 2, 3, 4 in one channel: mean 2.5, unbiased variance 5/3.
  const double sums[2] = {10.0, 30.0};
  float rm = 1.f, rv = 1.f;
  cpu::bn_update_running(sums, 4.0, 1, 0.1f, &rm, &rv);
  EXPECT_FLOAT_EQ(rm, 0.9f * 1.f + 0.1f * 2.5f);
  EXPECT_FLOAT_EQ(rv, 0.9f * 1.f + 0.1f * (5.f / 3.f));
}

TEST(NnCpu, MaxPoolRoutesTheGradientToTheFirstLargestValue) {
  const BnShape s{1, 1, 16};
  const std::vector<float> x{1, 5, 2, 2,  //
                             5, 3, 2, 2,  //
                             0, 0, -1, -3,  //
                             0, 7, -2, -1};
  std::vector<float> y(4), dx(16);
  std::vector<std::uint8_t> argmax(4);
  cpu::maxpool2x2_forward(x.data(), s, 4, 4, y.data(), argmax.data());
  EXPECT_EQ(y, (std::vector<float>{5, 2, 7, -1}));
  EXPECT_EQ(argmax, (std::vector<std::uint8_t>{1, 0, 3, 0}));
  const std::vector<float> dy{10, 20, 30, 40};
  cpu::maxpool2x2_backward(dy.data(), argmax.data(), s, 4, 4, dx.data());
  EXPECT_EQ(dx, (std::vector<float>{0, 10, 20, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 30, 0, 0}));
}

TEST(NnCpu, LinearBackwardMatchesFiniteDifferences) {
  const int n = 5, in = 7, out = 4;
  auto x = random_vector(n * in, 14);
  auto w = random_vector(out * in, 15);
  auto b = random_vector(out, 16);
  const auto r = random_vector(n * out, 17);
  std::vector<float> y(n * out), dx(n * in), dw(out * in), db(out);
  cpu::linear_backward(x.data(), w.data(), r.data(), n, in, out, dx.data(), dw.data(), db.data());
  auto loss = [&] {
    cpu::linear_forward(x.data(), w.data(), b.data(), n, in, out, y.data());
    return dot(y, r);
  };
  expect_gradient(x, dx, loss, "dx");
  expect_gradient(w, dw, loss, "dweights");
  expect_gradient(b, db, loss, "dbias");
}

TEST(NnCpu, SoftmaxCrossEntropyMatchesFiniteDifferencesAndSkipsPadding) {
  const int n = 4, classes = 5;
  auto logits = random_vector(n * classes, 18, -3.f, 3.f);
  const std::vector<std::int32_t> labels{0, 3, 4, 1};
  const std::vector<std::uint8_t> valid{1, 1, 0, 1};
  std::vector<float> grad(n * classes), losses(n), scratch(n * classes);
  std::vector<std::uint8_t> correct(n);
  const float scale = 1.f / 3;
  cpu::softmax_cross_entropy(logits.data(), labels.data(), valid.data(), n, classes, scale,
                             grad.data(), losses.data(), correct.data());
  EXPECT_EQ(losses[2], 0.f);
  EXPECT_TRUE(std::all_of(grad.begin() + 2 * classes, grad.begin() + 3 * classes,
                          [](float g) { return g == 0.f; }));
  auto loss = [&] {
    cpu::softmax_cross_entropy(logits.data(), labels.data(), valid.data(), n, classes, scale,
                               scratch.data(), losses.data(), correct.data());
    double sum = 0;
    for (float l : losses) sum += l;
    return sum * scale;
  };
  expect_gradient(logits, grad, loss, "dlogits");
}

TEST(NnCpu, SoftmaxCountsTheFirstLargestLogitAsThePrediction) {
  const std::vector<float> logits{1, 3, 3, 0, 0, 9};
  const std::vector<std::int32_t> labels{1, 2};
  const std::vector<std::uint8_t> valid{1, 1};
  std::vector<float> grad(6), losses(2);
  std::vector<std::uint8_t> correct(2);
  cpu::softmax_cross_entropy(logits.data(), labels.data(), valid.data(), 2, 3, 1.f, grad.data(),
                             losses.data(), correct.data());
  EXPECT_EQ(correct, (std::vector<std::uint8_t>{1, 1}));
  EXPECT_NEAR(losses[1], -std::log(std::exp(9.0) / (2 + std::exp(9.0))), 1e-5);
}

TEST(NnCpu, SgdAppliesWeightDecayThenMomentum) {
  std::vector<float> w{1.f, -2.f}, g{0.5f, 0.25f}, v{0.1f, 0.f};
  cpu::sgd_momentum(w.data(), g.data(), v.data(), 2, 0.1f, 0.9f, 0.01f);
  const float v0 = std::fma(0.9f, 0.1f, std::fma(0.01f, 1.f, 0.5f));
  EXPECT_EQ(v[0], v0);
  EXPECT_EQ(w[0], std::fma(-0.1f, v0, 1.f));
  EXPECT_EQ(v[1], std::fma(0.9f, 0.f, std::fma(0.01f, -2.f, 0.25f)));
}

}  // namespace
}  // namespace stoke::nn
