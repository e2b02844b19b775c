// Invalid configurations are refused at construction with a message that says what to change.
#include "api/config.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "test_support.hpp"

namespace stoke {
namespace {

using test::fashion_options;

TEST(Config, RejectsBatchNotMultipleOfDevicesProposingNearestSizes) {
  Options o = fashion_options(0, 250);
  o.devices = DeviceSet::parse("cpu:4");
  EXPECT_EQ(test::config_error(o), "batch 250 is not a multiple of 4 devices; use 248 or 252");
}

TEST(Config, RejectsUnknownDeviceSpec) {
  try {
    DeviceSet::parse("gpu:2");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "devices 'gpu:2' not understood; use cpu:G (G host devices, e.g. cpu:4), "
                 "cuda:0,1 (those GPUs) or auto");
  }
  EXPECT_EQ(DeviceSet::parse("cpu:3").count, 3);
  EXPECT_THROW(DeviceSet::parse("cpu:0"), ConfigError);
}

TEST(Config, NamesAMissingDataPath) {
  Options o = fashion_options(0);
  o.data = "/nonexistent/stoke-data";
  EXPECT_EQ(test::config_error(o),
            "/nonexistent/stoke-data: No such file or directory (the data path must be an image "
            "folder, a list file or a folder of IDX files)");
}

TEST(Config, RejectsNegativeWorkersAndHalfGivenSize) {
  Options o = fashion_options(-2);  // -1 is kAuto
  EXPECT_EQ(test::config_error(o),
            "workers must be in 0..512 (0 runs in-process) or kAuto, got -2");
  o = fashion_options(0);
  o.height = 32;
  EXPECT_EQ(test::config_error(o),
            "set both height and width (e.g. 224x224), or neither for the default size");
}

TEST(Config, RejectsDropWhenTheDatasetFillsNoBatch) {
  Options o = fashion_options(0, 20000);
  o.last_batch = LastBatch::kDrop;
  EXPECT_EQ(test::config_error(o),
            "the dataset's 10000 samples fill no global batch of 20000 (batch 20000 x world 1) "
            "with last_batch=drop; use last_batch=pad or a batch of at most 10000");
}

TEST(Config, ReadsRankAndWorldFromTheLaunchersEnvironment) {
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  RankInfo r = rank_from_environment();
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world, 3);
  ::setenv("RANK", "2", 1);
  ::setenv("WORLD_SIZE", "4", 1);
  r = rank_from_environment();  // torchrun's variables win
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.world, 4);
  Loader loader(fashion_options(0));
  EXPECT_EQ(loader.rank(), 2);
  EXPECT_EQ(loader.world(), 4);
  EXPECT_EQ(loader.batches_per_epoch(), 25);  // 10000 / (100 x 4)
  ::setenv("WORLD_SIZE", "two", 1);
  EXPECT_THROW(rank_from_environment(), ConfigError);
  for (const char* v : {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"})
    ::unsetenv(v);
}

TEST(Config, ValidatesPipelines) {
  EXPECT_THROW(Pipeline(28, 28, 2), ConfigError);
  Pipeline p(64, 64, 3);
  p.resize_shorter(64);
  try {
    p.validate(0, 0);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "pipeline: images of varying size reach the output; end the pipeline with "
                 "resize, center_crop, random_resized_crop or pad_random_crop to 64x64");
  }
  Pipeline q(28, 28, 1);
  q.center_crop(24, 24);
  EXPECT_THROW(q.validate(28, 28), ConfigError);
  EXPECT_THROW(Pipeline(8, 8, 1).random_resized_crop(8, 8, 0.5f, 0.2f), ConfigError);
  EXPECT_THROW(Pipeline(8, 8, 1).horizontal_flip(1.5f), ConfigError);
}

TEST(Config, RejectsStatesSavedWithAnotherDatasetOrSeed) {
  EXPECT_THROW(LoaderState::parse("hello"), ConfigError);
  EXPECT_THROW(LoaderState::parse("stoke-state/1 seed=1 epoch=x"), ConfigError);
  Options o = fashion_options(0);
  o.resume = LoaderState{o.seed, 0, 300, 3, 60000, 100};
  EXPECT_EQ(test::config_error(o),
            "cannot resume from 'stoke-state/2 seed=7 epoch=0 position=300 next_batch=3 "
            "dataset_size=60000 global_batch=100': it was saved with another dataset size or "
            "seed (now dataset_size=10000 seed=7)");
  o.resume = LoaderState{8, 0, 300, 3, 10000, 100};
  EXPECT_EQ(test::config_error(o),
            "cannot resume from 'stoke-state/2 seed=8 epoch=0 position=300 next_batch=3 "
            "dataset_size=10000 global_batch=100': it was saved with another dataset size or "
            "seed (now dataset_size=10000 seed=7)");
}

TEST(Config, RejectsAResumePositionOutsideTheEpoch) {
  Options o = fashion_options(0);
  o.resume = LoaderState{o.seed, 0, 10001, 3, 10000, 100};
  EXPECT_EQ(test::config_error(o),
            "cannot resume from 'stoke-state/2 seed=7 epoch=0 position=10001 next_batch=3 "
            "dataset_size=10000 global_batch=100': position must be in 0..10000 (the dataset's "
            "samples; 10000: the epoch is done)");
  o.resume = LoaderState{o.seed, 0, -1, 3, 10000, 100};
  EXPECT_NE(test::config_error(o).find("position must be in 0..10000"), std::string::npos);
  // next_batch counts batches of the saving loader's global batch: at most ceil(10000 / 300).
  o.resume = LoaderState{o.seed, 0, 300, 35, 10000, 300};
  EXPECT_EQ(test::config_error(o),
            "cannot resume from 'stoke-state/2 seed=7 epoch=0 position=300 next_batch=35 "
            "dataset_size=10000 global_batch=300': next_batch must be in 0..34");
  o.resume = LoaderState{o.seed, 0, 300, 3, 10000, 0};
  EXPECT_NE(test::config_error(o).find("': global_batch must be positive"), std::string::npos);
  o.resume = LoaderState{o.seed, -1, 300, 3, 10000, 100};
  EXPECT_NE(test::config_error(o).find("': epoch must be in 0.."), std::string::npos);
  LoaderState mixed{o.seed, 0, 300, 3, 10000, 100};
  mixed.sources = {200, 100};
  o.resume = mixed;
  EXPECT_NE(test::config_error(o).find(
                "': it was saved by a mixture of 2 sources (its sources= counts); this loader "
                "reads one dataset"),
            std::string::npos)
      << test::config_error(o);
}

TEST(Config, ResumesAtTheEndOfAnEpochByEndingItFirst) {
  // Position N: the epoch is done, as the saving loader's next call would have said.
  Options o = fashion_options(0, 64);
  o.resume = LoaderState{o.seed, 2, 10000, 157, 10000, 64};
  Loader loader(o);
  EXPECT_EQ(loader.state(), *o.resume);
  EXPECT_FALSE(loader.next().has_value());
  const auto b = loader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->epoch(), 3);
  EXPECT_EQ(b->index(), 0);
}

TEST(Config, RejectsAWorkerPathThatIsNotExecutable) {
  test::TempDir dir;
  const std::string path = dir.str() + "/stoke-worker";
  std::ofstream(path) << "not a program\n";
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  Options o = fashion_options(2);
  o.worker_path = path;
  EXPECT_EQ(test::config_error(o), "worker path " + path +
                                       " is not an executable file; point it at the stoke-worker "
                                       "that came with this library");
}

TEST(Config, RefusesAWorkerOfAnotherVersion) {
  Options o = fashion_options(2);
  o.worker_path = STOKE_OTHER_VERSION_WORKER;
  try {
    Loader loader(o);
    FAIL() << "accepted a worker of another version";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("is version 0.0.0-other/layout"), std::string::npos) << msg;
    EXPECT_NE(msg.find("install the stoke-worker that came with this library"), std::string::npos);
  }
  EXPECT_TRUE(test::children().empty());
}

TEST(Config, ReportsAWorkerThatIsNotAStokeWorker) {
  Options o = fashion_options(1);
  o.worker_path = "/bin/true";
  try {
    Loader loader(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "stoke-worker (/bin/true) exited during start-up with exit code 0");
  }
}

// The remote settings are read once, before indexing: the deadline from the environment (a value
// that is not a positive number keeps the default), the cache root from Options or the
// environment, as an absolute path.
TEST(Config, ResolvesTheRemoteSettingsFromOptionsAndTheEnvironment) {
  Options o = fashion_options(0);
  o.cache_dir = "/tmp/stoke-cache-here";
  o.cache_limit = 1234;
  {
    const test::ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", std::string("7.5"));
    const detail::RemoteConfig r = detail::resolve_remote(o);
    EXPECT_EQ(r.policy.deadline_s, 7.5);
    EXPECT_EQ(r.policy.cancel, nullptr);
    EXPECT_EQ(r.cache_root, "/tmp/stoke-cache-here");
    EXPECT_EQ(r.cache_limit, 1234u);
  }
  const test::ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", std::string("-3"));
  const test::ScopedEnv root("STOKE_CACHE_DIR", std::string("relative/root"));
  o.cache_dir.clear();
  const detail::RemoteConfig r = detail::resolve_remote(o);
  EXPECT_EQ(r.policy.deadline_s, detail::RemotePolicy{}.deadline_s);
  EXPECT_TRUE(r.cache_root.starts_with("/")) << r.cache_root;
  EXPECT_TRUE(r.cache_root.ends_with("/relative/root")) << r.cache_root;
}

}  // namespace
}  // namespace stoke
