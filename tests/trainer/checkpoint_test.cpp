// Checkpoints: exact round trips, clear errors for damaged files, and a save killed at any
// moment never destroys the previous checkpoint.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "checkpoint.hpp"
#include "stoke/error.hpp"

namespace stoke::train {
namespace {

// `wide`: 1.6 M parameters, an 18 MiB file.
Checkpoint sample(float fill, bool wide = false) {
  Checkpoint c;
  c.config.shape = ModelShape{};
  if (wide) {
    c.config.shape.conv1 = 256;
    c.config.shape.conv2 = 512;
  }
  c.config.hyper.lr = 0.07f;
  c.config.hyper.sync_bn = true;
  c.config.hyper.total_steps = 1234;
  c.config.hyper.warmup_steps = 55;
  c.config.hyper.schedule = Schedule::kStep;
  c.config.hyper.momentum = 0.8f;
  c.config.hyper.weight_decay = 3e-4f;
  c.config.hyper.bn_momentum = 0.2f;
  c.config.seed = 42;
  c.config.batch = 256;
  c.config.epochs = 6;
  c.config.pad = 3;
  const ParamLayout l(c.config.shape);
  c.model.params.assign(static_cast<std::size_t>(l.params), fill);
  c.model.buffers.assign(static_cast<std::size_t>(l.buffers), fill * 2);
  c.model.velocity.assign(c.model.params.size(), fill * 3);
  c.model.step = 77;
  c.loader = LoaderState{42, 3, 17 * 256, 17, 60000, 256};
  return c;
}

std::string temp(const char* name) { return ::testing::TempDir() + "/" + name; }

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(),
                                                               static_cast<std::streamsize>(bytes.size()));
}

std::string load_error(const std::string& path) {
  try {
    load_checkpoint(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(Checkpoint, RoundTripKeepsTheModelTheConfigurationAndTheLoaderPosition) {
  const std::string path = temp("round.ckpt");
  const Checkpoint saved = sample(0.25f);
  save_checkpoint(path, saved);
  const Checkpoint loaded = load_checkpoint(path);
  EXPECT_TRUE(loaded.config == saved.config);
  EXPECT_EQ(loaded.model.params, saved.model.params);
  EXPECT_EQ(loaded.model.buffers, saved.model.buffers);
  EXPECT_EQ(loaded.model.velocity, saved.model.velocity);
  EXPECT_EQ(loaded.model.step, 77);
  EXPECT_EQ(loaded.loader, saved.loader);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
}

TEST(Checkpoint, ATruncatedFileIsReportedAsTruncated) {
  const std::string path = temp("truncated.ckpt");
  save_checkpoint(path, sample(1.f));
  auto bytes = read_all(path);
  bytes.resize(bytes.size() - 100);
  write_all(path, bytes);
  EXPECT_NE(load_error(path).find("truncated or padded checkpoint"), std::string::npos)
      << load_error(path);
}

TEST(Checkpoint, AChangedByteIsReportedAsCorrupt) {
  const std::string path = temp("corrupt.ckpt");
  save_checkpoint(path, sample(1.f));
  auto bytes = read_all(path);
  bytes[bytes.size() / 2] ^= 0x10;
  write_all(path, bytes);
  EXPECT_EQ(load_error(path), path + ": corrupt checkpoint (checksum mismatch)");
}

TEST(Checkpoint, OtherFilesAndOtherVersionsAreRefusedByName) {
  const std::string path = temp("other.ckpt");
  write_all(path, {'h', 'e', 'l', 'l', 'o'});
  EXPECT_EQ(load_error(path), path + ": not a stoke checkpoint (no STOKECKP header)");
  save_checkpoint(path, sample(1.f));
  auto bytes = read_all(path);
  bytes[8] = 2;  // the version field
  write_all(path, bytes);
  EXPECT_EQ(load_error(path),
            path + ": checkpoint format version 2; this stoke reads version 1");
  EXPECT_NE(load_error(temp("missing.ckpt")).find("cannot open checkpoint"), std::string::npos);
}

TEST(Checkpoint, ASaveKilledAtAnyMomentLeavesAReadableCheckpoint) {
  const std::string path = temp("killed.ckpt");
  // Large enough that a kill often lands in the middle of writing.
  const Checkpoint a = sample(1.f, true), b = sample(2.f, true);
  save_checkpoint(path, a);
  std::mt19937 rng(1);
  for (int round = 0; round < 6; ++round) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (;;) {
        save_checkpoint(path, b);
        save_checkpoint(path, a);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 60));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    const Checkpoint got = load_checkpoint(path);
    EXPECT_TRUE(got.model.params[0] == 1.f || got.model.params[0] == 2.f);
    std::filesystem::remove(path + ".tmp." + std::to_string(child));
  }
}

}  // namespace
}  // namespace stoke::train
