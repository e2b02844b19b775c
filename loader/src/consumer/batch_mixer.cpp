#include "consumer/batch_mixer.hpp"

#include <algorithm>
#include <cmath>

#include "plan/sample_rng.hpp"

// The weights and soft labels are rounded product by product, as torch's mul and add are:
// nothing is fused (the exact-float rule, cmake/StokeExactFloat.cmake).

namespace stoke::detail {

namespace {

using kernels::MixOp;
using kernels::MixSample;

// A Beta(alpha, alpha) draw: the first of a two-way Dirichlet.
double beta(SampleRng& rng, double alpha) {
  double pair[2];
  rng.dirichlet(alpha, pair);
  return pair[0];
}

using Box = std::array<int, 4>;  // top, left, bottom, right

double area(const Box& b) {
  return double(b[2] - b[0]) * double(b[3] - b[1]);
}

// torchvision's CutMix.make_params: a centre uniform over the image (torch.randint(W), then
// torch.randint(H)), torchvision_cutmix_box around it.
Box torchvision_box(SampleRng& rng, double lam, int height, int width) {
  const auto rx = static_cast<int>(rng.below(static_cast<std::uint64_t>(width)));
  const auto ry = static_cast<int>(rng.below(static_cast<std::uint64_t>(height)));
  return torchvision_cutmix_box(lam, ry, rx, height, width);
}

// timm's rand_bbox around a centre drawn uniformly over the image (numpy's randint: y, then x).
Box timm_box(SampleRng& rng, double lam, bool float32, int height, int width) {
  const auto cy = static_cast<int>(rng.below(static_cast<std::uint64_t>(height)));
  const auto cx = static_cast<int>(rng.below(static_cast<std::uint64_t>(width)));
  return timm_cutmix_box(lam, float32, cy, cx, height, width);
}

MixSample unmixed(int self) {
  MixSample m;
  m.partner = self;
  return m;
}

// The one-of-two choice of both rules: CutMix with switch_prob when both are on.
bool choose_cutmix(const MixConfig& c, SampleRng& rng) {
  if (c.mixup_alpha > 0 && c.cutmix_alpha > 0) return rng.uniform() < c.switch_prob;
  return c.mixup_alpha <= 0;
}

// torchvision: RandomChoice([MixUp, CutMix]) once per batch, partner i - 1, a float32 lambda.
void draw_torchvision(const MixConfig& c, SampleRng& rng, std::span<MixSample> out) {
  const int n = static_cast<int>(out.size());
  const bool cut = choose_cutmix(c, rng);
  const bool mix = rng.uniform() < c.prob;
  double lam = static_cast<float>(beta(rng, cut ? c.cutmix_alpha : c.mixup_alpha));
  Box box{};
  if (cut) {
    box = torchvision_box(rng, lam, c.height, c.width);
    lam = 1.0 - area(box) / (double(c.width) * double(c.height));
  }
  for (int i = 0; i < n; ++i)
    out[i] = mix ? mix_entry((i + n - 1) % n, cut ? MixOp::kCutMix : MixOp::kMixUp, lam, box)
                 : unmixed(i);
}

// timm's lambda for one draw: (lambda, whether CutMix), lambda 1 when the draw does not mix.
// `float32`: the per-sample draws of pair and elem modes, kept as numpy float32.
std::pair<double, bool> timm_lambda(const MixConfig& c, SampleRng& rng, bool float32) {
  const bool cut = choose_cutmix(c, rng);
  double lam = beta(rng, cut ? c.cutmix_alpha : c.mixup_alpha);
  if (float32) lam = static_cast<float>(lam);
  return {rng.uniform() < c.prob ? lam : 1.0, cut};
}

// timm's mixing of sample i (and, in pair mode, of its mirror j) for one draw.
void draw_timm_one(const MixConfig& c, SampleRng& rng, bool float32, int i, int j,
                   std::span<MixSample> out, bool pair) {
  auto [lam, cut] = timm_lambda(c, rng, float32);
  if (lam == 1.0) {
    out[i] = unmixed(i);
    if (pair) out[j] = unmixed(j);
    return;
  }
  Box box{};
  if (cut) {
    box = timm_box(rng, lam, float32, c.height, c.width);
    lam = 1.0 - area(box) / (double(c.height) * double(c.width));
    if (float32) lam = static_cast<float>(lam);  // stored back into the float32 lambdas
  }
  const MixOp op = cut ? MixOp::kCutMix : MixOp::kMixUp;
  out[i] = mix_entry(j, op, lam, box);
  if (pair) out[j] = mix_entry(i, op, lam, box);
}

void draw_timm(const MixConfig& c, SampleRng& rng, std::span<MixSample> out) {
  const int n = static_cast<int>(out.size());
  switch (c.mode) {
    case MixMode::kBatch: {
      draw_timm_one(c, rng, false, 0, n - 1, out, false);
      const MixSample first = out[0];
      for (int i = 0; i < n; ++i) {
        out[i] = first;
        out[i].partner = first.op == MixOp::kNone ? i : n - 1 - i;
      }
      return;
    }
    case MixMode::kPair:
      for (int i = 0; i < n / 2; ++i) draw_timm_one(c, rng, true, i, n - 1 - i, out, true);
      return;
    case MixMode::kElem:
      for (int i = 0; i < n; ++i) draw_timm_one(c, rng, true, i, n - 1 - i, out, false);
      return;
  }
}

}  // namespace

std::array<int, 4> torchvision_cutmix_box(double lam, int ry, int rx, int height, int width) {
  const double r = 0.5 * std::sqrt(1.0 - lam);
  const auto half_w = static_cast<int>(r * width);
  const auto half_h = static_cast<int>(r * height);
  return {std::max(ry - half_h, 0), std::max(rx - half_w, 0), std::min(ry + half_h, height),
          std::min(rx + half_w, width)};
}

std::array<int, 4> timm_cutmix_box(double lam, bool float32, int cy, int cx, int height,
                                   int width) {
  int cut_h = 0, cut_w = 0;
  if (float32) {  // numpy float32 arithmetic: 1 - lam, its square root and the products
    const float ratio = std::sqrt(1.0f - static_cast<float>(lam));
    cut_h = static_cast<int>(static_cast<float>(height) * ratio);
    cut_w = static_cast<int>(static_cast<float>(width) * ratio);
  } else {
    const double ratio = std::sqrt(1.0 - lam);
    cut_h = static_cast<int>(height * ratio);
    cut_w = static_cast<int>(width * ratio);
  }
  return {std::clamp(cy - cut_h / 2, 0, height), std::clamp(cx - cut_w / 2, 0, width),
          std::clamp(cy + (cut_h + 1) / 2, 0, height), std::clamp(cx + (cut_w + 1) / 2, 0, width)};
}

MixSample mix_entry(int partner, MixOp op, double lam, std::array<int, 4> box) {
  MixSample m;
  m.partner = partner;
  m.op = op;
  m.self_weight = m.label_self = static_cast<float>(lam);
  m.partner_weight = m.label_partner = static_cast<float>(1.0 - lam);
  m.top = box[0];
  m.left = box[1];
  m.bottom = box[2];
  m.right = box[3];
  m.lambda = lam;
  return m;
}

MixConfig mix_config(const Options& o, int height, int width) {
  MixConfig c;
  c.mixup_alpha = o.mixup_alpha;
  c.cutmix_alpha = o.cutmix_alpha;
  c.prob = o.mix_prob;
  c.switch_prob = o.mix_switch_prob;
  c.mode = o.mix_mode;
  c.rule = o.mix_rule;
  c.num_classes = o.num_classes;
  c.label_smoothing = o.label_smoothing;
  c.seed = o.seed;
  c.height = height;
  c.width = width;
  return c;
}

void draw_chunk_mixing(const MixConfig& c, std::int64_t epoch, std::int64_t key,
                       std::span<const std::uint8_t> valid, std::span<MixSample> out) {
  SampleRng rng(c.seed, kMixStream, epoch, key);
  if (c.rule == MixRule::kTorchvision)
    draw_torchvision(c, rng, out);
  else
    draw_timm(c, rng, out);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto partner = static_cast<std::size_t>(out[i].partner);
    if (valid[i] == 0 || valid[partner] == 0) out[i] = unmixed(static_cast<int>(i));
  }
}

void write_soft_labels(const MixConfig& c, std::span<const std::int32_t> labels,
                       std::span<const MixSample> mix, std::span<float> out) {
  const auto classes = static_cast<std::size_t>(c.num_classes);
  // timm's mixup_target: off = s / C, on = 1 - s + off, each a float32 of torch.full's.
  const double off_d = c.label_smoothing / c.num_classes;
  const auto off = static_cast<float>(off_d);
  const auto on = static_cast<float>(1.0 - c.label_smoothing + off_d);
  const auto value = [&](std::int32_t label, std::size_t k) {
    return static_cast<std::size_t>(label) == k ? on : off;
  };
  for (std::size_t i = 0; i < labels.size(); ++i) {
    float* row = out.data() + i * classes;
    const MixSample m = mix.empty() ? unmixed(static_cast<int>(i)) : mix[i];
    const std::int32_t self = labels[i];
    const std::int32_t partner = labels[static_cast<std::size_t>(m.partner)];
    for (std::size_t k = 0; k < classes; ++k) {
      const float a = value(self, k) * m.label_self;
      const float b = value(partner, k) * m.label_partner;
      row[k] = a + b;
    }
  }
}

BatchMixer::BatchMixer(const MixConfig& c, ArenaView view, int devices)
    : config_(c), view_(view), devices_(devices) {}

void BatchMixer::write(int slot, std::int64_t epoch, std::int64_t first_position) const {
  const ArenaHeader& h = view_.header();
  const auto s = static_cast<std::uint32_t>(slot);
  const auto per = static_cast<std::size_t>(h.batch) / static_cast<std::size_t>(devices_);
  const auto classes = static_cast<std::size_t>(h.soft_classes);
  for (std::size_t d = 0; d < static_cast<std::size_t>(devices_); ++d) {
    const std::size_t first = d * per;
    std::span<MixSample> mix;
    if (h.mixing != 0) {
      mix = {view_.mix_samples(s) + first, per};
      draw_chunk_mixing(config_, epoch, first_position + static_cast<std::int64_t>(first),
                        {view_.valid(s) + first, per}, mix);
    }
    write_soft_labels(config_, {view_.labels(s) + first, per}, mix,
                      {view_.soft_labels(s) + first * classes, per * classes});
  }
}

}  // namespace stoke::detail
