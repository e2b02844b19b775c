// The consumer's side of the loader: next(), set_epoch(), state(), stats().

#include <algorithm>

#include "loader_impl.hpp"

namespace stoke {

using namespace detail;

std::optional<Batch> Loader::Impl::next() {
  std::optional<Batch> batch;
  try {
    batch = next_unflushed();
  } catch (...) {
    log_.flush();
    throw;
  }
  log_.flush();
  if (const std::exception_ptr e = log_.error()) std::rethrow_exception(e);
  return batch;
}

void Loader::Impl::rethrow_if_failed() const {
  if (core_->fatal) std::rethrow_exception(core_->fatal);
}

std::optional<Batch> Loader::Impl::next_unflushed() {
  const Clock::time_point entered = Clock::now();
  MutexLock lock(core_->mutex);
  SlotTable& slots = core_->slots;
  if (!data_error_.empty()) throw DataError(data_error_);
  if (slots.epoch_exhausted()) {
    slots.start_next_epoch();
    metrics_.interrupt();
    return std::nullopt;
  }
  const std::int64_t seq = slots.next_seq();
  const SlotInfo::State deliverable = core_->staging ? SlotInfo::kStaged : SlotInfo::kReady;
  for (;;) {
    rethrow_if_failed();
    int slot = slots.slot_of(seq);
    if (slot >= 0 && slots[slot].state == deliverable) return deliver(slot, entered);
    if (slot < 0 && slots.assign_seq() == seq) {
      if (slots.all_held()) {
        grow_for_consumer();
        continue;
      }
      if (inline_runner_) {
        slot = slots.free_slot();
        if (slot >= 0) {
          slots.assign(slot);
          fill_inline();
          continue;
        }
      } else {
        core_->wake();
      }
    }
    core_->cv.wait(lock);
  }
}

void Loader::Impl::grow_for_consumer() {
  const std::size_t n = core_->slots.size();
  const ArenaHeader& h = core_->view.header();
  if (n >= h.slot_capacity)
    throw Error("the consumer holds all " + std::to_string(n) + " batch slots (" +
                std::to_string(h.slot_stride >> 20) +
                " MiB each) and the memory budget allows no more; release batches you no "
                "longer need (drop them or call Batch::release) or raise memory_budget");
  // Reserving memory takes a while (posix_fallocate): never under the lock. Throws when the
  // memory cannot be had.
  without_lock(core_->mutex, [&] { core_->add_slots(n + 1); });
  log_.post("the consumer holds all " + std::to_string(n) + " batch slots; added slot " +
            std::to_string(n + 1) + " of at most " + std::to_string(h.slot_capacity));
}

Batch Loader::Impl::deliver(int slot, Clock::time_point entered) {
  const SlotInfo& s = core_->slots.deliver(slot);
  core_->cv.notify_all();  // the stager's horizon moved
  if (!s.error.empty()) {
    data_error_ = s.error;
    core_->slots.release(slot);
    core_->wake();
    throw DataError(data_error_);
  }
  // Counted and logged when delivered, so prefetching ahead (or a batch abandoned by set_epoch)
  // never reports a file twice, and every replaced file is named.
  const auto u = static_cast<std::uint32_t>(slot);
  const std::uint8_t* bad = core_->view.bad(u);
  const std::int64_t* planned = core_->view.planned_ids(u);
  for (int j = 0; j < options_.batch; ++j) {
    if (bad[j] == 0) continue;
    const auto reason = static_cast<BadInput>(bad[j]);
    metrics_.skipped(reason);
    log_.post("skipped " + describe_sample(planned[j]) + ": " + bad_input_name(reason) +
              bad_input_hint(reason) + " (replaced by sample " +
              std::to_string(core_->view.ids(u)[j]) + ")");
  }
  metrics_.delivered(entered, Clock::now(), options_.batch, s.padded);
  return Batch(std::make_shared<BatchLease>(core_, slot, s.epoch, s.index, s.padded));
}

void Loader::Impl::complete(const Task& task, const Completion& done) {
  metrics_.chunk_done(done, static_cast<int>(task.count));
  std::string error;
  if (done.status == Completion::kDataError && core_->slots[task.slot].error.empty()) {
    error = describe_sample(done.error_sample) + ": " +
            bad_input_name(static_cast<BadInput>(done.reason)) +
            bad_input_hint(static_cast<BadInput>(done.reason)) +
            (options_.on_error == OnError::kSkip ? " (and no substitute could be produced)" : "");
  }
  if (core_->slots.complete(task, std::move(error))) core_->cv.notify_all();
}

std::string Loader::Impl::describe_sample(std::int64_t sample) const {
  if (dataset_->raw()) return options_.data + " sample " + std::to_string(sample);
  return std::string(dataset_->path(sample)) + " (sample " + std::to_string(sample) + ")";
}

void Loader::Impl::fill_inline() {
  std::deque<Task>& pending = core_->slots.pending();
  std::vector<Task> tasks(pending.begin(), pending.end());
  pending.clear();
  std::vector<Completion> done;
  done.reserve(tasks.size());
  without_lock(core_->mutex, [&] {
    for (const Task& t : tasks) done.push_back(inline_runner_->run(t));
  });
  for (std::size_t i = 0; i < tasks.size(); ++i) complete(tasks[i], done[i]);
}

void Loader::Impl::set_epoch(std::int64_t epoch) {
  if (epoch < 0 || epoch > kMaxEpoch)
    throw ConfigError("epoch must be in 0.." + std::to_string(kMaxEpoch) + ", got " +
                      std::to_string(epoch));
  {
    MutexLock lock(core_->mutex);
    core_->slots.reposition(epoch, 0);
    metrics_.interrupt();
  }
  core_->wake();
  core_->cv.notify_all();  // the stager's horizon moved
}

LoaderState Loader::Impl::state() const {
  MutexLock lock(core_->mutex);
  LoaderState s;
  s.seed = options_.seed;
  s.epoch = core_->slots.epoch();
  s.next_batch = core_->slots.next_batch();
  s.dataset_size = config_.plan.samples;
  s.global_batch = std::int64_t{options_.batch} * config_.plan.world;
  return s;
}

Stats Loader::Impl::stats() const {
  MutexLock lock(core_->mutex);
  Stats s = metrics_.snapshot(Clock::now(), pool_size_, options_.batch);
  s.workers_starting = starting_;
  s.workers_auto = workers_auto_;
  s.prefetch_auto = config_.prefetch_auto;
  s.slots = static_cast<int>(core_->slots.size());
  s.arena_bytes = static_cast<std::int64_t>(core_->reserved_bytes);
  s.released = core_->released;
  if (core_->staging) {
    const StagingStats t = core_->staging->stats();
    s.staging = t.mode;
    s.staging_note = t.fallback_reason;
    s.staged_batches = t.staged_batches;
    s.dma_copies = t.dma_copies;
    s.dma_bytes = t.dma_bytes;
    s.host_copy_bytes = t.host_copy_bytes;
    s.pinned_bytes = t.pinned_bytes;
    s.device_bytes = t.device_bytes;
  }
  s.verdict = stall_verdict(s, {config_.cores, options_.stall_target,
                                workers_auto_ ? limit_workers_ : 0, limit_reason_});
  return s;
}

}  // namespace stoke
