// Max pooling, the fully connected layer, softmax cross-entropy and SGD.

#include <tbb/blocked_range.h>

#include <algorithm>
#include <cmath>

#include "nn/blas.hpp"
#include "parallel_for.hpp"
#include "stoke/kernels/nn.hpp"

namespace stoke::nn::cpu {

void maxpool2x2_forward(const float* x, const BnShape& s, int h, int w, float* y,
                        std::uint8_t* argmax) {
  const int oh = h / 2, ow = w / 2;
  stoke::parallel_for(0, s.n * s.c, [&](int p) {
    const float* in = x + std::int64_t{p} * h * w;
    const std::int64_t out = std::int64_t{p} * oh * ow;
    for (int oy = 0; oy < oh; ++oy) {
      for (int ox = 0; ox < ow; ++ox) {
        // Branch-free (selects, not jumps): which input wins is data, and unpredictable.
        const float* win = in + (2 * oy) * w + 2 * ox;
        float best = win[0];
        int at = 0;
        const float v1 = win[1], v2 = win[w], v3 = win[w + 1];
        at = v1 > best ? 1 : at;
        best = v1 > best ? v1 : best;
        at = v2 > best ? 2 : at;
        best = v2 > best ? v2 : best;
        at = v3 > best ? 3 : at;
        best = v3 > best ? v3 : best;
        y[out + oy * ow + ox] = best;
        argmax[out + oy * ow + ox] = static_cast<std::uint8_t>(at);
      }
    }
  });
}

void maxpool2x2_backward(const float* dy, const std::uint8_t* argmax, const BnShape& s, int h,
                         int w, float* dx) {
  const int oh = h / 2, ow = w / 2;
  stoke::parallel_for(0, s.n * s.c, [&](int p) {
    float* out = dx + std::int64_t{p} * h * w;
    std::fill(out, out + std::int64_t{h} * w, 0.f);
    const std::int64_t in = std::int64_t{p} * oh * ow;
    for (int oy = 0; oy < oh; ++oy) {
      for (int ox = 0; ox < ow; ++ox) {
        const int k = argmax[in + oy * ow + ox];
        out[(2 * oy + k / 2) * w + 2 * ox + k % 2] = dy[in + oy * ow + ox];
      }
    }
  });
}

void linear_forward(const float* x, const float* weights, const float* bias, int n, int in, int out,
                    float* y) {
  detail::single_threaded_blas();
  for (int i = 0; i < n; ++i) std::copy(bias, bias + out, y + std::int64_t{i} * out);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.f, x, in, weights, in, 1.f, y,
              out);
}

void linear_backward(const float* x, const float* weights, const float* dy, int n, int in, int out,
                     float* dx, float* dweights, float* dbias) {
  detail::single_threaded_blas();
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.f, dy, out, x, in, 0.f,
              dweights, in);
  for (int o = 0; o < out; ++o) {
    float sum = 0.f;
    for (int i = 0; i < n; ++i) sum += dy[std::int64_t{i} * out + o];
    dbias[o] = sum;
  }
  if (dx != nullptr)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.f, dy, out, weights, in,
                0.f, dx, in);
}

void softmax_cross_entropy(const float* logits, const std::int32_t* labels,
                           const std::uint8_t* valid, int n, int classes, float scale,
                           float* dlogits, float* losses, std::uint8_t* correct) {
  for (int i = 0; i < n; ++i) {
    const float* row = logits + std::int64_t{i} * classes;
    float* grad = dlogits + std::int64_t{i} * classes;
    if (valid[i] == 0) {
      std::fill(grad, grad + classes, 0.f);
      losses[i] = 0.f;
      correct[i] = 0;
      continue;
    }
    int best = 0;
    for (int k = 1; k < classes; ++k)
      if (row[k] > row[best]) best = k;
    const float top = row[best];
    float total = 0.f;
    for (int k = 0; k < classes; ++k) total += std::exp(row[k] - top);
    const float log_total = std::log(total);
    for (int k = 0; k < classes; ++k) {
      const float p = std::exp(row[k] - top) / total;
      grad[k] = (p - (k == labels[i] ? 1.f : 0.f)) * scale;
    }
    losses[i] = log_total - (row[labels[i]] - top);
    correct[i] = best == labels[i] ? 1 : 0;
  }
}

void sgd_momentum(float* weights, const float* grads, float* velocity, std::int64_t count, float lr,
                  float momentum, float weight_decay) {
  stoke::parallel_for(tbb::blocked_range<std::int64_t>(0, count, 1 << 14), [&](const auto& r) {
    for (std::int64_t i = r.begin(); i != r.end(); ++i) {
      const float g = std::fma(weight_decay, weights[i], grads[i]);
      velocity[i] = std::fma(momentum, velocity[i], g);
      weights[i] = std::fma(-lr, velocity[i], weights[i]);
    }
  });
}

}  // namespace stoke::nn::cpu
