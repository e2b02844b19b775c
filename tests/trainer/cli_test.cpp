// stoke-train as users run it: the accuracy line tools read, clear refusals, SIGTERM saving a
// checkpoint that resumes, and two MPI ranks matching one rank with two devices.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "checkpoint.hpp"

extern char** environ;

namespace stoke::train {
namespace {

struct Outcome {
  int status = -1;  // exit code, or 128 + signal
  std::string output;
};

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "/cli-" + name;
}

// Starts argv with stdout and stderr going to `log`; returns the pid.
pid_t start(const std::vector<std::string>& args, const std::string& log) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  EXPECT_EQ(rc, 0) << "cannot start " << args[0];
  return pid;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Outcome finish(pid_t pid, const std::string& log) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  Outcome r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.output = slurp(log);
  return r;
}

Outcome train(std::vector<std::string> args, const std::string& name) {
  args.insert(args.begin(), STOKE_TRAIN_PATH);
  const std::string log = temp(name + ".log");
  return finish(start(args, log), log);
}

TEST(StokeTrain, PrintsTheAccuracyLineAndEvaluatesEveryTestImageOnce) {
  const std::string ck = temp("eval.ckpt");
  const Outcome t = train(
      {"--steps", "20", "--batch", "64", "--checkpoint", ck, "--no-progress", "--workers", "auto"},
      "eval-train");
  ASSERT_EQ(t.status, 0) << t.output;
  EXPECT_TRUE(std::regex_search(t.output, std::regex("(^|\n)test accuracy 0\\.\\d{4}\n")))
      << t.output;
  // The loader's stall monitor speaks at the end: the pool size and a verdict.
  EXPECT_TRUE(std::regex_search(
      t.output, std::regex("\nstoke-train: workers=auto settled on \\d+ after \\d+ decision")))
      << t.output;
  EXPECT_TRUE(std::regex_search(
      t.output, std::regex("\nstoke-train: ((input-bound|not input-bound): the consumer waited "
                           "|not enough batches yet to judge)")))
      << t.output;
  // 10,000 is not a multiple of 96: the last batch is padded, and padding is not counted.
  const Outcome e = train({"--eval-only", ck, "--devices", "cpu:2", "--batch", "96"}, "eval-only");
  ASSERT_EQ(e.status, 0) << e.output;
  EXPECT_NE(e.output.find(" of 10000 test images correct"), std::string::npos) << e.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(e.output, m, std::regex("(\\d+) of 10000 test images correct")));
  std::smatch acc;
  ASSERT_TRUE(std::regex_search(e.output, acc, std::regex("\ntest accuracy (0\\.\\d{4})\n")));
  EXPECT_NEAR(std::stod(acc[1]), std::stod(m[1]) / 10000, 1e-4);
}

// The short training .ci/run does: 300 steps of 128 images (under a minute on 2 cores).
TEST(StokeTrain, AShortRunReachesEightyFivePercentTestAccuracy) {
  const Outcome r = train(
      {"--steps", "300", "--batch", "128", "--checkpoint", temp("short.ckpt"), "--no-progress"},
      "short");
  ASSERT_EQ(r.status, 0) << r.output;
  std::smatch acc;
  ASSERT_TRUE(std::regex_search(r.output, acc, std::regex("\ntest accuracy (0\\.\\d{4})\n")))
      << r.output;
  std::printf("short run: test accuracy %s\n", acc[1].str().c_str());
  EXPECT_GE(std::stod(acc[1]), 0.85) << r.output;
}

TEST(StokeTrain, RefusesABatchThatDoesNotSplitAndAResumeThatChangesTheRun) {
  const Outcome bad = train({"--devices", "cpu:3", "--batch", "100", "--steps", "1"}, "bad-batch");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(
      bad.output.find("--batch 100 is not a multiple of 1 rank(s) x 3 device(s); use 99 or 102"),
      std::string::npos)
      << bad.output;
  const std::string ck = temp("refuse.ckpt");
  ASSERT_EQ(train({"--steps", "2", "--batch", "32", "--checkpoint", ck, "--no-progress"}, "refuse")
                .status,
            0);
  const Outcome changed = train({"--resume", ck, "--batch", "64"}, "refuse-resume");
  EXPECT_EQ(changed.status, 2);
  EXPECT_NE(changed.output.find("--batch cannot change when resuming"), std::string::npos)
      << changed.output;
}

// The usage contract of every tool (stoke/tools/cli.hpp): help exits 0, usage errors exit 2 and
// name the flag, before anything starts (no data is read, no MPI world is made).
TEST(StokeTrain, HelpExitsZeroAndEveryUsageErrorExitsTwoNamingTheFlag) {
  const Outcome help = train({"--help"}, "help");
  EXPECT_EQ(help.status, 0) << help.output;
  EXPECT_NE(help.output.find("Usage: stoke-train [OPTIONS]"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("--sync-bn"), std::string::npos) << help.output;
  const std::pair<std::vector<std::string>, std::string> errors[] = {
      {{"--bacth", "64"}, "The following arguments were not expected: 64 --bacth"},
      {{"--batch", "0"}, "--batch: Value 0 not in range 1 to"},
      {{"--lr", "-0.1"}, "--lr: wants a positive number, got '-0.1'"},
      {{"--size", "3"}, "--size: size must be at least 4x4 (the model pools twice), got '3'"},
      {{"--size", "32y32"}, "--size: size must be HxW or N"},
      {{"--workers", "many"}, "--workers: wants a count in 0..512 or auto, got 'many'"},
      {{"--schedule", "linear"}, "--schedule: schedule must be cosine or step, got 'linear'"},
      {{"--devices", "gpu:1"}, "--devices: devices 'gpu:1' not understood"},
      {{"--steps"}, "--steps"},
  };
  for (const auto& [args, message] : errors) {
    const Outcome r = train(args, "usage");
    EXPECT_EQ(r.status, 2) << args[0] << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args[0] << ": " << r.output;
  }
}

TEST(StokeTrain, SigtermSavesACheckpointAtAStepBoundaryAndResumeFinishesTheRun) {
  const std::string ck = temp("sigterm.ckpt");
  const std::string log = temp("sigterm.log");
  const pid_t pid =
      start({STOKE_TRAIN_PATH, "--steps", "600", "--batch", "32", "--checkpoint", ck}, log);
  // Interrupt once it is training: without a terminal, progress lines come every 187 steps.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (slurp(log).find("step 187/1875") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(pid, SIGTERM);
  const Outcome r = finish(pid, log);
  ASSERT_EQ(r.status, 128 + SIGTERM) << r.output;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.output, m, std::regex("interrupted at step (\\d+): checkpoint saved")))
      << r.output;
  const Checkpoint saved = load_checkpoint(ck);
  EXPECT_EQ(saved.model.step, std::stoll(m[1]));
  EXPECT_GT(saved.model.step, 186);
  EXPECT_LT(saved.model.step, 600);
  EXPECT_EQ(saved.loader.next_batch, saved.model.step % 1875);

  const Outcome resumed =
      train({"--resume", ck, "--checkpoint", ck, "--no-progress"}, "sigterm-resume");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming at step " + std::to_string(saved.model.step)),
            std::string::npos);
  EXPECT_EQ(load_checkpoint(ck).model.step, 600);
}

TEST(StokeTrain, TwoMpiRanksMatchOneRankWithTwoDevicesUnderSyncBn) {
  const std::string a = temp("mpi-ranks.ckpt"), b = temp("mpi-devices.ckpt");
  std::vector<std::string> mpi{"mpirun", "-np", "2",         "--oversubscribe",
                               "--mca",  "btl", "self,vader"};
  if (::geteuid() == 0) mpi.push_back("--allow-run-as-root");
  for (const char* arg : {STOKE_TRAIN_PATH, "--devices", "cpu:1", "--batch", "64", "--steps", "12",
                          "--sync-bn", "--no-progress", "--checkpoint"})
    mpi.push_back(arg);
  mpi.push_back(a);
  const std::string log = temp("mpi.log");
  const Outcome two = finish(start(mpi, log), log);
  ASSERT_EQ(two.status, 0) << two.output;
  EXPECT_NE(two.output.find("on cpu:1 x 2 rank(s), batch 64"), std::string::npos) << two.output;
  const Outcome one = train({"--devices", "cpu:2", "--batch", "64", "--steps", "12", "--sync-bn",
                             "--no-progress", "--checkpoint", b},
                            "mpi-single");
  ASSERT_EQ(one.status, 0) << one.output;
  const Checkpoint x = load_checkpoint(a), y = load_checkpoint(b);
  ASSERT_EQ(x.model.params.size(), y.model.params.size());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < x.model.params.size(); ++i) {
    worst = std::max(worst, std::abs(double{x.model.params[i]} - y.model.params[i]));
    scale = std::max(scale, std::abs(double{y.model.params[i]}));
  }
  EXPECT_LT(worst, 1e-4 * scale) << "largest parameter difference " << worst;
  // BatchNorm running statistics: from the same whole-batch statistics on both.
  ASSERT_EQ(x.model.buffers.size(), y.model.buffers.size());
  for (std::size_t i = 0; i < x.model.buffers.size(); ++i)
    EXPECT_NEAR(x.model.buffers[i], y.model.buffers[i], 1e-4 * (1 + std::abs(y.model.buffers[i])))
        << "running statistic " << i;
}

}  // namespace
}  // namespace stoke::train
