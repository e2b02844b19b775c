// The trainer on a GPU: the same steps on cuda:0 and on a host device give the same model to
// float rounding, and NCCL keeps a single GPU's replica as it is. Skipped without a GPU.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../cuda_test_support.hpp"
#include "mpi_world.hpp"
#include "reducer.hpp"
#include "trainer.hpp"

namespace stoke::train {
namespace {

ModelShape shape() {
  ModelShape s;
  s.conv1 = 8;
  s.conv2 = 16;
  return s;
}

// Runs 5 steps of fabricated 28x28 batches through a trainer on `ops`; returns the model.
ModelState train_on(std::unique_ptr<DeviceOps> ops, bool gpu) {
  const ModelShape s = shape();
  Hyper h;
  h.total_steps = 5;
  MpiWorld world;
  DeviceOps* raw = ops.get();
  std::vector<std::unique_ptr<DeviceOps>> list;
  list.push_back(std::move(ops));
  auto reducer = gpu ? make_nccl_reducer(world, {raw}) : make_host_reducer(world);
  Trainer trainer(s, h, std::move(list), *reducer, 32);
  trainer.initialize(4);
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  std::vector<float> host(32 * 28 * 28);
  std::vector<std::int32_t> labels(32);
  std::vector<std::uint8_t> valid(32, 1);
  for (int step = 0; step < 5; ++step) {
    for (float& v : host) v = normal(rng);
    for (auto& l : labels) l = static_cast<std::int32_t>(rng() % 10);
    DeviceArray<float> x(*raw, static_cast<std::int64_t>(host.size()));
    raw->upload(x.get(), host.data(), x.bytes());
    trainer.train_step({ReplicaInput{x.get(), labels, valid, 32}});
    raw->synchronize();
  }
  return trainer.state();
}

TEST(TrainerGpu, StepsOnCudaMatchTheSameStepsOnAHostDevice) {
  STOKE_SKIP_WITHOUT_GPU();
  const ModelState gpu = train_on(make_cuda_ops(0), true);
  const ModelState cpu = train_on(make_cpu_ops(0), false);
  ASSERT_EQ(gpu.params.size(), cpu.params.size());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < cpu.params.size(); ++i) {
    ASSERT_TRUE(std::isfinite(gpu.params[i])) << i;
    worst = std::max(worst, std::abs(double{gpu.params[i]} - cpu.params[i]));
    scale = std::max(scale, std::abs(double{cpu.params[i]}));
  }
  EXPECT_LT(worst, 1e-3 * scale) << "largest difference " << worst;
  for (std::size_t i = 0; i < cpu.buffers.size(); ++i)
    EXPECT_NEAR(gpu.buffers[i], cpu.buffers[i], 1e-3 * (1 + std::abs(cpu.buffers[i]))) << i;
}

}  // namespace
}  // namespace stoke::train
