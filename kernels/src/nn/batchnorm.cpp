// BatchNorm (+ the ReLU that follows it) over NCHW, parallel over channels or planes. Sums are
// taken per channel in a fixed order (images, then pixels) in double.

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "stoke/kernels/nn.hpp"

namespace stoke::nn::cpu {
namespace {

// Calls f(plane pointer offset, channel) for every (image, channel) plane, planes in parallel.
template <class F>
void for_each_plane(const BnShape& s, F&& f) {
  tbb::parallel_for(0, s.n * s.c, [&](int p) {
    f(std::int64_t{p} * s.hw, p % s.c);
  });
}

// Calls f(channel, plane offset) for each channel in parallel, images in order within one.
template <class F>
void for_each_channel(const BnShape& s, F&& f) {
  tbb::parallel_for(0, s.c, [&](int ch) {
    for (int i = 0; i < s.n; ++i) f(ch, (std::int64_t{i} * s.c + ch) * s.hw);
  });
}

}  // namespace

void bn_sums(const float* x, const BnShape& s, double* sums) {
  std::fill(sums, sums + 2 * s.c, 0.0);
  for_each_channel(s, [&](int ch, std::int64_t off) {
    double sum = 0, sumsq = 0;
    for (int j = 0; j < s.hw; ++j) {
      const double v = x[off + j];
      sum += v;
      sumsq += v * v;
    }
    sums[ch] += sum;
    sums[s.c + ch] += sumsq;
  });
}

void bn_finalize(const double* sums, double count, int c, float* mean, float* invstd) {
  for (int ch = 0; ch < c; ++ch) {
    const double m = sums[ch] / count;
    const double var = std::max(0.0, sums[c + ch] / count - m * m);
    mean[ch] = static_cast<float>(m);
    invstd[ch] = static_cast<float>(1.0 / std::sqrt(var + kBnEpsilon));
  }
}

void bn_update_running(const double* sums, double count, int c, float momentum,
                       float* running_mean, float* running_var) {
  for (int ch = 0; ch < c; ++ch) {
    const double m = sums[ch] / count;
    const double var = std::max(0.0, sums[c + ch] / count - m * m) * count / (count - 1);
    running_mean[ch] = static_cast<float>((1.0 - momentum) * running_mean[ch] + momentum * m);
    running_var[ch] = static_cast<float>((1.0 - momentum) * running_var[ch] + momentum * var);
  }
}

void bn_relu_forward(const float* x, const float* mean, const float* invstd, const float* gamma,
                     const float* beta, const BnShape& s, float* y) {
  for_each_plane(s, [&](std::int64_t off, int ch) {
    const float scale = invstd[ch] * gamma[ch];
    const float m = mean[ch];
    const float b = beta[ch];
    for (int j = 0; j < s.hw; ++j) y[off + j] = std::max(0.f, (x[off + j] - m) * scale + b);
  });
}

void bn_relu_inference(const float* x, const float* running_mean, const float* running_var,
                       const float* gamma, const float* beta, const BnShape& s, float* y) {
  for_each_plane(s, [&](std::int64_t off, int ch) {
    const float scale = gamma[ch] / std::sqrt(running_var[ch] + kBnEpsilon);
    const float m = running_mean[ch];
    const float b = beta[ch];
    for (int j = 0; j < s.hw; ++j) y[off + j] = std::max(0.f, (x[off + j] - m) * scale + b);
  });
}

void relu_backward(const float* dy, const float* y, const BnShape& s, float* dz) {
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, s.size(), 1 << 14), [&](const auto& r) {
    for (std::int64_t i = r.begin(); i != r.end(); ++i) dz[i] = y[i] > 0.f ? dy[i] : 0.f;
  });
}

void bn_backward_sums(const float* dz, const float* x, const float* mean, const float* invstd,
                      const BnShape& s, double* sums) {
  std::fill(sums, sums + 2 * s.c, 0.0);
  for_each_channel(s, [&](int ch, std::int64_t off) {
    double sum = 0, sum_xhat = 0;
    for (int j = 0; j < s.hw; ++j) {
      const double g = dz[off + j];
      sum += g;
      sum_xhat += g * ((x[off + j] - mean[ch]) * invstd[ch]);
    }
    sums[ch] += sum;
    sums[s.c + ch] += sum_xhat;
  });
}

void bn_backward_input(const float* dz, const float* x, const float* mean, const float* invstd,
                       const float* gamma, const double* sums, double count, const BnShape& s,
                       float* dx) {
  for_each_plane(s, [&](std::int64_t off, int ch) {
    const float k = gamma[ch] * invstd[ch];
    const float mean_dz = static_cast<float>(sums[ch] / count);
    const float mean_dz_xhat = static_cast<float>(sums[s.c + ch] / count);
    const float m = mean[ch];
    const float is = invstd[ch];
    for (int j = 0; j < s.hw; ++j) {
      const float xhat = (x[off + j] - m) * is;
      dx[off + j] = k * (dz[off + j] - mean_dz - xhat * mean_dz_xhat);
    }
  });
}

void bn_param_grads(const double* sums, int c, float* dgamma, float* dbeta) {
  for (int ch = 0; ch < c; ++ch) {
    dbeta[ch] = static_cast<float>(sums[ch]);
    dgamma[ch] = static_cast<float>(sums[c + ch]);
  }
}

}  // namespace stoke::nn::cpu
