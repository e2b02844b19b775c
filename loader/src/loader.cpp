#include "stoke/loader.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <thread>
#include <utility>

#include "build_info.hpp"
#include "loader_impl.hpp"
#include "stoke/cores.hpp"
#include "worker/worker_exit_codes.hpp"
#include "worker/worker_locate.hpp"

namespace stoke {

using namespace detail;

namespace {

constexpr int kTasksInFlightPerWorker = 4;
constexpr int kMaxWorkers = 512;
constexpr std::int64_t kMaxEpoch = std::int64_t{1} << 32;  // keeps epoch * batches in range
constexpr int kMaxDeathsWithoutProgress = 5;  // in a row, before reaching the handshake
constexpr int kMaxDeathsPerSample = 3;  // crashes on one sample, then skipped (kSkip) or fatal
constexpr int kMaxKillsPerSample = 12;  // external SIGKILLs on one sample, likewise
constexpr std::uint32_t kPoisonCapacity = 4096;
constexpr std::size_t kDefaultMemoryBudget = std::size_t{2} << 30;
constexpr auto kStartupTimeout = std::chrono::seconds(30);
constexpr std::int64_t kStageAhead = 2;  // batches staged beyond the consumer's next one

// A loader needs a memfd, two eventfds and a pidfd per worker, all moved above fd 10. Checking
// up front turns a too-low `ulimit -n` into a message instead of a failure halfway through.
void check_descriptor_limit(int workers) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  std::error_code ec;
  long open = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++open;
  const long needed = 3 + workers + 1;  // +1: the directory listing's own descriptor, above
  const long limit_n = static_cast<long>(limit.rlim_cur);
  if (limit_n < 16 || open + needed > limit_n) {
    throw ConfigError("the open-file limit (ulimit -n) is " + std::to_string(limit_n) + " and " +
                      std::to_string(open) + " descriptors are open, but a loader with " +
                      std::to_string(workers) + " workers needs " + std::to_string(needed) +
                      " more (and at least 16 in all); raise the limit (ulimit -n 4096) or "
                      "use fewer workers");
  }
}

void default_log(std::string_view line) {
  std::fprintf(stderr, "stoke: %.*s\n", static_cast<int>(line.size()), line.data());
}

// The message for a worker exit that no restart can cure, or "" for any other exit.
std::string incurable_exit(const WorkerExit& exit) {
  if (exit.signaled) return "";
  if (exit.status == kExitBadArena)
    return "stoke-worker could not map the shared arena; check memory limits (ulimit -v, "
           "cgroup memory) and seccomp filters";
  return "";
}

// A slot holding a batch that has not been delivered yet.
bool in_progress(SlotInfo::State s) {
  return s == SlotInfo::kFilling || s == SlotInfo::kReady || s == SlotInfo::kStaging ||
         s == SlotInfo::kStaged;
}

void drain_eventfd(int fd) {
  std::uint64_t v;
  while (::read(fd, &v, sizeof v) > 0) {
  }
}

}  // namespace

// ---- construction --------------------------------------------------------------------------

void Loader::Impl::log(const std::string& line) const {
  options_.log ? options_.log(line) : default_log(line);
}

Pipeline Loader::Impl::choose_pipeline(const Options& o, const DatasetIndex& index) {
  if (o.pipeline) return *o.pipeline;
  if ((o.height > 0) != (o.width > 0) || o.height < 0 || o.width < 0)
    throw ConfigError("set both height and width (e.g. 224x224), or neither for the default size");
  const bool raw = index.kind == DatasetKind::kRaw;
  const int h = o.height > 0 ? o.height : (raw ? index.height : 224);
  const int w = o.width > 0 ? o.width : (raw ? index.width : 224);
  const int c = raw ? index.channels : 3;
  if (o.augment == Augment::kEvaluation) return Pipeline::evaluation(h, w, c, raw);
  if (!raw) return Pipeline::training(h, w, c, false);
  // Small images: bring them to the output size first, then the pad-crop-flip recipe.
  Pipeline p(h, w, c);
  if (h != index.height || w != index.width) p.resize(h, w);
  p.pad_random_crop(std::max(1, std::min(h, w) / 7), h, w).horizontal_flip(0.5f);
  return p;
}

PlanConfig Loader::Impl::plan_config(const Options& o, std::int64_t samples) {
  RankInfo ranks = rank_from_environment();
  if (o.rank >= 0) ranks.rank = o.rank;
  if (o.world >= 0) ranks.world = o.world;
  return PlanConfig{samples,     o.batch, o.devices.count, ranks.rank,
                    ranks.world, o.seed,  o.shuffle,       o.last_batch};
}

Loader::Impl::Impl(Options options, DatasetIndex index, Clock::time_point created)
    : options_(std::move(options)),
      pipeline_(choose_pipeline(options_, index)),
      plan_(plan_config(options_, index.size)),
      bpe_(plan_.batches_per_epoch()),
      workers_auto_(options_.workers == kAuto),
      prefetch_auto_(options_.prefetch == kAuto),
      capacity_(options_.workers == 0 ? 0 : kMaxWorkers),
      cores_(available_cores()),
      created_(created),
      pool_size_(workers_auto_ ? 1 : options_.workers),
      monitor_(options_.monitor_window),
      pool_changed_(created) {
  if (workers_auto_) {
    max_workers_ = options_.max_workers > 0 ? std::min(options_.max_workers, kMaxWorkers) : cores_;
    max_workers_reason_ =
        options_.max_workers > 0
            ? "max_workers " + std::to_string(options_.max_workers)
            : std::to_string(cores_) + (cores_ == 1 ? " core" : " cores") + " available";
    limit_workers_ = max_workers_;
    limit_reason_ = max_workers_reason_;
  }
  if (index.kind == DatasetKind::kRaw)
    pipeline_.validate(index.height, index.width);
  else
    pipeline_.validate(0, 0);
  const int b = options_.batch;
  // One chunk per worker per batch: fewer, larger units cost less coordination, and with
  // several batches in flight every worker stays busy. (Measured on Fashion-MNIST with 2
  // workers: batch/4-sized chunks delivered 10-25% fewer samples per second.)
  chunk_ = chunk_for(pool_size_);
  for (const RejectedFile& r : index.rejected) {
    if (options_.on_error == OnError::kError)
      throw DataError(r.path + ": " + bad_input_name(r.reason) + " (found while indexing)");
    stats_.skipped += 1;
    stats_.skipped_by_reason[bad_input_name(r.reason)] += 1;
    log("skipped " + r.path + " while indexing: " + bad_input_name(r.reason));
  }
  lay_out_arena(index);
  set_up_staging();
  index = DatasetIndex{};  // the arena holds it now
  dataset_ = std::make_unique<DatasetView>(core_->view);
  if (options_.resume) {
    const LoaderState& s = *options_.resume;
    if (s.dataset_size != plan_.config().samples ||
        s.global_batch != std::int64_t{b} * plan_.config().world || s.seed != options_.seed)
      throw ConfigError("cannot resume from '" + s.serialize() +
                        "': it was saved with another "
                        "dataset size, global batch or seed (now dataset_size=" +
                        std::to_string(plan_.config().samples) +
                        " global_batch=" + std::to_string(std::int64_t{b} * plan_.config().world) +
                        " seed=" + std::to_string(options_.seed) + ")");
    if (s.epoch < 0 || s.epoch > kMaxEpoch || s.next_batch < 0 || s.next_batch > bpe_)
      throw ConfigError("cannot resume from '" + s.serialize() + "': next_batch must be in 0.." +
                        std::to_string(bpe_));
    epoch_ = s.epoch;
    next_batch_ = s.next_batch;
    assign_seq_ = epoch_ * bpe_ + next_batch_;
  }
  if (options_.devices.kind == DeviceSet::Kind::kCuda)
    gpu_monitor_ = std::make_unique<GpuActivityMonitor>(make_nvml_source(), options_.devices.ids);
  if (pool_size_ == 0) {
    inline_runner_ = std::make_unique<ChunkRunner>(core_->view);
    start_stager();
    return;
  }
  const std::string exe = locate_worker(options_.worker_path);
  done_fd_ = raise_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "an eventfd");
  try {
    pool_ = std::make_unique<WorkerPool>(core_->view, core_->arena.fd(), done_fd_, exe);
    const auto n = static_cast<std::size_t>(capacity_);
    in_flight_.resize(n);
    deaths_without_progress_.assign(n, 0);
    front_since_.assign(n, Clock::time_point{});
    timed_out_.assign(n, false);
    role_.assign(n, Role::kIdle);
    stop_sent_.assign(n, false);
    std::promise<void> started;
    auto ready = started.get_future();
    supervisor_ = std::thread([this, &started] { supervise(started); });
    try {
      ready.get();
    } catch (...) {
      supervisor_.join();
      throw;
    }
  } catch (...) {
    ::close(done_fd_);  // ~Impl does not run for a constructor that throws
    throw;
  }
  start_stager();
}

// The stager runs only when batches go through device buffers; it starts last because a
// constructor that throws would leave a running thread behind.
void Loader::Impl::start_stager() {
  if (core_->staging) stager_ = std::thread([this] { stage_loop(); });
}

void Loader::Impl::lay_out_arena(const DatasetIndex& index) {
  const int b = options_.batch;
  ArenaHeader h;
  std::snprintf(h.version, sizeof h.version, "%s", worker_version_tag().c_str());
  h.dataset_kind = index.kind;
  h.on_error_skip = options_.on_error == OnError::kSkip ? 1 : 0;
  h.max_pixels = options_.max_pixels;
  h.sample_count = index.size;
  h.raw_height = index.height;
  h.raw_width = index.width;
  h.raw_channels = index.channels;
  h.seed = options_.seed;
  h.out_height = pipeline_.output_height();
  h.out_width = pipeline_.output_width();
  h.out_channels = pipeline_.output_channels();
  h.step_count = static_cast<std::uint32_t>(pipeline_.steps().size());
  h.batch = static_cast<std::uint32_t>(b);
  h.worker_capacity = static_cast<std::uint32_t>(capacity_);
  h.worker_stride = align_up(sizeof(WorkerRecord), 64);
  h.sample_bytes = std::size_t(h.out_height) * h.out_width * h.out_channels;
  // Slot: pixels | labels | ids | planned ids | valid, each 64-byte aligned.
  h.labels_offset = align_up(h.sample_bytes * b, 64);
  h.ids_offset = align_up(h.labels_offset + sizeof(std::int32_t) * b, 64);
  h.planned_offset = align_up(h.ids_offset + sizeof(std::int64_t) * b, 64);
  h.valid_offset = align_up(h.planned_offset + sizeof(std::int64_t) * b, 64);
  h.bad_offset = align_up(h.valid_offset + b, 64);
  h.slot_stride = align_up(h.bad_offset + b, kPage);

  h.index_offset = kPage;
  h.index_size = index.arena_bytes();
  h.steps_offset = align_up(h.index_offset + h.index_size, kPage);
  h.workers_offset = align_up(h.steps_offset + sizeof(Step) * h.step_count, kPage);
  // Poison list: a count word, then the dataset indices.
  h.poison_capacity = kPoisonCapacity;
  h.poison_offset = align_up(h.workers_offset + h.worker_stride * h.worker_capacity, kPage) +
                    sizeof(std::uint64_t);
  h.slots_offset = align_up(h.poison_offset + sizeof(std::int64_t) * kPoisonCapacity, kPage);

  const std::size_t initial =
      options_.prefetch > 0 ? static_cast<std::size_t>(options_.prefetch) : 2 * pool_size_ + 2;
  const std::size_t budget =
      options_.memory_budget > 0 ? options_.memory_budget : kDefaultMemoryBudget;
  slot_capacity_ = std::max(initial, budget / h.slot_stride);
  h.slot_capacity = static_cast<std::uint32_t>(slot_capacity_);
  h.total_size = h.slots_offset + slot_capacity_ * h.slot_stride;

  core_ = std::make_shared<LoaderCore>(h.total_size, h.slots_offset + initial * h.slot_stride);
  core_->devices = options_.devices.count;
  core_->cuda_ids = options_.devices.ids;
  core_->batch = b;
  core_->height = h.out_height;
  core_->width = h.out_width;
  core_->channels = h.out_channels;
  core_->slots.resize(initial);
  std::uint8_t* base = core_->arena.base();
  std::memcpy(base, &h, sizeof h);
  index.write_to(base + h.index_offset);
  std::memcpy(base + h.steps_offset, pipeline_.steps().data(), sizeof(Step) * h.step_count);
  for (std::uint32_t i = 0; i < h.worker_capacity; ++i) new (&core_->view.worker(i)) WorkerRecord();
}

// ---- staging --------------------------------------------------------------------------------

namespace {

// Options::mean/stddev (0..1 units, one per channel or one for all) in uint8 units.
void set_normalization(const Options& o, int channels, StagingConfig& c) {
  static constexpr float kImageNetMean[3] = {0.485f, 0.456f, 0.406f};
  static constexpr float kImageNetStd[3] = {0.229f, 0.224f, 0.225f};
  auto fill = [&](const std::vector<float>& given, const float* rgb, float other, float* out,
                  const char* name) {
    const auto n = given.size();
    if (n != 0 && n != 1 && n != static_cast<std::size_t>(channels))
      throw ConfigError(std::string(name) + " has " + std::to_string(n) +
                        " values; give one per channel (" + std::to_string(channels) +
                        "), a single value for all, or none for the default");
    for (int ch = 0; ch < channels; ++ch) {
      const float v = n == 0 ? (channels == 3 ? rgb[ch] : other)
                             : given[n == 1 ? 0 : static_cast<std::size_t>(ch)];
      out[ch] = v * 255.0f;
    }
  };
  fill(o.mean, kImageNetMean, 0.5f, c.mean, "mean");
  fill(o.stddev, kImageNetStd, 0.5f, c.stddev, "stddev");
}

}  // namespace

void Loader::Impl::set_up_staging() {
  const DeviceSet& set = options_.devices;
  const bool gpu = set.kind == DeviceSet::Kind::kCuda;
  if (!gpu && options_.dtype == DType::kUInt8) return;  // consumers read the arena itself
  const ArenaHeader& h = core_->view.header();
  StagingConfig c;
  c.devices = set.count;
  c.samples_per_device = options_.batch / set.count;
  c.height = static_cast<int>(h.out_height);
  c.width = static_cast<int>(h.out_width);
  c.channels = static_cast<int>(h.out_channels);
  c.dtype = options_.dtype;
  c.layout = options_.layout;
  c.slots_base = core_->arena.base() + h.slots_offset;
  c.slot_stride = h.slot_stride;
  c.slot_capacity = slot_capacity_;
  if (c.dtype != DType::kUInt8) {
    set_normalization(options_, c.channels, c);
    try {
      kernels::validate(normalize_params(c));
    } catch (const std::invalid_argument& e) {
      throw ConfigError(std::string("dtype ") + kernels::dtype_name(c.dtype) + ": " + e.what());
    }
  }
  std::unique_ptr<DeviceBackend> backend =
      gpu ? make_gpu_backend(set) : make_host_backend(set.count);
  LoaderCore* core = core_.get();
  core_->staging = std::make_unique<Staging>(std::move(backend), c,
                                             [core](int slot) { core->transfer_done(slot); });
  core_->staging->pin_initial(static_cast<int>(core_->slots.size()));
}

// Stages ready slots, earliest batch first, so the copies (and normalize) of the next batches
// run while the consumer computes on the current one.
void Loader::Impl::stage_loop() {
  std::unique_lock lock(core_->mutex);
  for (;;) {
    if (stop_) return;
    // Only a few batches ahead of the consumer: each staged batch holds a set of device
    // buffers, and more than this gains no overlap.
    const std::int64_t horizon = epoch_ * bpe_ + next_batch_ + kStageAhead;
    int slot = -1;
    for (std::size_t i = 0; i < core_->slots.size(); ++i) {
      const SlotInfo& s = core_->slots[i];
      if (s.state == SlotInfo::kReady && s.seq <= horizon &&
          (slot < 0 || s.seq < core_->slots[slot].seq))
        slot = static_cast<int>(i);
    }
    if (slot < 0) {
      core_->cv.wait(lock);
      continue;
    }
    const std::int64_t seq = core_->slots[slot].seq;
    core_->slots[slot].state = SlotInfo::kStaging;
    if (core_->slots[slot].error.empty()) {  // a failed batch is delivered as its error
      core_->slots[slot].in_transfer = true;
      lock.unlock();
      try {
        core_->staging->stage(slot);
      } catch (const Error&) {
        lock.lock();
        fail_locked(std::current_exception());
        return;
      } catch (const std::exception& e) {
        lock.lock();
        fail_locked(std::make_exception_ptr(
            Error("copying a batch to " + options_.devices.to_string() + " failed: " + e.what())));
        return;
      }
      lock.lock();
    }
    // A reposition may have dropped the batch meanwhile; in_transfer still guards the slot.
    SlotInfo& s = core_->slots[slot];
    if (s.state == SlotInfo::kStaging && s.seq == seq) {
      s.state = SlotInfo::kStaged;
      core_->cv.notify_all();
    }
  }
}

Loader::Impl::~Impl() {
  {
    std::lock_guard lock(core_->mutex);
    stop_ = true;
  }
  core_->wake();
  core_->cv.notify_all();
  if (stager_.joinable()) stager_.join();
  if (supervisor_.joinable()) supervisor_.join();
  if (done_fd_ >= 0) ::close(done_fd_);
  // Batches still held keep core_ (and the arena mapping) alive; nothing else refers to us.
}

// ---- slots and the plan --------------------------------------------------------------------

int Loader::Impl::free_slot_locked() const {
  for (std::size_t i = 0; i < core_->slots.size(); ++i) {
    const SlotInfo& s = core_->slots[i];
    if (s.state == SlotInfo::kFree && !s.in_transfer) return static_cast<int>(i);
  }
  return -1;
}

int Loader::Impl::slot_of_locked(std::int64_t seq) const {
  for (std::size_t i = 0; i < core_->slots.size(); ++i) {
    const SlotInfo& s = core_->slots[i];
    if (s.seq == seq && in_progress(s.state)) return static_cast<int>(i);
  }
  return -1;
}

void Loader::Impl::assign_locked(int slot, std::int64_t seq) {
  const ArenaView& view = core_->view;
  const auto s = static_cast<std::uint32_t>(slot);
  const int b = options_.batch;
  const std::int64_t epoch = seq / bpe_;
  const std::int64_t index = seq % bpe_;
  const std::int64_t first = plan_.batch(epoch, index, {view.planned_ids(s), std::size_t(b)},
                                         {view.valid(s), std::size_t(b)});
  SlotInfo& info = core_->slots[slot];
  info = SlotInfo{};
  info.state = SlotInfo::kFilling;
  info.seq = seq;
  info.epoch = epoch;
  info.index = index;
  info.padded = static_cast<int>(std::count(view.valid(s), view.valid(s) + b, 0));
  for (int begin = 0; begin < b; begin += chunk_) {
    Task t;
    t.seq = next_task_seq_++;
    t.slot = s;
    t.epoch = epoch;
    t.global_begin = first + begin;
    t.begin = static_cast<std::uint32_t>(begin);
    t.count = static_cast<std::uint32_t>(std::min(chunk_, b - begin));
    pending_.push_back(t);
    info.pending += 1;
  }
}

void Loader::Impl::assign_free_slots_locked() {
  for (int slot = free_slot_locked(); slot >= 0; slot = free_slot_locked()) {
    assign_locked(slot, assign_seq_++);
  }
}

// Adds a slot when the consumer holds every one. False when the memory budget is exhausted.
bool Loader::Impl::grow_locked() {
  const std::size_t n = core_->slots.size();
  if (n >= slot_capacity_) return false;
  add_slots_locked(n + 1);
  log_locked("the consumer holds all " + std::to_string(n) + " batch slots; added slot " +
             std::to_string(n + 1) + " of at most " + std::to_string(slot_capacity_));
  return true;
}

// Grows the arena's slots to n (at most slot_capacity_). New slots start free; the staging
// page-locks each when it first stages it.
void Loader::Impl::add_slots_locked(std::size_t n) {
  n = std::min(n, slot_capacity_);
  if (n <= core_->slots.size()) return;
  const ArenaHeader& h = core_->view.header();
  core_->arena.reserve(h.slots_offset + n * h.slot_stride);
  core_->slots.resize(n);
  core_->wake();
}

void Loader::Impl::reposition_locked(std::int64_t epoch, std::int64_t batch) {
  const std::int64_t old_seq = epoch_ * bpe_ + next_batch_;
  const std::int64_t seq = epoch * bpe_ + batch;
  epoch_ = epoch;
  next_batch_ = batch;
  // Batches prepared in [old_seq, assign_seq_) stay useful from `seq` on when seq lies inside.
  const bool keep_ahead = old_seq <= seq && seq <= assign_seq_;
  for (auto& s : core_->slots) {
    if (!in_progress(s.state)) continue;
    if (keep_ahead && s.seq >= seq) continue;
    s.state = s.pending > 0 ? SlotInfo::kOrphan : SlotInfo::kFree;
  }
  std::deque<Task> keep;
  for (const Task& t : pending_) {
    SlotInfo& s = core_->slots[t.slot];
    if (s.state != SlotInfo::kOrphan) {
      keep.push_back(t);
      continue;
    }
    if (--s.pending == 0) s.state = SlotInfo::kFree;
  }
  pending_.swap(keep);
  if (!keep_ahead) assign_seq_ = seq;
  monitor_.interrupt();
  core_->wake();
  core_->cv.notify_all();  // the stager's horizon moved
}

void Loader::Impl::complete_locked(const Task& task, const Completion& done) {
  stats_.read_s += static_cast<double>(done.read_ns) * 1e-9;
  stats_.decode_s += static_cast<double>(done.decode_ns) * 1e-9;
  stats_.augment_s += static_cast<double>(done.augment_ns) * 1e-9;
  busy_s_ += static_cast<double>(done.read_ns + done.decode_ns + done.augment_ns) * 1e-9;
  produced_ += task.count;
  SlotInfo& s = core_->slots[task.slot];
  if (done.status == Completion::kDataError && s.error.empty()) {
    s.error = describe_sample(done.error_sample) + ": " +
              bad_input_name(static_cast<BadInput>(done.reason)) +
              bad_input_hint(static_cast<BadInput>(done.reason)) +
              (options_.on_error == OnError::kSkip ? " (and no substitute could be produced)" : "");
  }
  if (--s.pending > 0) return;
  if (s.state == SlotInfo::kFilling) {
    s.state = SlotInfo::kReady;
    core_->cv.notify_all();
  } else if (s.state == SlotInfo::kOrphan) {
    s.state = SlotInfo::kFree;
  }
}

std::string Loader::Impl::describe_sample(std::int64_t sample) const {
  if (dataset_->raw()) return options_.data + " sample " + std::to_string(sample);
  return std::string(dataset_->path(sample)) + " (sample " + std::to_string(sample) + ")";
}

void Loader::Impl::fill_inline(std::unique_lock<std::mutex>& lock) {
  std::vector<Task> tasks(pending_.begin(), pending_.end());
  pending_.clear();
  lock.unlock();
  std::vector<Completion> done;
  done.reserve(tasks.size());
  for (const Task& t : tasks) done.push_back(inline_runner_->run(t));
  lock.lock();
  for (std::size_t i = 0; i < tasks.size(); ++i) complete_locked(tasks[i], done[i]);
}

// ---- consumer ------------------------------------------------------------------------------

void Loader::Impl::flush_log() {
  if (!log_pending_.load(std::memory_order_acquire)) return;
  std::vector<std::string> lines;
  {
    std::lock_guard lock(core_->mutex);
    lines.swap(log_queue_);
    log_pending_.store(false, std::memory_order_relaxed);
  }
  // The consumer and the supervisor both flush: one line at a time reaches the callback.
  std::lock_guard serial(log_call_mutex_);
  for (const std::string& line : lines) log(line);
}

std::optional<Batch> Loader::Impl::next() {
  try {
    std::optional<Batch> batch = next_unflushed();
    flush_log();
    return batch;
  } catch (...) {
    flush_log();
    throw;
  }
}

std::optional<Batch> Loader::Impl::next_unflushed() {
  const Clock::time_point entered = Clock::now();
  std::unique_lock lock(core_->mutex);
  if (!data_error_.empty()) throw DataError(data_error_);
  if (next_batch_ == bpe_) {
    ++epoch_;
    next_batch_ = 0;
    monitor_.interrupt();
    return std::nullopt;
  }
  const std::int64_t seq = epoch_ * bpe_ + next_batch_;
  for (;;) {
    if (fatal_) std::rethrow_exception(fatal_);
    int slot = slot_of_locked(seq);
    const SlotInfo::State deliverable = core_->staging ? SlotInfo::kStaged : SlotInfo::kReady;
    if (slot >= 0 && core_->slots[slot].state == deliverable) {
      Batch batch = deliver_locked(slot);
      const Clock::time_point now = Clock::now();
      if (delivered_any_) {
        stats_.wait_s += seconds(now - entered);
      } else {
        delivered_any_ = true;
        first_delivery_ = now;
        stats_.startup_s = seconds(now - created_);
      }
      last_delivery_ = now;
      monitor_.delivered(entered, now, options_.batch);
      return batch;
    }
    if (slot < 0 && assign_seq_ == seq) {
      const bool all_held =
          std::all_of(core_->slots.begin(), core_->slots.end(),
                      [](const SlotInfo& s) { return s.state == SlotInfo::kHeld; });
      if (all_held && !grow_locked()) {
        const auto& h = core_->view.header();
        throw Error("the consumer holds all " + std::to_string(core_->slots.size()) +
                    " batch slots (" + std::to_string(h.slot_stride >> 20) +
                    " MiB each) and the memory budget allows no more; release batches you no "
                    "longer need (drop them or call Batch::release) or raise memory_budget");
      }
      if (inline_runner_) {
        slot = free_slot_locked();
        if (slot >= 0) {
          assign_locked(slot, assign_seq_++);
          fill_inline(lock);
          continue;
        }
      } else {
        core_->wake();
      }
    }
    core_->cv.wait(lock);
  }
}

Batch Loader::Impl::deliver_locked(int slot) {
  SlotInfo& s = core_->slots[slot];
  s.state = SlotInfo::kHeld;
  ++next_batch_;
  core_->cv.notify_all();  // the stager's horizon moved
  if (!s.error.empty()) {
    data_error_ = s.error;
    s.state = SlotInfo::kFree;
    core_->wake();
    throw DataError(data_error_);
  }
  stats_.batches += 1;
  stats_.samples += options_.batch;
  stats_.padded += s.padded;
  // Counted and logged when delivered, so prefetching ahead (or a batch abandoned by set_epoch)
  // never reports a file twice, and every replaced file is named.
  const auto u = static_cast<std::uint32_t>(slot);
  const std::uint8_t* bad = core_->view.bad(u);
  const std::int64_t* planned = core_->view.planned_ids(u);
  for (int j = 0; j < options_.batch; ++j) {
    if (bad[j] == 0) continue;
    const auto reason = static_cast<BadInput>(bad[j]);
    stats_.skipped += 1;
    stats_.skipped_by_reason[bad_input_name(reason)] += 1;
    log_locked("skipped " + describe_sample(planned[j]) + ": " + bad_input_name(reason) +
               bad_input_hint(reason) + " (replaced by sample " +
               std::to_string(core_->view.ids(u)[j]) + ")");
  }
  return Batch(std::make_shared<BatchLease>(core_, slot, s.epoch, s.index, s.padded));
}

void Loader::Impl::set_epoch(std::int64_t epoch) {
  if (epoch < 0 || epoch > kMaxEpoch)
    throw ConfigError("epoch must be in 0.." + std::to_string(kMaxEpoch) + ", got " +
                      std::to_string(epoch));
  std::lock_guard lock(core_->mutex);
  reposition_locked(epoch, 0);
}

LoaderState Loader::Impl::state() const {
  std::lock_guard lock(core_->mutex);
  LoaderState s;
  s.seed = options_.seed;
  s.epoch = epoch_;
  s.next_batch = next_batch_;
  s.dataset_size = plan_.config().samples;
  s.global_batch = std::int64_t{options_.batch} * plan_.config().world;
  return s;
}

Stats Loader::Impl::stats() const {
  std::lock_guard lock(core_->mutex);
  Stats s = stats_;
  s.workers = pool_size_;
  s.workers_auto = workers_auto_;
  s.prefetch_auto = prefetch_auto_;
  s.slots = static_cast<int>(core_->slots.size());
  s.arena_bytes = static_cast<std::int64_t>(core_->arena.reserved());
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
  if (delivered_any_) {
    s.active_s = seconds(last_delivery_ - first_delivery_);
    if (s.active_s > 0) {
      s.samples_per_s = static_cast<double>(s.samples - options_.batch) / s.active_s;
      s.wait_fraction = std::min(1.0, s.wait_s / s.active_s);
    }
  }
  const StallMonitor::Totals w = monitor_.window();
  s.compute_s = monitor_.compute_s();
  s.window_batches = w.batches;
  s.window_wait_fraction = w.wait_fraction();
  s.window_samples_per_s = w.delivered_per_s();
  s.demand_samples_per_s = w.demand_per_s();
  s.worker_busy_fraction = busy_fraction_locked(Clock::now());
  s.worker_samples_per_s = worker_rate_locked();
  if (gpu_monitor_) {
    s.gpu_monitor = gpu_monitor_->status();
    s.gpus = gpu_monitor_->snapshot();
  }
  s.verdict = stall_verdict(
      s, {cores_, options_.stall_target, workers_auto_ ? limit_workers_ : 0, limit_reason_});
  return s;
}

// ---- supervisor ----------------------------------------------------------------------------

void Loader::Impl::start_workers() {
  const int n = pool_size_;  // members_ and role_ are only written on this thread from now on
  for (int i = 0; i < n; ++i) {
    role_[i] = Role::kActive;
    members_.push_back(i);
    pool_->spawn(i);
  }
  const Clock::time_point deadline = Clock::now() + kStartupTimeout;
  for (;;) {
    int ready = 0;
    for (int i = 0; i < n; ++i) {
      const WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(i));
      const auto st = r.state.load(std::memory_order_acquire);
      if (st == WorkerRecord::kReady) ++ready;
      if (st == WorkerRecord::kVersionMismatch) {
        throw Error(pool_->executable() + " is version " + std::string(r.version) +
                    " but this library is " + worker_version_tag() +
                    "; install the stoke-worker that came with this library");
      }
    }
    if (ready == n) {
      std::lock_guard lock(core_->mutex);
      restart_measurement_locked();  // the pool's measurements start with a running pool
      return;
    }
    std::vector<pollfd> fds{{done_fd_, POLLIN, 0}};
    for (int i = 0; i < n; ++i) fds.push_back({pool_->pidfd(i), POLLIN, 0});
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      throw Error("stoke-worker (" + pool_->executable() + ") did not start within " +
                  std::to_string(kStartupTimeout.count()) + " s");
    ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    drain_eventfd(done_fd_);
    for (int i = 0; i < n; ++i) {
      if (!(fds[i + 1].revents & POLLIN)) continue;
      const WorkerExit exit = pool_->reap(i);
      if (!exit.signaled && exit.status == kExitVersionMismatch)
        throw Error(pool_->executable() + " does not match this library (" + worker_version_tag() +
                    "); install the stoke-worker that came with it");
      if (const std::string why = incurable_exit(exit); !why.empty()) throw Error(why);
      throw Error("stoke-worker (" + pool_->executable() + ") exited during start-up with " +
                  exit.describe());
    }
  }
}

void Loader::Impl::supervise(std::promise<void>& started) {
  try {
    start_workers();
  } catch (...) {
    pool_.reset();
    started.set_exception(std::current_exception());
    return;
  }
  started.set_value();
  try {
    supervise_loop();
  } catch (...) {
    std::lock_guard lock(core_->mutex);
    fail_locked(std::current_exception());
  }
  flush_log();
  // Workers are stopped from this thread, the one that spawned them, before it exits.
  pool_->stop_all(std::chrono::milliseconds(1000));
  pool_.reset();
}

void Loader::Impl::fail_locked(std::exception_ptr error) {
  if (!fatal_) fatal_ = std::move(error);
  stop_ = true;
  core_->cv.notify_all();
  core_->wake();
}

void Loader::Impl::supervise_loop() {
  std::vector<pollfd> fds;
  std::vector<int> watched, respawn, grow;
  for (;;) {
    {
      std::lock_guard lock(core_->mutex);
      if (stop_) return;
      if (requested_size_ > 0) {
        if (requested_size_ != pool_size_)
          log_locked("resizing the worker pool from " + std::to_string(pool_size_) + " to " +
                     std::to_string(requested_size_) + " workers (requested)");
        resize_pool_locked(requested_size_);
        requested_size_ = -1;
      }
      assign_free_slots_locked();
      retire_drained_locked();
      dispatch_locked();
      watched = members_;
    }
    fds.assign({{done_fd_, POLLIN, 0}, {core_->wake_fd, POLLIN, 0}});
    std::erase_if(watched, [&](int i) { return !pool_->running(i); });
    for (int i : watched) fds.push_back({pool_->pidfd(i), POLLIN, 0});
    ::poll(fds.data(), fds.size(), poll_timeout_ms());
    drain_eventfd(done_fd_);
    drain_eventfd(core_->wake_fd);
    respawn.clear();
    {
      std::lock_guard lock(core_->mutex);
      for (int i : members_) drain_completions_locked(i);
      kill_stuck_workers_locked();
      for (std::size_t k = 0; k < watched.size() && !stop_; ++k) {
        if ((fds[k + 2].revents & POLLIN) && handle_exit_locked(watched[k]))
          respawn.push_back(watched[k]);
      }
      if (!stop_) tune_locked();
      // A dead worker whose record the tuner has just retired needs no replacement.
      std::erase_if(respawn, [&](int i) { return role_[i] != Role::kActive; });
      grow = std::exchange(to_grow_, {});
    }
    flush_log();
    // Spawning takes a while; consumers releasing batches must not wait for it.
    for (int i : respawn) pool_->spawn(i);
    spawn_growth(grow);
  }
}

void Loader::Impl::dispatch_locked() {
  while (!pending_.empty()) {
    int best = -1;
    for (int i : members_) {
      if (role_[i] != Role::kActive || !pool_->running(i) ||
          in_flight_[i].size() >= kTasksInFlightPerWorker)
        continue;
      if (best < 0 || in_flight_[i].size() < in_flight_[best].size()) best = i;
    }
    if (best < 0) return;
    WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(best));
    const Task t = pending_.front();
    if (!r.tasks.push(t)) return;
    pending_.pop_front();
    if (in_flight_[best].empty()) front_since_[best] = Clock::now();
    in_flight_[best].push_back(t);
    r.tasks_posted.post();
  }
}

void Loader::Impl::drain_completions_locked(int worker) {
  WorkerRecord& r = core_->view.worker(static_cast<std::uint32_t>(worker));
  auto& q = in_flight_[worker];
  Completion done;
  while (r.done.pop(done)) {
    // A worker serves its ring in order, so its completions arrive in dispatch order.
    if (q.empty() || q.front().seq != done.seq) {
      fail_locked(std::make_exception_ptr(Error("internal error: worker " + std::to_string(worker) +
                                                " completed task " + std::to_string(done.seq) +
                                                " out of order; please report this")));
      return;
    }
    const Task task = q.front();
    q.pop_front();
    if (!q.empty()) front_since_[worker] = Clock::now();
    complete_locked(task, done);
  }
}

int Loader::Impl::poll_timeout_ms() const {
  // With automatic sizing, evaluate even when nothing happens (a consumer that stopped asking).
  // (options_, not workers_auto_: this runs outside the lock that resize_workers() takes.)
  int ms =
      options_.workers == kAuto || prefetch_auto_ ? static_cast<int>(kTuneEveryS * 1000) : 1000;
  if (options_.task_timeout_s <= 0) return ms;
  const auto limit = std::chrono::duration<double>(options_.task_timeout_s);
  const Clock::time_point now = Clock::now();
  for (int i : members_) {
    if (in_flight_[i].empty() || timed_out_[i]) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        front_since_[i] + std::chrono::duration_cast<Clock::duration>(limit) - now);
    ms = std::clamp(static_cast<int>(left.count()) + 1, 0, ms);
  }
  return ms;
}

// A worker that has spent longer than the task timeout on one chunk (a decoder stuck in a loop,
// a read hanging on a dead network mount, a stopped process) is killed; the exit path then
// replaces it and redoes its work.
void Loader::Impl::kill_stuck_workers_locked() {
  if (options_.task_timeout_s <= 0) return;
  const Clock::time_point now = Clock::now();
  for (int i : members_) {
    if (in_flight_[i].empty() || timed_out_[i] || !pool_->running(i)) continue;
    if (std::chrono::duration<double>(now - front_since_[i]).count() < options_.task_timeout_s)
      continue;
    const Task& t = in_flight_[i].front();
    const std::int64_t sample =
        core_->view.worker(static_cast<std::uint32_t>(i)).current_sample.load();
    const SlotInfo& s = core_->slots[t.slot];
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", options_.task_timeout_s);
    const std::int64_t first = core_->view.planned_ids(t.slot)[t.begin];
    log_locked("worker " + std::to_string(i) + " (pid " + std::to_string(pool_->pid(i)) +
               ") spent more than " + limit + " s on samples " + std::to_string(t.begin) + ".." +
               std::to_string(t.begin + t.count - 1) + " of batch " + std::to_string(s.index) +
               " (epoch " + std::to_string(s.epoch) + ")" +
               (sample >= 0 ? ", at " + describe_sample(sample)
                            : ", not yet past the first, " + describe_sample(first)) +
               "; killing it");
    timed_out_[i] = true;
    pool_->kill(i);
  }
}

bool Loader::Impl::handle_exit_locked(int worker) {
  WorkerRecord& record = core_->view.worker(static_cast<std::uint32_t>(worker));
  const pid_t pid = pool_->pid(worker);
  const WorkerExit exit = pool_->reap(worker);
  const std::int64_t sample = record.current_sample.load();
  const bool timed_out = timed_out_[worker];
  timed_out_[worker] = false;
  drain_completions_locked(worker);
  auto& q = in_flight_[worker];
  // A retiring worker that finished its chunks and stopped has simply retired. One that died on
  // the way out is treated like any death (its sample is blamed, its chunks redone), except
  // that no replacement starts.
  const bool retiring = role_[worker] == Role::kRetiring;
  if (retiring && q.empty() && !exit.signaled && exit.status == 0) {
    retire_record_locked(worker);
    return false;
  }
  const std::string how =
      timed_out ? "was killed for exceeding the task timeout" : "died with " + exit.describe();
  log_locked("worker " + std::to_string(worker) + " (pid " + std::to_string(pid) + ") " + how +
             (sample >= 0 && !q.empty() ? " while producing " + describe_sample(sample) : "") +
             (retiring ? "; it was retiring, so the other workers redo its "
                       : "; restarting it and redoing ") +
             std::to_string(q.size()) + " chunk(s)");
  if (!retiring) stats_.worker_restarts += 1;
  if (!exit.signaled && exit.status == kExitVersionMismatch) {
    fail_locked(std::make_exception_ptr(
        Error(pool_->executable() + " no longer matches this library (" + worker_version_tag() +
              "); it was replaced while running: reinstall stoke and restart")));
    return false;
  }
  if (const std::string why = incurable_exit(exit); !why.empty()) {
    fail_locked(std::make_exception_ptr(Error(why)));
    return false;
  }
  if (sample >= 0 && !q.empty() && !blame_sample_locked(sample, exit, timed_out)) return false;
  for (auto it = q.rbegin(); it != q.rend(); ++it) pending_.push_front(*it);
  q.clear();
  if (retiring) {
    retire_record_locked(worker);
    return false;
  }
  // A worker that keeps dying before it is even ready (an unsupported CPU, a broken library)
  // would otherwise be restarted forever.
  // SIGKILL comes from outside (an operator, the OOM killer), never from a crash, so it does not
  // count; each restart costs a process start, so even a persistent killer cannot spin us.
  const bool killed = exit.signaled && exit.status == SIGKILL;
  const bool started = record.state.load() == WorkerRecord::kReady;
  if (started) {
    deaths_without_progress_[worker] = 0;
  } else if (!killed) {
    deaths_without_progress_[worker] += 1;
  }
  if (deaths_without_progress_[worker] >= kMaxDeathsWithoutProgress) {
    fail_locked(std::make_exception_ptr(Error(
        "worker " + std::to_string(worker) + " died " + std::to_string(kMaxDeathsWithoutProgress) +
        " times in a row during start-up; last death: " + exit.describe())));
    return false;
  }
  return true;
}

// A crash (or our own timeout kill) on a sample counts fully. A SIGKILL from outside may be an
// operator or the OOM killer, and a replacement worker starts on the very sample its
// predecessor was killed on, so random kills land on the same sample often: those need
// kMaxKillsPerSample before the sample is blamed. The budget acts once, when it is reached;
// a worker that was already inside the sample dies once more and is simply replaced.
// False when the sample stops the loader (OnError::kError).
bool Loader::Impl::blame_sample_locked(std::int64_t sample, const WorkerExit& exit,
                                       bool timed_out) {
  const bool external_kill = exit.signaled && exit.status == SIGKILL && !timed_out;
  const int weight = external_kill ? 1 : kMaxKillsPerSample / kMaxDeathsPerSample;
  int& blame = sample_deaths_[sample];
  const bool reached = blame < kMaxKillsPerSample && (blame += weight) >= kMaxKillsPerSample;
  if (!reached) return true;
  const std::string what =
      describe_sample(sample) + ": crashed_worker (" +
      (external_kill ? std::to_string(kMaxKillsPerSample) + " SIGKILLs"
                     : std::to_string(kMaxDeathsPerSample) + " workers died on it") +
      "; last: " + exit.describe() + ")";
  if (options_.on_error == OnError::kError) {
    fail_locked(std::make_exception_ptr(DataError(what)));
    return false;
  }
  std::atomic<std::uint32_t>& count = core_->view.poisoned_count();
  const std::uint32_t n = count.load();
  if (n < core_->view.header().poison_capacity) {
    core_->view.poisoned()[n] = sample;
    count.store(n + 1, std::memory_order_release);
  }
  log_locked(what + "; skipping it from now on");
  return true;
}

// ---- public surface ------------------------------------------------------------------------

Loader::Loader(Options options) {
  const Clock::time_point created = Clock::now();
  if ((options.workers < 0 && options.workers != kAuto) || options.workers > kMaxWorkers)
    throw ConfigError("workers must be in 0.." + std::to_string(kMaxWorkers) +
                      " (0 runs in-process) or kAuto, got " + std::to_string(options.workers));
  if (options.max_workers < 0)
    throw ConfigError("max_workers must be 0 (the cores available) or positive, got " +
                      std::to_string(options.max_workers));
  if (!(options.stall_target > 0 && options.stall_target < 1))
    throw ConfigError("stall_target must be a fraction between 0 and 1 (e.g. 0.02 for 2%)");
  if (options.monitor_window < 4 || options.monitor_window > 100000)
    throw ConfigError("monitor_window must be 4..100000 batches, got " +
                      std::to_string(options.monitor_window));
  if (!(options.task_timeout_s >= 0))
    throw ConfigError("task_timeout_s must be >= 0 (0 disables the timeout)");
  if (options.max_pixels <= 0)
    throw ConfigError("max_pixels must be positive, got " + std::to_string(options.max_pixels));
  if ((options.prefetch < 0 && options.prefetch != kAuto) || options.chunk < 0)
    throw ConfigError(
        "prefetch must be 0 (2 per worker plus 2), kAuto or positive, and chunk 0 "
        "(automatic) or positive");
  if (options.prefetch == kAuto && options.workers == 0)
    throw ConfigError(
        "prefetch=auto needs worker processes (workers >= 1 or auto); the "
        "in-process pipeline fills one batch at a time");
  check_descriptor_limit(options.workers == kAuto ? 1 : options.workers);
  DatasetIndex index = build_index(options.data, options.split);
  impl_ = std::make_unique<Impl>(std::move(options), std::move(index), created);
}

Loader::~Loader() = default;
std::optional<Batch> Loader::next() {
  return impl_->next();
}
void Loader::set_epoch(std::int64_t epoch) {
  impl_->set_epoch(epoch);
}
void Loader::resize_workers(int n) {
  impl_->resize_workers(n);
}
LoaderState Loader::state() const {
  return impl_->state();
}
std::int64_t Loader::batches_per_epoch() const {
  return impl_->batches_per_epoch();
}
std::int64_t Loader::dataset_size() const {
  return impl_->dataset_size();
}
int Loader::rank() const {
  return impl_->rank();
}
int Loader::world() const {
  return impl_->world();
}
const Pipeline& Loader::pipeline() const {
  return impl_->pipeline();
}
Stats Loader::stats() const {
  return impl_->stats();
}

const char* version() {
  return kVersion;
}

}  // namespace stoke
