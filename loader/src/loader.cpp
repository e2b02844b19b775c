// The consumer's side of the loader: next(), set_epoch(), state(), stats().

#include <algorithm>
#include <iterator>

#include "data/shard_tables.hpp"
#include "loader_impl.hpp"
#include "stoke/names.hpp"

namespace stoke {

using namespace detail;

namespace {
// How often an in-process consumer looks again for a slot the devices finished reading.
constexpr auto kTransferPoll = std::chrono::milliseconds(1);
}  // namespace

std::optional<Batch> Loader::Impl::next() {
  std::optional<Batch> batch;
  try {
    batch = next_unflushed();
  } catch (...) {
    flush_log();
    throw;
  }
  flush_log();  // a callback that throws here is reported by the next call
  return batch;
}

std::optional<Batch> Loader::Impl::next_unflushed() {
  const Clock::time_point entered = time_->now();
  MutexLock lock(core_->mutex);
  SlotTable& slots = core_->slots;
  // The loader's error (a data error, a log callback that threw, ...) stops it before another
  // batch is taken, so that a caller who catches and retries loses none.
  core_->rethrow_if_failed();
  if (slots.epoch_exhausted()) {
    slots.start_next_epoch();
    core_->metrics.interrupt();
    return std::nullopt;
  }
  const std::int64_t seq = slots.next_seq();
  const SlotInfo::State deliverable = core_->staging ? SlotInfo::kStaged : SlotInfo::kReady;
  for (;;) {
    core_->rethrow_if_failed();
    int slot = slots.slot_of(seq);
    if (slot >= 0 && slots[slot].state == deliverable) return deliver(slot, entered);
    if (slot < 0 && slots.assign_seq() == seq) {
      if (slots.all_held()) {
        grow_for_consumer();
        continue;
      }
      if (inline_runner_) {
        core_->collect_transfers();
        slot = slots.free_slot();
        if (slot >= 0 && slots.may_assign()) {
          slots.assign(slot);
          fill_inline();
          continue;
        }
        // The slots still being read by a device come free without the lock (signal_change),
        // and so do a batch's shards (the prefetcher's signal), so this wait polls too.
        core_->cv.wait_for(lock, kTransferPoll);
        continue;
      }
      core_->wake();
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
  // memory cannot be had. Another thread may have grown the table meanwhile.
  if (!without_lock(core_->mutex, [&] { return core_->add_slots(n + 1); })) return;
  log_.post("the consumer holds all " + std::to_string(n) + " batch slots; added slot " +
            std::to_string(n + 1) + " of at most " + std::to_string(h.slot_capacity));
}

Batch Loader::Impl::deliver(int slot, Clock::time_point entered) {
  const SlotInfo& s = core_->slots.deliver(slot);
  core_->cv.notify_all();  // the stager's horizon moved
  if (!s.error.empty()) {  // OnError::kError: the loader stops with it
    const std::string error = s.error;
    core_->slots.release(slot);
    core_->fail(std::make_exception_ptr(DataError(error)));
    core_->rethrow_if_failed();
  }
  // Counted and logged when delivered, so prefetching ahead (or a batch abandoned by set_epoch)
  // never reports a file twice, and every replaced file is named.
  const auto u = static_cast<std::uint32_t>(slot);
  const std::uint8_t* bad = core_->view.bad(u);
  const std::int64_t* planned = core_->view.planned_ids(u);
  for (int j = 0; j < options_.batch; ++j) {
    if (bad[j] == 0) continue;
    core_->metrics.skipped(reason_of(bad[j]));
    if (diagnosis_ && reason_of(bad[j]) == detail::BadInput::kBadShard)
      diagnosis_->diagnose(planned[j]);
    log_.post("skipped " + core_->names(planned[j]) + ": " +
              core_->names.reason(planned[j], bad[j]) + " (replaced by sample " +
              std::to_string(core_->view.ids(u)[j]) + ")");
  }
  core_->metrics.delivered(entered, time_->now(), options_.batch, s.padded);
  if (config_.mixture) {
    if (s.epoch != source_epoch_)
      std::fill(source_epoch_samples_.begin(), source_epoch_samples_.end(), 0);
    source_epoch_ = s.epoch;
    const std::int32_t* sources = core_->view.sources(u);
    const std::uint8_t* valid = core_->view.valid(u);
    for (int j = 0; j < options_.batch; ++j) {
      if (valid[j] == 0) continue;
      const auto from = static_cast<std::size_t>(sources[j]);
      source_samples_[from] += 1;
      source_epoch_samples_[from] += 1;
    }
  }
  if (options_.decode != Decode::kCpu) {
    const JpegJob* jobs = core_->view.jpeg_jobs(u);
    for (int j = 0; j < options_.batch; ++j) {
      if (jobs[j].by == JpegJob::kDevice)
        ++device_decoded_;
      else if (jobs[j].why < std::size(worker_decoded_))
        ++worker_decoded_[jobs[j].why];
    }
    // Found by the devices' decoders as they ran (on a GPU, possibly batches later).
    const std::int64_t failed = core_->staging->stats().device_decode_failed;
    if (failed > decode_failures_logged_) {
      log_.post(std::to_string(failed - decode_failures_logged_) +
                " sample(s) the devices could not decode, by nvJPEG or by the reference "
                "decoder (damage past the header, which is all a worker reads under decode=" +
                decode_name(options_.decode) + "): their pixels are 0");
      decode_failures_logged_ = failed;
    }
  }
  return Batch(std::make_shared<BatchLease>(core_, slot, s.epoch, s.index, s.padded));
}

void Loader::Impl::fill_inline() {
  const std::vector<Task> tasks = core_->slots.take_tasks();
  std::vector<Completion> done;
  done.reserve(tasks.size());
  without_lock(core_->mutex, [&] {
    for (const Task& t : tasks) done.push_back(inline_runner_->run(t));
  });
  for (std::size_t i = 0; i < tasks.size(); ++i) core_->complete(tasks[i], done[i]);
}

void Loader::Impl::set_epoch(std::int64_t epoch) {
  if (epoch < 0 || epoch > kMaxEpoch)
    throw ConfigError("epoch must be in 0.." + std::to_string(kMaxEpoch) + ", got " +
                      std::to_string(epoch));
  {
    MutexLock lock(core_->mutex);
    core_->slots.reposition(epoch, 0);
    core_->metrics.interrupt();
  }
  core_->signal_change();  // the supervisor reassigns slots, the stager's horizon moved
}

LoaderState Loader::Impl::state() const {
  MutexLock lock(core_->mutex);
  LoaderState s;
  s.seed = options_.seed;
  s.epoch = core_->slots.epoch();
  s.next_batch = core_->slots.next_batch();
  s.position = core_->slots.position(s.epoch, s.next_batch);
  s.sources = core_->slots.consumed(s.epoch, s.next_batch);
  s.dataset_size = config_.plan.samples;
  s.global_batch = std::int64_t{options_.batch} * config_.plan.world;
  s.repeats = config_.plan.repeats;
  return s;
}

void Loader::Impl::resize_workers(int n) {
  if (!supervisor_)
    throw ConfigError(
        "this loader runs the pipeline in-process (workers 0); it has no pool to "
        "resize");
  if (n < 1 || n > config_.capacity)
    throw ConfigError("resize_workers: the pool takes 1.." + std::to_string(config_.capacity) +
                      " workers, got " + std::to_string(n));
  supervisor_->request_size(n);
}

Stats Loader::Impl::stats() const {
  // The pool's figures come under the same lock, taken twice: a snapshot, not an atomic one.
  const Supervisor::PoolView pool = supervisor_ ? supervisor_->view() : Supervisor::PoolView{};
  MutexLock lock(core_->mutex);
  Stats s = core_->metrics.snapshot(time_->now(), pool.workers, options_.batch);
  s.workers_starting = pool.starting;
  s.workers_auto = pool.workers_auto;
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
    s.device_decode_failed = t.device_decode_failed;
    s.device_decode_s = static_cast<double>(t.device_decode_ns) * 1e-9;
  }
  s.device_decoded = device_decoded_;
  s.worker_decoded_hybrid = worker_decoded_[JpegJob::kHybrid];
  s.worker_decoded_not_jpeg = worker_decoded_[JpegJob::kNotJpeg];
  s.worker_decoded_unsupported = worker_decoded_[JpegJob::kUnsupported];
  s.worker_decoded_too_large = worker_decoded_[JpegJob::kTooLarge];
  s.shard_cache = shard_cache_;
  s.relayout_cache = relayout_cache_;
  s.source_samples = source_samples_;
  s.source_samples_epoch = source_epoch_samples_;
  if (prefetcher_) {
    const ShardCacheStats c = prefetcher_->stats();
    s.cache_bytes_fetched = static_cast<std::int64_t>(c.bytes_fetched);
    s.cache_hits = c.hits;
    s.cache_misses = c.misses;
    s.cache_evictions = c.evictions;
    s.cache_fetch_wait_s = c.fetch_wait_s;
  }
  if (gpus_) {
    s.gpu_monitor = gpus_->status();
    s.gpus = gpus_->snapshot();
  }
  s.verdict = stall_verdict(s, {config_.cores, options_.stall_target,
                                pool.workers_auto ? pool.limit_workers : 0, pool.limit_reason});
  return s;
}

}  // namespace stoke
