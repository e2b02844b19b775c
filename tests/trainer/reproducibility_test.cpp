// A training run repeats bit for bit on one machine: the same configuration gives the same
// losses, weights, BatchNorm running statistics and momentum, whatever the number of threads the
// CPU ops run on and the loader's worker count. It holds because every sum is taken in an order
// fixed by the shapes (blocks of 8 images for a weight gradient, images then pixels for a
// BatchNorm sum, replicas in order for an all-reduce), never by which thread got which part, and
// OpenBLAS runs single-threaded inside each task (kernels/src/nn/blas.hpp).

#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <cstring>
#include <memory>
#include <vector>

#include "mpi_world.hpp"
#include "reducer.hpp"
#include "stoke/loader.hpp"
#include "stoke/tools/fashion_mnist.hpp"
#include "trainer.hpp"

namespace stoke::train {
namespace {

constexpr int kSteps = 12;

struct Trajectory {
  std::vector<double> losses;  // each step's mean loss over the global batch
  ModelState end;
};

// kSteps steps of stoke-train's model (32 and 64 channels) on Fashion-MNIST with its training
// augmentation, on cpu:2 with synchronized BatchNorm (so every all-reduce runs), with at most
// `threads` threads for the ops and `workers` loader processes.
Trajectory train(int threads, int workers) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
  tbb::task_arena arena(threads);  // may exceed the cores: more threads than there are
  EXPECT_EQ(arena.max_concurrency(), threads);
  Trajectory run;
  arena.execute([&] {
    const ModelShape shape;
    Options o;
    o.data = tools::kDefaultFashionMnistDir;
    o.devices = DeviceSet::parse("cpu:2");
    o.workers = workers;
    o.batch = 64;
    o.seed = 3;
    o.dtype = DType::kFloat32;
    o.layout = Layout::kNCHW;
    o.height = shape.height;
    o.width = shape.width;
    o.last_batch = LastBatch::kDrop;
    Pipeline p(shape.height, shape.width, shape.channels);
    p.pad_random_crop(1, shape.height, shape.width);
    p.horizontal_flip(0.5f);
    o.pipeline = p;
    Loader loader(o);

    Hyper h;
    h.lr = 0.01f;  // the first steps of a run, before stoke-train's 200-step warm-up would end
    h.total_steps = kSteps;
    h.warmup_steps = 2;
    h.sync_bn = true;
    MpiWorld world;  // a world of one: no mpirun here
    const std::unique_ptr<Reducer> reducer = make_host_reducer(world);
    std::vector<std::unique_ptr<DeviceOps>> ops;
    for (int g = 0; g < 2; ++g) ops.push_back(make_cpu_ops(g));
    Trainer trainer(shape, h, std::move(ops), *reducer, o.batch / 2);
    trainer.initialize(7);
    for (int i = 0; i < kSteps; ++i)
      run.losses.push_back(trainer.train_step(*loader.next()).global_loss);
    run.end = trainer.state();
  });
  return run;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(Trainer, ARunRepeatsBitForBitOnOneThreadOrEightAndAnyWorkerCount) {
  const Trajectory one = train(1, 1);
  const Trajectory eight = train(8, 3);
  ASSERT_EQ(one.losses.size(), eight.losses.size());
  for (std::size_t i = 0; i < one.losses.size(); ++i)
    EXPECT_EQ(std::memcmp(&one.losses[i], &eight.losses[i], sizeof(double)), 0)
        << "step " << i << ": " << one.losses[i] << " against " << eight.losses[i];
  EXPECT_TRUE(same_bits(one.end.params, eight.end.params));
  EXPECT_TRUE(same_bits(one.end.buffers, eight.end.buffers));
  EXPECT_TRUE(same_bits(one.end.velocity, eight.end.velocity));
  EXPECT_EQ(one.end.step, kSteps);
  EXPECT_LT(one.losses.back(), one.losses.front());  // it trained
}

}  // namespace
}  // namespace stoke::train
