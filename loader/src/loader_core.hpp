#pragma once
// State shared by a Loader and every Batch it handed out, so a Batch held past the Loader's
// destruction still points at mapped memory.
//
// Thread-safety: `mutex` guards `slots` and `released`; `staging` is set before the first batch
// and is itself thread-safe; everything else is immutable after construction.
// Invariants (under mutex): a slot in kHeld is never written by anyone; a slot is handed to
// workers only from kFree and only when !in_transfer (its devices no longer read it); a kOrphan
// slot (abandoned by a reposition) becomes kFree when its last outstanding chunk completes.
// With staging, a slot goes kReady -> kStaging (the stager enqueues its device work) -> kStaged
// -> kHeld; without, kReady -> kHeld.

#include <sys/eventfd.h>
#include <unistd.h>

#include <cassert>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ipc/arena_layout.hpp"
#include "data/bad_input.hpp"
#include "shared_arena.hpp"
#include "device/staging.hpp"

namespace stoke::detail {

struct SlotInfo {
  enum State { kFree, kFilling, kReady, kStaging, kStaged, kHeld, kOrphan };
  State state = kFree;
  bool in_transfer = false;  // staged and some device may still be reading the host bytes
  std::int64_t seq = -1;     // epoch * batches_per_epoch + index
  std::int64_t epoch = 0;
  std::int64_t index = 0;
  int pending = 0;  // chunks not yet completed
  int padded = 0;
  std::string error;  // first data error in this batch (OnError::kError)
};

struct LoaderCore {
  LoaderCore(std::size_t capacity, std::size_t reserved)
      : arena(capacity, reserved),
        view(arena.base()),
        wake_fd(raise_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "an eventfd")) {}
  ~LoaderCore() {
    staging.reset();  // waits for the devices, whose callbacks still lock `mutex`
    ::close(wake_fd);
  }

  // Wakes the supervisor thread (slot released, reposition, shutdown).
  void wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd, &one, sizeof one);
  }

  // Returns a delivered slot to the pool. Any thread.
  void release(int slot) {
    {
      std::lock_guard lock(mutex);
      // Exactly once per delivery: only a BatchLease releases, and only the slot it holds.
      assert(slots[slot].state == SlotInfo::kHeld);
      slots[slot].state = SlotInfo::kFree;
      released += 1;
    }
    cv.notify_all();
    wake();
  }

  // Every device has finished reading the slot's host bytes. Any thread, never under mutex.
  void transfer_done(int slot) {
    {
      std::lock_guard lock(mutex);
      slots[slot].in_transfer = false;
    }
    cv.notify_all();
    wake();
  }

  SharedArena arena;
  ArenaView view;
  const int wake_fd;
  int devices = 1;
  std::vector<int> cuda_ids;  // CUDA ordinals, for GPU devices
  int batch = 0;
  int height = 0, width = 0, channels = 0;

  std::mutex mutex;
  std::condition_variable cv;
  std::vector<SlotInfo> slots;       // guarded by mutex
  std::int64_t released = 0;         // guarded by mutex
  std::unique_ptr<Staging> staging;  // null: host devices reading the arena directly
};

class BatchLease {
 public:
  BatchLease(std::shared_ptr<LoaderCore> core, int slot, std::int64_t epoch, std::int64_t index,
             int padded)
      : core_(std::move(core)), slot_(slot), epoch_(epoch), index_(index), padded_(padded) {}
  ~BatchLease() {
    if (core_->staging) {
      try {
        for (const auto& [dev, stream] : consumer_streams_)
          core_->staging->consumer_used(dev, stream);
      } catch (...) {
        // Only a device that cannot even synchronize a stream fails here; it is broken, and
        // the next staging call on it reports that.
      }
      core_->staging->release(slot_);
    }
    core_->release(slot_);
  }
  BatchLease(const BatchLease&) = delete;
  BatchLease& operator=(const BatchLease&) = delete;

  const LoaderCore& core() const { return *core_; }
  int slot() const { return slot_; }
  std::int64_t epoch() const { return epoch_; }
  std::int64_t index() const { return index_; }
  int padded() const { return padded_; }
  void record_stream(int dev, void* stream) {
    if (!core_->staging || !core_->staging->gpu()) return;
    std::lock_guard lock(streams_mutex_);
    consumer_streams_.emplace_back(dev, stream);
  }

 private:
  std::shared_ptr<LoaderCore> core_;
  int slot_;
  std::int64_t epoch_;
  std::int64_t index_;
  int padded_;
  std::mutex streams_mutex_;
  std::vector<std::pair<int, void*>> consumer_streams_;  // guarded by streams_mutex_
};

}  // namespace stoke::detail
