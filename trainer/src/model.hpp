#pragma once
// The bundled CNN and where its numbers live. Thread-safety: value types.
//
//   input c x h x w
//   conv3x3(c -> conv1) -> BatchNorm -> ReLU -> maxpool 2x2
//   conv3x3(conv1 -> conv2) -> BatchNorm -> ReLU -> maxpool 2x2
//   linear(conv2 * h/4 * w/4 -> classes), softmax cross-entropy
//
// All trainable parameters sit in one flat float array (so one all-reduce moves every gradient,
// and a checkpoint is three arrays), the BatchNorm running statistics in another.

#include <cstdint>
#include <string>
#include <vector>

namespace stoke::train {

struct ModelShape {
  int channels = 1;
  int height = 28;
  int width = 28;
  int classes = 10;
  int conv1 = 32;
  int conv2 = 64;

  // Throws ConfigError when the shape cannot be built (h and w must be multiples of 4).
  void validate() const;
  std::string describe() const;  // "1x28x28 -> conv32 -> conv64 -> 10"
  bool operator==(const ModelShape&) const = default;
};

// Offsets (in floats) of each tensor in the flat arrays.
struct ParamLayout {
  explicit ParamLayout(const ModelShape& shape);

  std::int64_t conv1_w, bn1_gamma, bn1_beta;
  std::int64_t conv2_w, bn2_gamma, bn2_beta;
  std::int64_t fc_w, fc_b;
  std::int64_t params;  // total trainable floats
  int fc_in;            // conv2 * h/4 * w/4

  // Running statistics: bn1 mean, bn1 var, bn2 mean, bn2 var.
  std::int64_t bn1_mean, bn1_var, bn2_mean, bn2_var;
  std::int64_t buffers;  // total
};

// He-normal convolution and linear weights from `seed`, BatchNorm gamma 1 and beta 0, biases 0;
// running means 0 and variances 1. The same seed gives the same model on every machine.
void initialize(const ModelShape& shape, std::uint64_t seed, std::vector<float>& params,
                std::vector<float>& buffers);

}  // namespace stoke::train
