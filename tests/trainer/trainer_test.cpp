// The trainer: gradients of the whole model, replicas kept identical, synchronized BatchNorm,
// empty chunks refused, models moved between device counts, and exact mid-epoch resume.

#include "trainer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "checkpoint.hpp"
#include "mpi_world.hpp"
#include "reducer.hpp"
#include "stoke/error.hpp"
#include "stoke/loader.hpp"
#include "stoke/tools/fashion_mnist.hpp"

namespace stoke::train {
namespace {

// Fabricated data for one global batch: images, labels and valid flags.
struct Data {
  std::vector<float> x;
  std::vector<std::int32_t> labels;
  std::vector<std::uint8_t> valid;
  int n = 0;
  std::int64_t image = 0;

  Data(const ModelShape& s, int samples, unsigned seed) : n(samples) {
    image = std::int64_t{s.channels} * s.height * s.width;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    x.resize(static_cast<std::size_t>(n * image));
    for (float& v : x) v = normal(rng);
    for (int i = 0; i < n; ++i) labels.push_back(static_cast<std::int32_t>(rng() % s.classes));
    valid.assign(static_cast<std::size_t>(n), 1);
  }

  // The batch split into `parts` equal chunks, as the loader splits it over devices.
  std::vector<ReplicaInput> split(int parts) const {
    std::vector<ReplicaInput> in;
    const int each = n / parts;
    for (int p = 0; p < parts; ++p) {
      const std::size_t first = static_cast<std::size_t>(p * each);
      in.push_back({x.data() + first * image,
                    {labels.data() + first, static_cast<std::size_t>(each)},
                    {valid.data() + first, static_cast<std::size_t>(each)},
                    each});
    }
    return in;
  }
};

ModelShape tiny_shape() {
  ModelShape s;
  s.channels = 2;
  s.height = 8;
  s.width = 4;
  s.classes = 3;
  s.conv1 = 3;
  s.conv2 = 4;
  return s;
}

struct Rig {
  MpiWorld world;  // a world of one: no mpirun here
  std::unique_ptr<Reducer> reducer = make_host_reducer(world);
  std::unique_ptr<Trainer> trainer;

  Rig(const ModelShape& s, const Hyper& h, int replicas, int max_chunk) {
    std::vector<std::unique_ptr<DeviceOps>> ops;
    for (int g = 0; g < replicas; ++g) ops.push_back(make_cpu_ops(g));
    trainer = std::make_unique<Trainer>(s, h, std::move(ops), *reducer, max_chunk);
  }
};

Hyper plain_sgd(float lr) {
  Hyper h;
  h.lr = lr;
  h.momentum = 0.f;
  h.weight_decay = 0.f;
  h.schedule = Schedule::kStep;
  h.total_steps = 1000;
  return h;
}

// The training loss of `state` on `data` (one step's forward pass, in double for the sum).
double loss_at(Rig& rig, const ModelState& state, const Data& data, int parts) {
  rig.trainer->load(state);
  return rig.trainer->train_step(data.split(parts)).global_loss;
}

void expect_model_gradient(bool sync_bn, int parts) {
  const ModelShape s = tiny_shape();
  Hyper h = plain_sgd(1.f);
  h.sync_bn = sync_bn;
  Rig rig(s, h, parts, 8);
  rig.trainer->initialize(7);
  const ModelState start = rig.trainer->state();
  const Data data(s, 8, 11);
  // With lr 1 and neither momentum nor decay, one step subtracts the gradient itself.
  rig.trainer->train_step(data.split(parts));
  const ModelState after = rig.trainer->state();
  ModelState probe = start;
  const float eps = 1e-3f;
  for (std::size_t i = 0; i < start.params.size(); ++i) {
    const double analytic = double{start.params[i]} - after.params[i];
    probe.params[i] = start.params[i] + eps;
    const double up = loss_at(rig, probe, data, parts);
    probe.params[i] = start.params[i] - eps;
    const double down = loss_at(rig, probe, data, parts);
    probe.params[i] = start.params[i];
    const double numeric = (up - down) / (2 * eps);
    EXPECT_NEAR(analytic, numeric, 2e-3 + 3e-2 * std::abs(numeric)) << "parameter " << i;
  }
}

TEST(Trainer, ModelGradientMatchesFiniteDifferences) {
  expect_model_gradient(false, 1);
}

TEST(Trainer, SyncBnGradientOverTwoReplicasMatchesFiniteDifferences) {
  expect_model_gradient(true, 2);
}

TEST(Trainer, PerReplicaBatchNormGradientOverTwoReplicasMatchesFiniteDifferences) {
  expect_model_gradient(false, 2);
}

TEST(Trainer, ReplicasStayBitIdenticalAfterEveryStep) {
  const ModelShape s = tiny_shape();
  Hyper h = plain_sgd(0.1f);
  h.momentum = 0.9f;
  h.weight_decay = 5e-4f;
  Rig rig(s, h, 3, 4);
  rig.trainer->initialize(1);
  for (unsigned step = 0; step < 5; ++step) {
    const Data data(s, 12, 100 + step);
    rig.trainer->train_step(data.split(3));
    EXPECT_TRUE(rig.trainer->replicas_identical()) << "after step " << step;
  }
}

// Parameters of `replicas` replicas after 4 steps on the same global batches.
std::vector<float> params_after_steps(int replicas, bool sync_bn) {
  const ModelShape s = tiny_shape();
  Hyper h = plain_sgd(0.05f);
  h.sync_bn = sync_bn;
  Rig rig(s, h, replicas, 12);
  rig.trainer->initialize(3);
  for (unsigned step = 0; step < 4; ++step)
    rig.trainer->train_step(Data(s, 12, 50 + step).split(replicas));
  return rig.trainer->state().params;
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double{a[i]} - b[i]));
  return worst;
}

TEST(Trainer, SyncBnMakesTheResultIndependentOfHowTheBatchIsSplit) {
  const auto one = params_after_steps(1, true);
  EXPECT_LT(max_difference(one, params_after_steps(2, true)), 1e-5);
  EXPECT_LT(max_difference(one, params_after_steps(3, true)), 1e-5);
  // Without it each replica normalizes with its own statistics: a different function.
  EXPECT_GT(max_difference(params_after_steps(1, false), params_after_steps(3, false)), 1e-3);
}

// A textbook BatchNorm running-statistics update for one channel, as a framework without
// stoke's guarantees computes it for whatever chunk a replica is handed.
void naive_batchnorm_update(const std::vector<float>& chunk, float& running_mean,
                            float& running_var) {
  float sum = 0, sumsq = 0;
  for (float v : chunk) {
    sum += v;
    sumsq += v * v;
  }
  const float n = static_cast<float>(chunk.size());
  const float mean = sum / n;
  const float var = (sumsq / n - mean * mean) * n / (n - 1);  // unbiased
  running_mean = 0.9f * running_mean + 0.1f * mean;
  running_var = 0.9f * running_var + 0.1f * var;
}

TEST(Trainer, NaiveBatchNormOnAnEmptyChunkGivesNaNRunningStatistics) {
  // 5 samples over 2 devices, split the naive way (ceil): 3 and 2. Over 6 devices: one each
  // and an empty sixth, whose statistics are 0/0.
  float mean = 0, var = 1;
  naive_batchnorm_update({0.5f, 1.5f, 2.f}, mean, var);
  EXPECT_FALSE(std::isnan(mean) || std::isnan(var));
  naive_batchnorm_update({}, mean, var);
  EXPECT_TRUE(std::isnan(mean));
  EXPECT_TRUE(std::isnan(var));
  // And once NaN, always NaN: every later update keeps it.
  naive_batchnorm_update({1.f, 2.f}, mean, var);
  EXPECT_TRUE(std::isnan(mean));
}

TEST(Trainer, RefusesAReplicaWithNoSamples) {
  const ModelShape s = tiny_shape();
  Rig rig(s, plain_sgd(0.1f), 2, 4);
  rig.trainer->initialize(1);
  const ModelState before = rig.trainer->state();
  const Data data(s, 4, 5);
  std::vector<ReplicaInput> in = data.split(1);
  in.push_back({data.x.data(), {}, {}, 0});
  try {
    rig.trainer->train_step(in);
    FAIL() << "an empty chunk was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("replica 1 (cpu:1) was handed 0 samples"),
              std::string::npos)
        << e.what();
  }
  const ModelState after = rig.trainer->state();
  EXPECT_EQ(0, std::memcmp(before.buffers.data(), after.buffers.data(),
                           before.buffers.size() * sizeof(float)));
}

TEST(Trainer, LoaderBatchesNeverLeaveADeviceEmpty) {
  Options o;
  o.data = tools::kDefaultFashionMnistDir;
  o.split = Split::kTest;
  o.devices = DeviceSet::parse("cpu:4");
  o.workers = 0;
  o.batch = 3;  // fewer samples than devices
  try {
    Loader loader(o);
    FAIL() << "batch 3 on 4 devices was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of 4"), std::string::npos) << e.what();
  }
  // The last batch of an epoch (10,000 = 39 x 256 + 16) is padded, never short.
  o.batch = 256;
  o.shuffle = false;
  Loader loader(o);
  loader.set_epoch(0);
  std::int64_t batches = 0;
  while (auto b = loader.next()) {
    ++batches;
    for (int g = 0; g < 4; ++g) ASSERT_EQ(b->chunk(g).samples, 64);
  }
  EXPECT_EQ(batches, 40);
}

Options fashion_options(int devices, int batch) {
  Options o;
  o.data = tools::kDefaultFashionMnistDir;
  o.devices = DeviceSet::parse("cpu:" + std::to_string(devices));
  o.workers = 1;
  o.batch = batch;
  o.seed = 5;
  o.dtype = DType::kFloat32;
  o.layout = Layout::kNCHW;
  o.last_batch = LastBatch::kDrop;
  return o;
}

ModelShape fashion_shape() {
  ModelShape s;
  s.conv1 = 4;
  s.conv2 = 8;
  return s;
}

TEST(Trainer, ResumingMidEpochReproducesTheBatchesAndLossesExactly) {
  const ModelShape s = fashion_shape();
  Hyper h;
  h.total_steps = 8;
  h.warmup_steps = 2;
  std::vector<double> straight, resumed;
  ModelState straight_end;
  {
    Loader loader(fashion_options(2, 32));
    Rig rig(s, h, 2, 16);
    rig.trainer->initialize(9);
    for (int i = 0; i < 8; ++i)
      straight.push_back(rig.trainer->train_step(*loader.next()).global_loss);
    straight_end = rig.trainer->state();
  }
  Checkpoint saved;
  {
    Loader loader(fashion_options(2, 32));
    Rig rig(s, h, 2, 16);
    rig.trainer->initialize(9);
    for (int i = 0; i < 3; ++i)
      resumed.push_back(rig.trainer->train_step(*loader.next()).global_loss);
    saved = Checkpoint{RunConfig{s, h, 5, 32, 1}, rig.trainer->state(), loader.state()};
  }
  const std::string path = ::testing::TempDir() + "/resume.ckpt";
  save_checkpoint(path, saved);
  const Checkpoint loaded = load_checkpoint(path);
  Options o = fashion_options(2, 32);
  o.resume = loaded.loader;
  Loader loader(o);
  Rig rig(s, h, 2, 16);
  rig.trainer->load(loaded.model);
  for (int i = 3; i < 8; ++i)
    resumed.push_back(rig.trainer->train_step(*loader.next()).global_loss);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(straight[i], resumed[i]) << "step " << i;
  const ModelState end = rig.trainer->state();
  EXPECT_EQ(0, std::memcmp(end.params.data(), straight_end.params.data(),
                           end.params.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(end.buffers.data(), straight_end.buffers.data(),
                           end.buffers.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(end.velocity.data(), straight_end.velocity.data(),
                           end.velocity.size() * sizeof(float)));
}

TEST(Trainer, AModelTrainedOnFourDevicesEvaluatesTheSameOnOne) {
  const ModelShape s = fashion_shape();
  Hyper h;
  h.total_steps = 6;
  Loader loader(fashion_options(4, 64));
  Rig four(s, h, 4, 16);
  four.trainer->initialize(2);
  for (int i = 0; i < 6; ++i) four.trainer->train_step(*loader.next());
  const std::string path = ::testing::TempDir() + "/four.ckpt";
  save_checkpoint(path,
                  Checkpoint{RunConfig{s, h, 5, 64, 1}, four.trainer->state(), loader.state()});

  Rig one(s, h, 1, 64);
  one.trainer->load(load_checkpoint(path).model);
  Options eval = fashion_options(4, 64);
  eval.split = Split::kTest;
  eval.augment = Augment::kEvaluation;
  Options eval_one = eval;
  eval_one.devices = DeviceSet::parse("cpu:1");
  Loader test4(eval), test1(eval_one);
  std::int64_t correct4 = 0, correct1 = 0;
  for (int i = 0; i < 10; ++i) {
    correct4 += four.trainer->evaluate(*test4.next()).correct;
    correct1 += one.trainer->evaluate(*test1.next()).correct;
  }
  EXPECT_GT(correct4, 64);  // it learned something in 6 steps: better than 10% of 640
  EXPECT_NEAR(static_cast<double>(correct1), static_cast<double>(correct4), 1.0);
}

}  // namespace
}  // namespace stoke::train
