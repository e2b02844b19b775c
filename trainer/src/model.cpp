#include "model.hpp"

#include <cmath>
#include <random>

#include "stoke/error.hpp"

namespace stoke::train {

void ModelShape::validate() const {
  auto positive = [](int v, const char* what) {
    if (v <= 0) throw ConfigError(std::string(what) + " must be positive, got " + std::to_string(v));
  };
  positive(channels, "input channels");
  positive(classes, "classes");
  positive(conv1, "conv1 channels");
  positive(conv2, "conv2 channels");
  if (height < 4 || width < 4 || height % 4 != 0 || width % 4 != 0)
    throw ConfigError("the model pools twice by 2, so the input height and width must be "
                      "multiples of 4; got " + std::to_string(height) + "x" +
                      std::to_string(width));
}

std::string ModelShape::describe() const {
  return std::to_string(channels) + "x" + std::to_string(height) + "x" + std::to_string(width) +
         " -> conv" + std::to_string(conv1) + " -> conv" + std::to_string(conv2) + " -> " +
         std::to_string(classes);
}

ParamLayout::ParamLayout(const ModelShape& s) {
  std::int64_t at = 0;
  auto take = [&](std::int64_t n) {
    const std::int64_t offset = at;
    at += n;
    return offset;
  };
  fc_in = s.conv2 * (s.height / 4) * (s.width / 4);
  conv1_w = take(std::int64_t{s.conv1} * s.channels * 9);
  bn1_gamma = take(s.conv1);
  bn1_beta = take(s.conv1);
  conv2_w = take(std::int64_t{s.conv2} * s.conv1 * 9);
  bn2_gamma = take(s.conv2);
  bn2_beta = take(s.conv2);
  fc_w = take(std::int64_t{s.classes} * fc_in);
  fc_b = take(s.classes);
  params = at;
  at = 0;
  bn1_mean = take(s.conv1);
  bn1_var = take(s.conv1);
  bn2_mean = take(s.conv2);
  bn2_var = take(s.conv2);
  buffers = at;
}

void initialize(const ModelShape& shape, std::uint64_t seed, std::vector<float>& params,
                std::vector<float>& buffers) {
  const ParamLayout l(shape);
  params.assign(static_cast<std::size_t>(l.params), 0.f);
  buffers.assign(static_cast<std::size_t>(l.buffers), 0.f);
  // mt19937_64 and a Box-Muller of our own: std::normal_distribution differs between libraries.
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };
  auto he = [&](std::int64_t offset, std::int64_t count, int fan_in) {
    const double sd = std::sqrt(2.0 / fan_in);
    for (std::int64_t i = 0; i < count; ++i) {
      const double z = std::sqrt(-2.0 * std::log(uniform())) * std::cos(2 * M_PI * uniform());
      params[offset + i] = static_cast<float>(z * sd);
    }
  };
  he(l.conv1_w, l.bn1_gamma - l.conv1_w, shape.channels * 9);
  he(l.conv2_w, l.bn2_gamma - l.conv2_w, shape.conv1 * 9);
  he(l.fc_w, l.fc_b - l.fc_w, l.fc_in);
  std::fill(params.begin() + l.bn1_gamma, params.begin() + l.bn1_beta, 1.f);
  std::fill(params.begin() + l.bn2_gamma, params.begin() + l.bn2_beta, 1.f);
  std::fill(buffers.begin() + l.bn1_var, buffers.begin() + l.bn2_mean, 1.f);
  std::fill(buffers.begin() + l.bn2_var, buffers.end(), 1.f);
}

}  // namespace stoke::train
