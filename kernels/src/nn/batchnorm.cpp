// BatchNorm (+ the ReLU that follows it) over NCHW, parallel over channels or planes. Sums are
// taken per channel in a fixed order (images, then pixels) in double.

#include <tbb/blocked_range.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "parallel_for.hpp"
#include "stoke/kernels/nn.hpp"

namespace stoke::nn::cpu {
namespace {

// Calls f(plane pointer offset, channel) for every (image, channel) plane, planes in parallel.
template <class F>
void for_each_plane(const BnShape& s, F&& f) {
  stoke::parallel_for(0, s.n * s.c, [&](int p) { f(std::int64_t{p} * s.hw, p % s.c); });
}

// Calls f(channel, plane offset) for each channel in parallel, images in order within one.
template <class F>
void for_each_channel(const BnShape& s, F&& f) {
  stoke::parallel_for(0, s.c, [&](int ch) {
    for (int i = 0; i < s.n; ++i) f(ch, (std::int64_t{i} * s.c + ch) * s.hw);
  });
}

// Writes sums[2c]: per channel, the sums of term(ch, i).first and .second over its values i,
// images in order and pixels in order within each.
template <class Term>
void channel_sums(const BnShape& s, double* sums, Term&& term) {
  std::fill(sums, sums + 2 * s.c, 0.0);
  for_each_channel(s, [&](int ch, std::int64_t off) {
    double first = 0, second = 0;
    for (int j = 0; j < s.hw; ++j) {
      const auto [a, b] = term(ch, off + j);
      first += a;
      second += b;
    }
    sums[ch] += first;
    sums[s.c + ch] += second;
  });
}

// Channel ch's mean and biased variance from sums of `count` values (clamped at 0 against
// rounding).
std::pair<double, double> moments(const double* sums, double count, int c, int ch) {
  const double m = sums[ch] / count;
  return {m, std::max(0.0, sums[c + ch] / count - m * m)};
}

// y = max(0, (x - mean) * scale + beta) per channel; scale(ch) and mean(ch) give the channel's.
template <class Scale, class Mean>
void affine_relu(const float* x, const float* beta, const BnShape& s, float* y, Scale&& scale,
                 Mean&& mean) {
  for_each_plane(s, [&](std::int64_t off, int ch) {
    const float k = scale(ch);
    const float m = mean(ch);
    const float b = beta[ch];
    for (int j = 0; j < s.hw; ++j) y[off + j] = std::max(0.f, (x[off + j] - m) * k + b);
  });
}

}  // namespace

void bn_sums(const float* x, const BnShape& s, double* sums) {
  channel_sums(s, sums, [&](int, std::int64_t i) {
    const double v = x[i];
    return std::pair{v, v * v};
  });
}

void bn_finalize(const double* sums, double count, int c, float* mean, float* invstd) {
  for (int ch = 0; ch < c; ++ch) {
    const auto [m, var] = moments(sums, count, c, ch);
    mean[ch] = static_cast<float>(m);
    invstd[ch] = static_cast<float>(1.0 / std::sqrt(var + kBnEpsilon));
  }
}

void bn_update_running(const double* sums, double count, int c, float momentum, float* running_mean,
                       float* running_var) {
  for (int ch = 0; ch < c; ++ch) {
    const auto [m, biased] = moments(sums, count, c, ch);
    const double var = biased * count / (count - 1);
    running_mean[ch] = static_cast<float>((1.0 - momentum) * running_mean[ch] + momentum * m);
    running_var[ch] = static_cast<float>((1.0 - momentum) * running_var[ch] + momentum * var);
  }
}

void bn_relu_forward(const float* x, const float* mean, const float* invstd, const float* gamma,
                     const float* beta, const BnShape& s, float* y) {
  affine_relu(
      x, beta, s, y, [&](int ch) { return invstd[ch] * gamma[ch]; },
      [&](int ch) { return mean[ch]; });
}

void bn_relu_inference(const float* x, const float* running_mean, const float* running_var,
                       const float* gamma, const float* beta, const BnShape& s, float* y) {
  affine_relu(
      x, beta, s, y, [&](int ch) { return gamma[ch] / std::sqrt(running_var[ch] + kBnEpsilon); },
      [&](int ch) { return running_mean[ch]; });
}

void relu_backward(const float* dy, const float* y, const BnShape& s, float* dz) {
  stoke::parallel_for(tbb::blocked_range<std::int64_t>(0, s.size(), 1 << 14), [&](const auto& r) {
    for (std::int64_t i = r.begin(); i != r.end(); ++i) dz[i] = y[i] > 0.f ? dy[i] : 0.f;
  });
}

void bn_backward_sums(const float* dz, const float* x, const float* mean, const float* invstd,
                      const BnShape& s, double* sums) {
  channel_sums(s, sums, [&](int ch, std::int64_t i) {
    const double g = dz[i];
    return std::pair{g, g * ((x[i] - mean[ch]) * invstd[ch])};
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
