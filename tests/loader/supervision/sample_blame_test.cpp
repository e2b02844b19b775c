// SampleBlame on its own: which deaths blame a sample, and what a full poison list does.
#include "supervision/sample_blame.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <vector>

namespace stoke::detail {
namespace {

const WorkerExit kSegv{true, SIGSEGV};
const WorkerExit kKill{true, SIGKILL};

struct Blame {
  explicit Blame(std::size_t capacity) : list(capacity, -1), blame(list, count) {}
  std::vector<std::int64_t> list;
  std::atomic<std::uint32_t> count{0};
  SampleBlame blame;
};

TEST(SampleBlame, ThreeCrashesOnASamplePoisonItUnderSkip) {
  Blame b(4);
  EXPECT_EQ(b.blame.blame(7, "a.png (sample 7)", kSegv, false, OnError::kSkip).kind,
            SampleBlame::Verdict::kRetry);
  EXPECT_EQ(b.blame.blame(7, "a.png (sample 7)", kSegv, false, OnError::kSkip).kind,
            SampleBlame::Verdict::kRetry);
  const auto v = b.blame.blame(7, "a.png (sample 7)", kSegv, false, OnError::kSkip);
  EXPECT_EQ(v.kind, SampleBlame::Verdict::kPoisoned);
  EXPECT_EQ(v.message,
            "a.png (sample 7): crashed_worker (3 workers died on it; last: signal 11 "
            "(Segmentation fault)); skipping it from now on");
  EXPECT_EQ(b.count.load(), 1u);
  EXPECT_EQ(b.list[0], 7);
}

TEST(SampleBlame, OutsideKillsNeedTwelveAndOurTimeoutKillsCountAsCrashes) {
  Blame b(4);
  for (int i = 0; i < 11; ++i)
    EXPECT_EQ(b.blame.blame(1, "s1", kKill, false, OnError::kSkip).kind,
              SampleBlame::Verdict::kRetry);
  EXPECT_EQ(b.blame.blame(1, "s1", kKill, false, OnError::kSkip).kind,
            SampleBlame::Verdict::kPoisoned);
  // A SIGKILL the loader sent for a timeout weighs like a crash.
  b.blame.blame(2, "s2", kKill, true, OnError::kSkip);
  b.blame.blame(2, "s2", kKill, true, OnError::kSkip);
  EXPECT_EQ(b.blame.blame(2, "s2", kKill, true, OnError::kSkip).kind,
            SampleBlame::Verdict::kPoisoned);
}

TEST(SampleBlame, ABlamedSampleActsOnceAndDeathsOnOthersAreCountedApart) {
  Blame b(4);
  for (int i = 0; i < 3; ++i) b.blame.blame(5, "s5", kSegv, false, OnError::kSkip);
  EXPECT_EQ(b.blame.blame(5, "s5", kSegv, false, OnError::kSkip).kind,
            SampleBlame::Verdict::kRetry);  // a worker that was already inside it
  EXPECT_EQ(b.count.load(), 1u);
  EXPECT_EQ(b.blame.blame(6, "s6", kSegv, false, OnError::kSkip).kind,
            SampleBlame::Verdict::kRetry);
}

TEST(SampleBlame, UnderErrorABlamedSampleIsFatal) {
  Blame b(4);
  b.blame.blame(3, "s3", kSegv, false, OnError::kError);
  b.blame.blame(3, "s3", kSegv, false, OnError::kError);
  const auto v = b.blame.blame(3, "s3", kSegv, false, OnError::kError);
  EXPECT_EQ(v.kind, SampleBlame::Verdict::kFatal);
  EXPECT_EQ(v.message,
            "s3: crashed_worker (3 workers died on it; last: signal 11 "
            "(Segmentation fault))");
  EXPECT_EQ(b.count.load(), 0u);
}

TEST(SampleBlame, AFullPoisonListIsAnErrorNeverASilentDrop) {
  Blame b(1);
  for (int i = 0; i < 3; ++i) b.blame.blame(1, "s1", kSegv, false, OnError::kSkip);
  ASSERT_EQ(b.count.load(), 1u);
  b.blame.blame(2, "s2", kSegv, false, OnError::kSkip);
  b.blame.blame(2, "s2", kSegv, false, OnError::kSkip);
  const auto v = b.blame.blame(2, "s2", kSegv, false, OnError::kSkip);
  EXPECT_EQ(v.kind, SampleBlame::Verdict::kFatal);
  EXPECT_NE(v.message.find("s2: crashed_worker (3 workers died on it"), std::string::npos);
  EXPECT_NE(v.message.find("it cannot be skipped: 1 samples already kill workers"),
            std::string::npos)
      << v.message;
  EXPECT_EQ(b.count.load(), 1u);
  EXPECT_EQ(b.list[0], 1);
}

}  // namespace
}  // namespace stoke::detail
