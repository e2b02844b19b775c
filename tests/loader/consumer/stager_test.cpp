// The Stager on its own, over a StageQueue the test writes and host devices: it copies what it
// is given, passes on a batch with a data error uncopied, reports each batch staged in order,
// and stops when the queue says the loader stopped. No loader, no worker.
#include "consumer/stager.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <vector>

#include "device/device_backend.hpp"

namespace stoke::detail {
namespace {

// What the queue saw, kept by the test: the Stager owns (and destroys) its queue.
struct Seen {
  std::mutex mutex;
  std::vector<std::int64_t> staged;
  std::atomic<bool> failed{false};
};

class ScriptedQueue final : public StageQueue {
 public:
  ScriptedQueue(Staging& staging, std::deque<Job> jobs, Seen& seen)
      : staging_(staging), jobs_(std::move(jobs)), seen_(seen) {}
  std::optional<Job> take() override {
    std::lock_guard lock(mutex_);
    if (jobs_.empty()) return std::nullopt;
    const Job job = jobs_.front();
    jobs_.pop_front();
    if (job.copy) staging_.begin(job.slot);  // as the slot table's queue does, under its lock
    return job;
  }
  void staged(const Job& job) override {
    std::lock_guard lock(seen_.mutex);
    seen_.staged.push_back(job.seq);
  }
  void fail(std::exception_ptr) override { seen_.failed = true; }

 private:
  Staging& staging_;
  std::mutex mutex_;
  std::deque<Job> jobs_;
  Seen& seen_;
};

TEST(Stager, CopiesWhatItIsGivenPassesDataErrorsOnUncopiedAndStopsWithTheQueue) {
  // Two slots of 4 one-pixel gray samples on one host device, normalized to float32.
  constexpr std::size_t kStride = 256;
  std::vector<std::uint8_t> slots(2 * kStride, 7);
  StagingConfig c;
  c.samples_per_device = 4;
  c.height = c.width = c.channels = 1;
  c.dtype = DType::kFloat32;
  c.stddev[0] = 1;
  c.slots_base = slots.data();
  c.slot_stride = kStride;
  c.slot_capacity = 2;
  c.labels_offset = 64;
  c.valid_offset = 128;
  Staging staging(make_host_backend(1), c, [](int) {});
  Seen seen;
  {
    Stager stager(
        std::make_unique<ScriptedQueue>(
            staging, std::deque<StageQueue::Job>{{0, 10, true}, {1, 11, false}, {0, 12, true}},
            seen),
        staging, "cpu:1");
  }  // its thread ended when the queue ran dry
  EXPECT_EQ(seen.staged, (std::vector<std::int64_t>{10, 11, 12}));
  EXPECT_FALSE(seen.failed.load());
  EXPECT_EQ(staging.stats().staged_batches, 2);  // the data-error batch was not copied
  const auto* out = static_cast<const float*>(staging.output(0, 0));
  EXPECT_EQ(out[0], 7.0f);  // (7 - 0) / 1
}

}  // namespace
}  // namespace stoke::detail
