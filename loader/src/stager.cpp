#include "stager.hpp"

#include "stoke/error.hpp"

namespace stoke::detail {

Stager::Stager(std::shared_ptr<LoaderCore> core, std::string devices)
    : core_(std::move(core)), devices_(std::move(devices)), thread_([this] { run(); }) {}

Stager::~Stager() {
  if (thread_.joinable()) thread_.join();
}

void Stager::run() {
  MutexLock lock(core_->mutex);
  for (;;) {
    if (core_->stop) return;
    // Only a few batches ahead of the consumer: each staged batch holds a set of device
    // buffers, and more than this gains no overlap.
    const int slot = core_->slots.next_to_stage(core_->slots.next_seq() + kStageAhead);
    if (slot < 0) {
      core_->cv.wait(lock);
      continue;
    }
    const std::int64_t seq = core_->slots[slot].seq;
    // A batch with a data error is not copied: the consumer gets the error instead.
    const bool copy = core_->slots[slot].error.empty();
    core_->slots.begin_staging(slot, copy);
    if (copy && !stage(slot)) return;
    if (core_->slots.end_staging(slot, seq)) core_->cv.notify_all();
  }
}

bool Stager::stage(int slot) {
  core_->staging->begin(slot);
  std::exception_ptr error;
  without_lock(core_->mutex, [&] {
    try {
      core_->staging->stage(slot);
    } catch (const Error&) {
      error = std::current_exception();
    } catch (const std::exception& e) {
      error =
          std::make_exception_ptr(Error("copying a batch to " + devices_ + " failed: " + e.what()));
    }
  });
  if (!error) return true;
  core_->fail(error);
  return false;
}

}  // namespace stoke::detail
