#include "consumer/stager.hpp"

#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

class SlotStageQueue final : public StageQueue {
 public:
  explicit SlotStageQueue(std::shared_ptr<LoaderCore> core) : core_(std::move(core)) {}

  std::optional<Job> take() override EXCLUDES(core_->mutex) {
    MutexLock lock(core_->mutex);
    for (;;) {
      if (core_->stop) return std::nullopt;
      // Only a few batches ahead of the consumer: each staged batch holds a set of device
      // buffers, and more than this gains no overlap.
      const int slot = core_->slots.next_to_stage(core_->slots.next_seq() + kStageAhead);
      if (slot < 0) {
        core_->cv.wait(lock);
        continue;
      }
      const SlotInfo& info = core_->slots[slot];
      const Job job{slot, info.seq, info.error.empty(), info.epoch,
                    core_->slots.first_position(info.epoch, info.index)};
      core_->slots.begin_staging(slot, job.copy);
      if (job.copy) core_->staging->begin(slot);
      return job;
    }
  }
  void staged(const Job& job) override EXCLUDES(core_->mutex) {
    MutexLock lock(core_->mutex);
    // A reposition may have dropped the batch meanwhile; in_transfer still guards the slot.
    if (core_->slots.end_staging(job.slot, job.seq)) core_->cv.notify_all();
  }
  void fail(std::exception_ptr error) override EXCLUDES(core_->mutex) {
    MutexLock lock(core_->mutex);
    core_->fail(std::move(error));
  }

 private:
  const std::shared_ptr<LoaderCore> core_;
};

}  // namespace

std::unique_ptr<StageQueue> stage_queue(std::shared_ptr<LoaderCore> core) {
  return std::make_unique<SlotStageQueue>(std::move(core));
}

Stager::Stager(std::unique_ptr<StageQueue> queue, Staging& staging, std::string devices,
               const BatchMixer* mixer)
    : queue_(std::move(queue)),
      staging_(staging),
      devices_(std::move(devices)),
      mixer_(mixer),
      thread_([this] { run(); }) {}

Stager::~Stager() {
  if (thread_.joinable()) thread_.join();
}

void Stager::run() {
  while (const std::optional<StageQueue::Job> job = queue_->take()) {
    std::exception_ptr error;
    try {
      if (job->copy && mixer_ != nullptr) mixer_->write(job->slot, job->epoch, job->first_position);
      if (job->copy) staging_.stage(job->slot);
    } catch (const Error&) {
      error = std::current_exception();
    } catch (const std::exception& e) {
      error =
          std::make_exception_ptr(Error("copying a batch to " + devices_ + " failed: " + e.what()));
    }
    if (error) {
      queue_->fail(error);
      return;
    }
    queue_->staged(*job);
  }
}

}  // namespace stoke::detail
