#include "trainer.hpp"

#include <cmath>
#include <cstring>
#include <numbers>
#include <string>

#include "parallel_for.hpp"
#include "stoke/error.hpp"

namespace stoke::train {

float Hyper::lr_at(std::int64_t step) const {
  const double total = static_cast<double>(std::max<std::int64_t>(1, total_steps));
  const double t = std::min(1.0, static_cast<double>(step) / total);
  double lr_t = lr;
  if (schedule == Schedule::kCosine) {
    lr_t = lr * 0.5 * (1 + std::cos(std::numbers::pi * t));
  } else {
    lr_t = t < 0.5 ? lr : (t < 0.75 ? lr * 0.1 : lr * 0.01);
  }
  if (step < warmup_steps) {
    const double ramp = (static_cast<double>(step) + 1) / warmup_steps;
    lr_t = std::min(lr_t, lr * (0.1 + 0.9 * ramp));
  }
  return static_cast<float>(lr_t);
}

// A conv -> BatchNorm -> ReLU -> pool block's memory on one replica.
struct Block {
  DeviceArray<float> a, r, p;    // conv output, BN+ReLU output, pooled
  DeviceArray<float> dp, dr, da;  // gradients of p, of r (then of the BN output), of a
  DeviceArray<std::uint8_t> argmax;
  DeviceArray<float> mean, invstd;
  DeviceArray<double> sums, global, bsums, bglobal;
};

class Trainer::Replica {
 public:
  Replica(std::unique_ptr<DeviceOps> device, const ModelShape& s, const ParamLayout& l, int chunk)
      : ops(std::move(device)),
        params(*ops, l.params),
        grads(*ops, l.params),
        velocity(*ops, l.params),
        buffers(*ops, l.buffers),
        logits(*ops, std::int64_t{chunk} * s.classes),
        dlogits(*ops, std::int64_t{chunk} * s.classes),
        losses(*ops, chunk),
        labels(*ops, chunk),
        valid(*ops, chunk),
        correct(*ops, chunk) {
    const int channels[2] = {s.conv1, s.conv2};
    for (int b = 0; b < 2; ++b) {
      const std::int64_t plane = std::int64_t{s.height >> b} * (s.width >> b);
      const std::int64_t full = std::int64_t{chunk} * channels[b] * plane;
      Block& k = block[b];
      k.a = DeviceArray<float>(*ops, full);
      k.r = DeviceArray<float>(*ops, full);
      k.dr = DeviceArray<float>(*ops, full);
      k.da = DeviceArray<float>(*ops, full);
      k.p = DeviceArray<float>(*ops, full / 4);
      k.dp = DeviceArray<float>(*ops, full / 4);
      k.argmax = DeviceArray<std::uint8_t>(*ops, full / 4);
      k.mean = DeviceArray<float>(*ops, channels[b]);
      k.invstd = DeviceArray<float>(*ops, channels[b]);
      for (auto* d : {&k.sums, &k.global, &k.bsums, &k.bglobal})
        *d = DeviceArray<double>(*ops, 2 * channels[b]);
    }
  }

  std::unique_ptr<DeviceOps> ops;
  DeviceArray<float> params, grads, velocity, buffers;
  DeviceArray<float> logits, dlogits, losses;
  DeviceArray<std::int32_t> labels;
  DeviceArray<std::uint8_t> valid, correct;
  Block block[2];
  const float* x = nullptr;
  int n = 0;
};

Trainer::Trainer(const ModelShape& shape, const Hyper& hyper,
                 std::vector<std::unique_ptr<DeviceOps>> devices, Reducer& reducer, int max_chunk)
    : shape_((shape.validate(), shape)),
      layout_(shape_),
      hyper_(hyper),
      reducer_(reducer),
      max_chunk_(max_chunk) {
  if (devices.empty()) throw ConfigError("the trainer needs at least one device");
  if (max_chunk <= 0)
    throw ConfigError("each replica must be sized for at least one sample, got " +
                      std::to_string(max_chunk));
  for (auto& d : devices)
    replicas_.push_back(std::make_unique<Replica>(std::move(d), shape_, layout_, max_chunk));
}

Trainer::~Trainer() = default;

int Trainer::replicas() const { return static_cast<int>(replicas_.size()); }
std::int64_t Trainer::step() const { return step_; }
const ModelShape& Trainer::shape() const { return shape_; }

template <class F>
void Trainer::each(F&& f) {
  stoke::parallel_for(0, replicas(), [&](int r) { f(*replicas_[r]); });
}

void Trainer::initialize(std::uint64_t seed) {
  ModelState s;
  train::initialize(shape_, seed, s.params, s.buffers);
  s.velocity.assign(s.params.size(), 0.f);
  load(s);
}

void Trainer::load(const ModelState& s) {
  if (static_cast<std::int64_t>(s.params.size()) != layout_.params ||
      static_cast<std::int64_t>(s.buffers.size()) != layout_.buffers ||
      s.velocity.size() != s.params.size())
    throw ConfigError("the saved model does not fit " + shape_.describe() + ": it has " +
                      std::to_string(s.params.size()) + " parameters, this model " +
                      std::to_string(layout_.params));
  each([&](Replica& r) {
    r.ops->upload(r.params.get(), s.params.data(), r.params.bytes());
    r.ops->upload(r.buffers.get(), s.buffers.data(), r.buffers.bytes());
    r.ops->upload(r.velocity.get(), s.velocity.data(), r.velocity.bytes());
    r.ops->synchronize();
  });
  step_ = s.step;
}

ModelState Trainer::download(int replica) const {
  const Replica& r = *replicas_[replica];
  ModelState s;
  s.params.resize(static_cast<std::size_t>(layout_.params));
  s.velocity.resize(s.params.size());
  s.buffers.resize(static_cast<std::size_t>(layout_.buffers));
  r.ops->download(s.params.data(), r.params.get(), r.params.bytes());
  r.ops->download(s.velocity.data(), r.velocity.get(), r.velocity.bytes());
  r.ops->download(s.buffers.data(), r.buffers.get(), r.buffers.bytes());
  s.step = step_;
  return s;
}

ModelState Trainer::state() const { return download(0); }

bool Trainer::replicas_identical() const {
  const ModelState first = state();
  for (int i = 1; i < replicas(); ++i) {
    const ModelState s = download(i);
    auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    if (!same(s.params, first.params) || !same(s.velocity, first.velocity) ||
        !same(s.buffers, first.buffers))
      return false;
  }
  return true;
}

std::vector<ReplicaInput> Trainer::inputs_of(const Batch& batch) const {
  if (batch.device_count() != replicas())
    throw ConfigError("the batch has " + std::to_string(batch.device_count()) +
                      " device chunks for " + std::to_string(replicas()) + " replicas");
  std::vector<ReplicaInput> inputs;
  for (int g = 0; g < replicas(); ++g) {
    const DeviceChunk c = batch.chunk(g);
    const std::array<std::int64_t, 4> want{c.samples, shape_.channels, shape_.height,
                                           shape_.width};
    if (c.dtype != DType::kFloat32 || c.layout != Layout::kNCHW || c.shape != want)
      throw ConfigError("device " + std::to_string(g) + " does not receive float32 NCHW images "
                        "of " + shape_.describe() + "; set Options::dtype = kFloat32, layout = "
                        "kNCHW and the model's input size");
    replicas_[g]->ops->use_input(batch, g);
    inputs.push_back({static_cast<const float*>(c.data), c.labels, c.valid, c.samples});
  }
  return inputs;
}

void Trainer::check_inputs(const std::vector<ReplicaInput>& inputs) const {
  if (static_cast<int>(inputs.size()) != replicas())
    throw ConfigError(std::to_string(inputs.size()) + " inputs for " +
                      std::to_string(replicas()) + " replicas");
  for (int g = 0; g < replicas(); ++g) {
    const ReplicaInput& in = inputs[g];
    if (in.samples <= 0)
      throw Error("replica " + std::to_string(g) + " (" + replicas_[g]->ops->name() +
                  ") was handed " + std::to_string(in.samples) +
                  " samples: BatchNorm over an empty chunk has no statistics (its mean is "
                  "0/0 = NaN), so every device needs at least one sample of every batch");
    if (in.samples > max_chunk_)
      throw ConfigError("replica " + std::to_string(g) + " was handed " +
                        std::to_string(in.samples) + " samples; it was sized for " +
                        std::to_string(max_chunk_));
    if (in.labels.size() != static_cast<std::size_t>(in.samples) ||
        in.valid.size() != static_cast<std::size_t>(in.samples))
      throw ConfigError("replica " + std::to_string(g) + ": labels and valid flags must have " +
                        std::to_string(in.samples) + " entries");
    for (int i = 0; i < in.samples; ++i)
      if (in.valid[i] != 0 && (in.labels[i] < 0 || in.labels[i] >= shape_.classes))
        throw DataError("label " + std::to_string(in.labels[i]) + " is outside the model's " +
                        std::to_string(shape_.classes) + " classes");
  }
}

namespace {

nn::ConvShape conv_shape(const ModelShape& s, int b, int n) {
  return b == 0 ? nn::ConvShape{n, s.channels, s.height, s.width, s.conv1}
                : nn::ConvShape{n, s.conv1, s.height / 2, s.width / 2, s.conv2};
}

nn::BnShape bn_shape(const ModelShape& s, int b, int n) {
  return {n, b == 0 ? s.conv1 : s.conv2, (s.height >> b) * (s.width >> b)};
}

// Offsets of block b's tensors in the flat arrays.
struct BlockOffsets {
  std::int64_t w, gamma, beta, mean, var;
};
BlockOffsets offsets(const ParamLayout& l, int b) {
  return b == 0 ? BlockOffsets{l.conv1_w, l.bn1_gamma, l.bn1_beta, l.bn1_mean, l.bn1_var}
                : BlockOffsets{l.conv2_w, l.bn2_gamma, l.bn2_beta, l.bn2_mean, l.bn2_var};
}

}  // namespace

void Trainer::set_inputs(const std::vector<ReplicaInput>& inputs) {
  for (int g = 0; g < replicas(); ++g) {
    Replica& r = *replicas_[g];
    r.x = inputs[g].x;
    r.n = inputs[g].samples;
    r.ops->upload(r.labels.get(), inputs[g].labels.data(), sizeof(std::int32_t) * r.n);
    r.ops->upload(r.valid.get(), inputs[g].valid.data(), r.n);
  }
}

// Sums block b's `member` buffer over every replica of every rank, in place.
void Trainer::sum_over_replicas(int b, DeviceArray<double> Block::*member, int count) {
  std::vector<double*> buffers;
  for (auto& r : replicas_) buffers.push_back((r->block[b].*member).get());
  reducer_.sum(buffers, count);
}

// conv -> BatchNorm -> ReLU -> pool for block b on every replica. In training the statistics
// of every replica and rank are summed: normalization uses them with sync_bn (else each
// replica's own), and the running statistics always do, so they stay identical everywhere.
void Trainer::forward_block(int b, double global_samples, bool training) {
  const BlockOffsets o = offsets(layout_, b);
  const int c = b == 0 ? shape_.conv1 : shape_.conv2;
  const int h = shape_.height >> b, w = shape_.width >> b;
  each([&](Replica& r) {
    Block& k = r.block[b];
    const float* in = b == 0 ? r.x : r.block[0].p.get();
    r.ops->conv3x3_forward(in, r.params.get() + o.w, k.a.get(), conv_shape(shape_, b, r.n));
    if (training) {
      r.ops->bn_sums(k.a.get(), bn_shape(shape_, b, r.n), k.sums.get());
      r.ops->copy(k.global.get(), k.sums.get(), k.sums.bytes());
    }
  });
  if (training) sum_over_replicas(b, &Block::global, 2 * c);
  const double global_count = global_samples * h * w;
  each([&](Replica& r) {
    Block& k = r.block[b];
    const nn::BnShape bs = bn_shape(shape_, b, r.n);
    float* p = r.params.get();
    if (training) {
      const bool sync = hyper_.sync_bn;
      r.ops->bn_finalize(sync ? k.global.get() : k.sums.get(),
                         sync ? global_count : static_cast<double>(bs.per_channel()), c,
                         k.mean.get(), k.invstd.get());
      r.ops->bn_update_running(k.global.get(), global_count, c, hyper_.bn_momentum,
                               r.buffers.get() + o.mean, r.buffers.get() + o.var);
      r.ops->bn_relu_forward(k.a.get(), k.mean.get(), k.invstd.get(), p + o.gamma, p + o.beta, bs,
                             k.r.get());
    } else {
      r.ops->bn_relu_inference(k.a.get(), r.buffers.get() + o.mean, r.buffers.get() + o.var,
                               p + o.gamma, p + o.beta, bs, k.r.get());
    }
    r.ops->maxpool2x2_forward(k.r.get(), bs, h, w, k.p.get(), k.argmax.get());
  });
}

// From d(loss)/d(pooled output of block b) to the block's parameter gradients and, for block 1,
// d(loss)/d(block 0's pooled output).
void Trainer::backward_block(int b, double global_samples) {
  const BlockOffsets o = offsets(layout_, b);
  const int c = b == 0 ? shape_.conv1 : shape_.conv2;
  const int h = shape_.height >> b, w = shape_.width >> b;
  each([&](Replica& r) {
    Block& k = r.block[b];
    const nn::BnShape bs = bn_shape(shape_, b, r.n);
    r.ops->maxpool2x2_backward(k.dp.get(), k.argmax.get(), bs, h, w, k.dr.get());
    r.ops->relu_backward(k.dr.get(), k.r.get(), bs, k.dr.get());
    r.ops->bn_backward_sums(k.dr.get(), k.a.get(), k.mean.get(), k.invstd.get(), bs,
                            k.bsums.get());
    r.ops->bn_param_grads(k.bsums.get(), c, r.grads.get() + o.gamma, r.grads.get() + o.beta);
    if (hyper_.sync_bn) r.ops->copy(k.bglobal.get(), k.bsums.get(), k.bsums.bytes());
  });
  if (hyper_.sync_bn) sum_over_replicas(b, &Block::bglobal, 2 * c);
  each([&](Replica& r) {
    Block& k = r.block[b];
    const nn::BnShape bs = bn_shape(shape_, b, r.n);
    const bool sync = hyper_.sync_bn;
    r.ops->bn_backward_input(k.dr.get(), k.a.get(), k.mean.get(), k.invstd.get(),
                             r.params.get() + o.gamma, sync ? k.bglobal.get() : k.bsums.get(),
                             sync ? global_samples * h * w : static_cast<double>(bs.per_channel()),
                             bs, k.da.get());
    const float* in = b == 0 ? r.x : r.block[0].p.get();
    const nn::ConvShape cs = conv_shape(shape_, b, r.n);
    r.ops->conv3x3_backward_weights(in, k.da.get(), r.grads.get() + o.w, cs);
    if (b == 1)
      r.ops->conv3x3_backward_data(k.da.get(), r.params.get() + o.w, r.block[0].dp.get(), cs);
  });
}

// The linear layer and the loss; with `backward`, also their gradients into block 1's dp.
void Trainer::classify(float scale, bool backward) {
  const ParamLayout& l = layout_;
  each([&](Replica& r) {
    float* p = r.params.get();
    const float* features = r.block[1].p.get();
    r.ops->linear_forward(features, p + l.fc_w, p + l.fc_b, r.n, l.fc_in, shape_.classes,
                          r.logits.get());
    r.ops->softmax_cross_entropy(r.logits.get(), r.labels.get(), r.valid.get(), r.n,
                                 shape_.classes, scale, r.dlogits.get(), r.losses.get(),
                                 r.correct.get());
    if (backward)
      r.ops->linear_backward(features, p + l.fc_w, r.dlogits.get(), r.n, l.fc_in,
                             shape_.classes, r.block[1].dp.get(), r.grads.get() + l.fc_w,
                             r.grads.get() + l.fc_b);
  });
}

// This rank's loss sum, valid and correct counts, added in replica order.
StepResult Trainer::collect() {
  StepResult result;
  std::vector<float> losses(static_cast<std::size_t>(max_chunk_));
  std::vector<std::uint8_t> correct(static_cast<std::size_t>(max_chunk_));
  std::vector<std::uint8_t> valid(static_cast<std::size_t>(max_chunk_));
  for (auto& r : replicas_) {
    r->ops->download(losses.data(), r->losses.get(), sizeof(float) * r->n);
    r->ops->download(correct.data(), r->correct.get(), r->n);
    r->ops->download(valid.data(), r->valid.get(), r->n);
    for (int i = 0; i < r->n; ++i) {
      result.loss_sum += losses[i];
      result.correct += correct[i];
      result.valid += valid[i] != 0;
    }
  }
  return result;
}

StepResult Trainer::train_step(const std::vector<ReplicaInput>& inputs) {
  check_inputs(inputs);
  // Samples (padding included: BatchNorm sees them) and valid samples, over every rank.
  double totals[2] = {0, 0};
  for (const ReplicaInput& in : inputs) {
    totals[0] += in.samples;
    for (std::uint8_t v : in.valid) totals[1] += v != 0;
  }
  reducer_.sum_over_ranks(totals, 2);
  set_inputs(inputs);
  forward_block(0, totals[0], true);
  forward_block(1, totals[0], true);
  classify(totals[1] > 0 ? static_cast<float>(1.0 / totals[1]) : 0.f, true);
  backward_block(1, totals[0]);
  backward_block(0, totals[0]);

  std::vector<float*> grads;
  for (auto& r : replicas_) grads.push_back(r->grads.get());
  reducer_.sum(grads, layout_.params);
  const float lr = hyper_.lr_at(step_);
  each([&](Replica& r) {
    r.ops->sgd_momentum(r.params.get(), r.grads.get(), r.velocity.get(), layout_.params, lr,
                        hyper_.momentum, hyper_.weight_decay);
  });
  ++step_;

  StepResult result = collect();
  double loss = result.loss_sum;
  reducer_.sum_over_ranks(&loss, 1);
  result.global_loss = totals[1] > 0 ? loss / totals[1] : 0;
  return result;
}

StepResult Trainer::evaluate(const std::vector<ReplicaInput>& inputs) {
  check_inputs(inputs);
  set_inputs(inputs);
  forward_block(0, 0, false);
  forward_block(1, 0, false);
  classify(0.f, false);
  return collect();
}

StepResult Trainer::train_step(const Batch& batch) { return train_step(inputs_of(batch)); }
StepResult Trainer::evaluate(const Batch& batch) { return evaluate(inputs_of(batch)); }

}  // namespace stoke::train
