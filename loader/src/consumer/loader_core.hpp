#pragma once
// State shared by a Loader and every Batch it handed out, so a Batch held past the Loader's
// destruction still points at mapped memory and still frees its slot.
//
// Thread-safety: `mutex` is the loader's one lock; what it guards is annotated and checked by
// clang's -Wthread-safety. `staging` is set before the first batch and is itself thread-safe;
// the arena's mapping, the view (and so the batch's shape, in its header), the devices and the
// names are immutable after construction.
// Nothing that blocks for long (reserving arena memory, a device wait, a user callback) runs
// with `mutex` held: stream callbacks and Batch releases take it and must not wait behind that.

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "common/fd.hpp"
#include "common/mutex.hpp"
#include "common/text.hpp"
#include "consumer/loader_metrics.hpp"
#include "consumer/shared_arena.hpp"
#include "consumer/slot_table.hpp"
#include "data/dataset_index.hpp"
#include "data/index_file.hpp"
#include "device/staging.hpp"
#include "ipc/arena_layout.hpp"
#include "ipc/arena_plan.hpp"
#include "stoke/options.hpp"

namespace stoke::detail {

// Names a sample in messages: "<path> (sample 7)" for files, "<data> sample 7" for IDX data; a
// mixture's sample by its source's data and its number there ("..., source 1").
class SampleNames {
 public:
  // `data`: each dataset's Options::data, in the arena's order.
  SampleNames(std::vector<std::string> data, const ArenaView& arena)
      : data_(std::move(data)), arena_(arena) {
    for (std::uint32_t d = 0; d < arena.header().dataset_count; ++d)
      views_.push_back(arena.dataset(d));
  }
  std::string operator()(std::int64_t sample) const {
    const auto [d, i] = locate(sample);
    const std::string text = name(d, i);
    if (views_.size() < 2) return text;
    if (text.back() != ')') return text + " (source " + std::to_string(d) + ")";
    return text.substr(0, text.size() - 1) + ", source " + std::to_string(d) + ")";
  }
  // How a reported reason reads after the sample's name: "missing", or "missing (its mask
  // /data/m3.png)" when `code` says the mask was at fault.
  std::string reason(std::int64_t sample, std::uint32_t code) const {
    const auto [d, i] = locate(sample);
    const DatasetView& view = views_[d];
    const BadInput r = reason_of(code);
    std::string text = std::string(bad_input_name(r)) + bad_input_hint(r);
    if (!mask_reason(code) || view.raw() || view.lazy()) return text;
    if (view.mask_kind(i) == kMaskFile)
      return text + " (its mask " + std::string(view.mask_path(i)) + ")";
    return text + " (its mask member)";
  }

 private:
  // The dataset holding `sample`, and its number there.
  std::pair<std::size_t, std::int64_t> locate(std::int64_t sample) const {
    const std::size_t d = arena_.dataset_of(sample);
    return {d, sample - arena_.header().datasets[d].first_id};
  }
  std::string name(std::size_t d, std::int64_t sample) const {
    const DatasetView& view = views_[d];
    if (view.raw()) return redact_url(data_[d]) + " sample " + std::to_string(sample);
    const std::string number = "(sample " + std::to_string(sample);
    if (view.parquet()) {
      const std::string file = view.parquet_image_file(sample);
      return redact_url(view.path(sample)) + " " + number + ", " + view.parquet_row_place(sample) +
             (file.empty() ? "" : ", its image " + redact_url(file)) + ")";
    }
    if (view.lazy() || view.in_shards()) {
      // A shard's member, by its place in the shard: the index keeps no member names, and reading
      // one back from the shard here would hold the loader's lock on a read of a file that may
      // not answer (the one whose read a worker was just killed over).
      const auto [shard, row] = view.shard_of(sample);
      return redact_url(std::string(view.shard_path(shard))) + " " + number + ", number " +
             std::to_string(row) + " of the shard)";
    }
    return redact_url(view.path(sample)) + " " + number + ")";
  }

  std::vector<std::string> data_;
  ArenaView arena_;
  std::vector<DatasetView> views_;
};

struct LoaderCore {
  // What the arena holds after its header and worker records (the index, the pipeline's steps),
  // written at `base` by whoever planned it, before anything reads the arena.
  using Fill = std::function<void(std::uint8_t* base)>;
  // What else is known when the loader is made.
  struct Setup {
    PlanConfig plan;
    std::size_t initial_slots = 0;
    std::int64_t start_epoch = 0;  // the consumer's first position
    std::int64_t start_batch = 0;  // REQUIRES: >= plan.resume_first() in the resumed epoch
    int chunk = 1;                 // samples per unit of work, until the pool's size changes it
    int monitor_window = 0;
    std::chrono::steady_clock::time_point created{};
    DeviceSet devices;  // what batches are split over
    // Each dataset's Options::data (a mixture's sources' in order), as sample names show it.
    std::vector<std::string> data;
    // Makes the staging of batches to the devices from the finished core (its arena, its
    // signal_change()); empty: host devices reading the arena directly.
    std::function<std::unique_ptr<Staging>(LoaderCore&)> staging;
    // The dataset indexes the arena's header describes, one per record (none: for tests of raw
    // arenas).
    std::vector<std::shared_ptr<const MappedIndex>> indexes;
    // A mixture's plan (its batches then follow it instead of `plan`'s).
    std::optional<MixtureConfig> mixture;
  };

  // An arena laid out as `h` (written at its start, every worker record made empty, then
  // `fill`), its first slots reserved, the consumer at the start position.
  LoaderCore(const ArenaHeader& h, const Fill& fill, const Setup& setup)
      : indexes(setup.indexes),
        arena(h.total_size, arena_bytes_for(h, setup.initial_slots)),
        view(written(arena, h, fill), mappings(indexes)),
        wake_fd(raise_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "an eventfd")),
        devices(setup.devices),
        names(setup.data, view),
        slots(setup.mixture ? SlotTable(*setup.mixture, view, setup.initial_slots,
                                        setup.start_epoch, setup.start_batch)
                            : SlotTable(setup.plan, view, setup.initial_slots, setup.start_epoch,
                                        setup.start_batch)),
        metrics(setup.monitor_window, setup.created),
        reserved_bytes(arena.reserved()) {
    slots.rechunk(setup.chunk);  // (no other thread exists yet)
    if (!setup.staging) return;
    try {
      staging = setup.staging(*this);
    } catch (...) {
      ::close(wake_fd);  // the destructor does not run
      throw;
    }
  }
  ~LoaderCore() {
    staging.reset();  // waits for the devices, whose callbacks still signal wake_fd
    ::close(wake_fd);
  }

  // Wakes the supervisor thread (slot released, reposition, shutdown). Any thread.
  void wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd, &one, sizeof one);
  }
  // Something every loader thread may wait for changed (a slot, the position, the stop): wakes
  // the supervisor, the stager and an in-process consumer. Any thread, any lock held or none.
  // (Without the lock, a notification can fall between a waiter's check and its wait: waiters
  // that can be signalled so, like an in-process consumer waiting for a device, also poll.)
  void signal_change() const {
    wake();
    cv.notify_all();
  }

  // Returns a delivered slot to the pool. Any thread.
  void release(int slot) EXCLUDES(mutex) {
    {
      MutexLock lock(mutex);
      slots.release(slot);
      released += 1;
    }
    signal_change();
  }

  // The consumer's recorded streams may still read the slot's host bytes: it goes back to the
  // workers only once every device's queue has passed their waits. Any thread.
  void hold_for_consumer(int slot) EXCLUDES(mutex) {
    {
      MutexLock lock(mutex);
      slots.hold(slot);
      staging->hold(slot);
    }
    staging->pass_hold(slot);  // enqueues device work: never under the lock
  }

  // Clears in_transfer on every slot no device reads any more, before slots are assigned.
  void collect_transfers() REQUIRES(mutex) {
    if (!staging) return;
    for (int i = 0; i < static_cast<int>(slots.size()); ++i) {
      if (slots[i].in_transfer && !staging->transferring(i)) slots.transfer_done(i);
    }
  }

  // A chunk is done (by a worker, or in-process): its timings counted, its data error (the
  // batch's first) kept, and waiters woken when the batch became ready.
  void complete(const Task& task, const Completion& done) REQUIRES(mutex) {
    metrics.chunk_done(done, static_cast<int>(task.count));
    std::string error;
    if (done.status == Completion::kDataError && slots[static_cast<int>(task.slot)].error.empty()) {
      error = names(done.error_sample) + ": " + names.reason(done.error_sample, done.reason) +
              (view.header().on_error_skip != 0 ? " (and no substitute could be produced)" : "");
    }
    if (slots.complete(task, std::move(error))) cv.notify_all();
  }

  // Stops the loader with `error`, the loader's one sticky error (the first one wins: a data
  // error under OnError::kError, a worker that cannot run, a log callback that threw, a device
  // that failed): every waiting thread wakes, stops, and the consumer sees it from every call.
  void fail(std::exception_ptr error) REQUIRES(mutex) {
    if (!fatal) fatal = std::move(error);
    stop = true;
    signal_change();
  }
  void rethrow_if_failed() const REQUIRES(mutex) {
    if (fatal) std::rethrow_exception(fatal);
  }

  // Grows the slot table to n slots (at most the arena's capacity), reserving their memory
  // first, outside `mutex`: posix_fallocate of tens of MiB must not hold up a stream callback
  // or a release. True when this call grew the table. Throws Error when the memory cannot be
  // had; the table is unchanged then.
  bool add_slots(std::size_t n) EXCLUDES(mutex, reserve_mutex) {
    const ArenaHeader& h = view.header();
    n = std::min<std::size_t>(n, h.slot_capacity);
    MutexLock serial(reserve_mutex);
    arena.reserve(arena_bytes_for(h, n));
    bool grew = false;
    {
      MutexLock lock(mutex);
      grew = n > slots.size();
      slots.add(n);
      reserved_bytes = arena.reserved();
    }
    wake();
    return grew;
  }

  // The dataset indexes the view's dataset() reads: kept mapped while a Batch may name a sample.
  const std::vector<std::shared_ptr<const MappedIndex>> indexes;
  SharedArena arena;
  const ArenaView view;  // the batch's shape and every array's place: view.header()
  const int wake_fd;
  const DeviceSet devices;
  const SampleNames names;

  Mutex reserve_mutex ACQUIRED_BEFORE(mutex);  // serializes arena.reserve()
  Mutex mutex;
  mutable CondVar cv;  // signalled whenever a slot changes, the position moves or the loader stops
  SlotTable slots GUARDED_BY(mutex);
  LoaderMetrics metrics GUARDED_BY(mutex);
  std::int64_t released GUARDED_BY(mutex) = 0;
  std::size_t reserved_bytes GUARDED_BY(mutex) = 0;
  bool stop GUARDED_BY(mutex) = false;
  std::exception_ptr fatal GUARDED_BY(mutex);
  // Null: host devices reading the arena directly. Made by the constructor (Setup::staging),
  // itself thread-safe.
  std::unique_ptr<Staging> staging;

 private:
  static std::vector<ArenaView::Mapping> mappings(
      const std::vector<std::shared_ptr<const MappedIndex>>& indexes) {
    std::vector<ArenaView::Mapping> out;
    for (const auto& index : indexes) out.push_back({index->bytes(), index->pixels()});
    return out;
  }
  static std::uint8_t* written(SharedArena& a, const ArenaHeader& h, const Fill& fill) {
    std::memcpy(a.base(), &h, sizeof h);
    const ArenaView view(a.base());
    for (std::uint32_t i = 0; i < h.worker_capacity; ++i) new (&view.worker(i)) WorkerRecord();
    fill(a.base());
    return a.base();
  }
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
      if (!consumer_streams_.empty()) core_->hold_for_consumer(slot_);
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
  void record_stream(int dev, void* stream) EXCLUDES(streams_mutex_) {
    if (!core_->staging || !core_->staging->gpu()) return;
    MutexLock lock(streams_mutex_);
    consumer_streams_.emplace_back(dev, stream);
  }

 private:
  std::shared_ptr<LoaderCore> core_;
  int slot_;
  std::int64_t epoch_;
  std::int64_t index_;
  int padded_;
  Mutex streams_mutex_;
  // Read unlocked by the destructor: no other reference to the lease remains by then.
  std::vector<std::pair<int, void*>> consumer_streams_;
};

}  // namespace stoke::detail
