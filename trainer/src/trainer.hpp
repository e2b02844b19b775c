#pragma once
// Data-parallel training of the bundled CNN: one replica per device, each fed its chunk of
// every batch; gradients and BatchNorm statistics all-reduced over every replica of every rank;
// the same SGD update applied everywhere, so after every step the replicas hold bit-identical
// parameters, running statistics and momentum.
//
// Thread-safety: one thread drives a Trainer. Replicas of host devices run in parallel inside
// each call.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "device_ops.hpp"
#include "model.hpp"
#include "reducer.hpp"
#include "stoke/batch.hpp"

namespace stoke::train {

enum class Schedule { kCosine, kStep };

struct Hyper {
  float lr = 0.05f;  // peak learning rate
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
  Schedule schedule = Schedule::kCosine;
  int warmup_steps = 0;  // linear ramp from lr / 10 to lr
  std::int64_t total_steps = 1;
  bool sync_bn = false;
  float bn_momentum = 0.1f;

  // Cosine: lr * (1 + cos(pi * step / total)) / 2. Step: lr, divided by 10 at 50% and 75%.
  float lr_at(std::int64_t step) const;
};

// The model as one value, whatever the device count: what a checkpoint holds.
struct ModelState {
  std::vector<float> params;
  std::vector<float> buffers;   // BatchNorm running statistics
  std::vector<float> velocity;  // SGD momentum
  std::int64_t step = 0;        // optimizer steps taken
};

// One replica's part of a batch: `samples` images (float32 NCHW of the model's shape) at `x`
// in that device's memory, labels and valid flags in host memory.
struct ReplicaInput {
  const float* x = nullptr;
  std::span<const std::int32_t> labels;
  std::span<const std::uint8_t> valid;
  int samples = 0;
};

struct StepResult {
  double loss_sum = 0;      // over this rank's valid samples
  std::int64_t valid = 0;   // this rank's valid samples
  std::int64_t correct = 0;
  double global_loss = 0;   // mean over every rank's valid samples (training steps only)
};

struct Block;  // one conv-BN-ReLU-pool block's memory on a replica (trainer.cpp)

class Trainer {
 public:
  // REQUIRES: devices non-empty; max_chunk >= the samples any replica will be handed.
  Trainer(const ModelShape& shape, const Hyper& hyper,
          std::vector<std::unique_ptr<DeviceOps>> devices, Reducer& reducer, int max_chunk);
  ~Trainer();

  // Starts from He initialization with this seed.
  void initialize(std::uint64_t seed);
  // Copies one model onto every replica.
  void load(const ModelState& state);
  // Replica 0's model (all replicas are identical).
  ModelState state() const;

  // One optimizer step over a loader batch (float32 NCHW, one chunk per replica).
  StepResult train_step(const Batch& batch);
  // The same over explicit inputs. Throws Error when a replica gets no samples.
  StepResult train_step(const std::vector<ReplicaInput>& inputs);
  // Counts correct predictions among the valid samples, with the running statistics.
  StepResult evaluate(const Batch& batch);
  StepResult evaluate(const std::vector<ReplicaInput>& inputs);

  // True when every replica's parameters, statistics and momentum equal replica 0's bit for bit.
  bool replicas_identical() const;
  int replicas() const;
  std::int64_t step() const;
  const ModelShape& shape() const;

 private:
  class Replica;
  // The model as replica `replica` holds it (synchronizes that device).
  ModelState download(int replica) const;
  std::vector<ReplicaInput> inputs_of(const Batch& batch) const;
  void check_inputs(const std::vector<ReplicaInput>& inputs) const;
  template <class F>
  void each(F&& f);
  void set_inputs(const std::vector<ReplicaInput>& inputs);
  void sum_over_replicas(int b, DeviceArray<double> Block::*member, int count);
  void forward_block(int b, double global_samples, bool training);
  void backward_block(int b, double global_samples);
  void classify(float scale, bool backward);
  StepResult collect();

  ModelShape shape_;
  ParamLayout layout_;
  Hyper hyper_;
  Reducer& reducer_;
  int max_chunk_;
  std::int64_t step_ = 0;
  std::vector<std::unique_ptr<Replica>> replicas_;
};

}  // namespace stoke::train
