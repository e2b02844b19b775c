// Loader construction and destruction, and the public Loader's forwarding.

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <stdexcept>

#include "build_info.hpp"
#include "common/number_text.hpp"
#include "data/shard_cache.hpp"
#include "loader_environment.hpp"
#include "loader_impl.hpp"
#include "stoke/loader.hpp"
#include "worker/worker_locate.hpp"
#include "worker_pool.hpp"

namespace stoke {

using namespace detail;

namespace {

constexpr std::uint32_t kPoisonCapacity = 4096;

}  // namespace

// (Clang's thread-safety analysis does not look inside constructors and destructors: nothing
// else can reach the members yet, or any more.)
Loader::Impl::Impl(ResolvedConfig config, DatasetIndex index, const LoaderEnvironment& env,
                   Clock::time_point created)
    : config_(std::move(config)),
      time_(env.time ? env.time
                     : std::shared_ptr<const TimeSource>(std::shared_ptr<void>{}, &steady_time())),
      log_(options_.log) {
  lay_out_arena(index, created);
  for (const RejectedFile& r : index.rejected) {  // (resolve() refused them under kError)
    core_->metrics.skipped(r.reason);
    log_.post("skipped " + r.path + " while indexing: " + bad_input_name(r.reason));
  }
  for (const std::string& note : index.shard_notes) log_.post(note);
  for (const std::string& note : index.box_notes) log_.post(note);
  if (config_.over_max_boxes > 0)
    log_.post(std::to_string(config_.over_max_boxes) + " image(s) have more boxes than max_boxes " +
              std::to_string(config_.max_boxes) + ": each keeps its first " +
              std::to_string(config_.max_boxes) + " of those its crop keeps");
  if (config_.over_max_bytes > 0)
    log_.post(std::to_string(config_.over_max_bytes) + " sample(s) carry more than max_bytes " +
              std::to_string(config_.max_bytes) + " bytes: each is cut to its first " +
              std::to_string(config_.max_bytes));
  log_.flush();  // now, so that a failure further on does not swallow them
  set_up_staging(env);
  set_up_shard_cache(index);
  log_.flush();  // the shard cache's line too: every set-up line is out when construction ends
  index = DatasetIndex{};  // the arena holds it now
  core_->names = std::make_unique<SampleNames>(options_.data, core_->view);
  core_->slots.set_chunk(chunk_for(options_, config_.initial_workers));
  if (options_.devices.kind == DeviceSet::Kind::kCuda)
    gpus_ = std::make_unique<GpuActivityMonitor>(make_nvml_source(), options_.devices.ids);
  start_threads();
}

void Loader::Impl::lay_out_arena(const DatasetIndex& index, Clock::time_point created) {
  ArenaPlanInput in;
  in.index_bytes = index.arena_bytes();
  in.step_count = static_cast<std::uint32_t>(config_.pipeline.steps().size());
  in.batch = static_cast<std::uint32_t>(options_.batch);
  in.out_height = static_cast<std::uint32_t>(config_.pipeline.output_height());
  in.out_width = static_cast<std::uint32_t>(config_.pipeline.output_width());
  in.out_channels = static_cast<std::uint32_t>(config_.pipeline.output_channels());
  in.max_boxes = static_cast<std::uint32_t>(config_.max_boxes);
  in.max_bytes = static_cast<std::uint32_t>(config_.max_bytes);
  in.mask_bytes = index.has_masks ? static_cast<std::uint32_t>(options_.mask_depth / 8) : 0;
  in.worker_capacity = static_cast<std::uint32_t>(config_.capacity);
  in.poison_capacity = kPoisonCapacity;
  in.initial_slots = config_.initial_slots;
  in.memory_budget = config_.memory_budget;
  ArenaHeader h = plan_arena(in);
  std::snprintf(h.version, sizeof h.version, "%s", worker_version_tag().c_str());
  h.dataset_kind = index.kind;
  h.on_error_skip = options_.on_error == OnError::kSkip ? 1 : 0;
  h.verify_region = options_.verify == Verify::kRegion ? 1 : 0;
  h.max_pixels = options_.max_pixels;
  h.sample_count = index.size;
  h.raw_height = index.height;
  h.raw_width = index.width;
  h.raw_channels = index.channels;
  h.box_total = static_cast<std::int64_t>(index.boxes.size());
  h.box_min_size = options_.min_box_size;
  h.box_min_area = options_.min_box_area;
  h.box_min_visible = options_.min_box_visible;
  h.mask_ignore = static_cast<std::uint32_t>(options_.mask_ignore);
  h.seed = options_.seed;

  core_ = std::make_shared<LoaderCore>(h, config_.plan, config_.initial_slots, config_.start_epoch,
                                       config_.start_batch, options_.monitor_window, created);
  core_->on_error = options_.on_error;
  core_->devices = options_.devices.count;
  core_->cuda_ids = options_.devices.ids;
  core_->batch = options_.batch;
  core_->height = static_cast<int>(h.out_height);
  core_->width = static_cast<int>(h.out_width);
  core_->channels = static_cast<int>(h.out_channels);
  core_->max_boxes = config_.max_boxes;
  core_->mask_bytes = static_cast<int>(h.mask_bytes);
  core_->max_bytes = config_.max_bytes;
  std::uint8_t* base = core_->arena.base();
  std::memcpy(base, &h, sizeof h);
  index.write_to(base + h.index_offset);
  const std::vector<WireStep> steps = wire_steps(config_.pipeline);
  std::memcpy(base + h.steps_offset, steps.data(), sizeof(WireStep) * steps.size());
  for (std::uint32_t i = 0; i < h.worker_capacity; ++i) new (&core_->view.worker(i)) WorkerRecord();
}

void Loader::Impl::set_up_staging(const LoaderEnvironment& env) {
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
  c.slot_capacity = h.slot_capacity;
  if (c.dtype != DType::kUInt8) {
    std::copy(std::begin(config_.mean), std::end(config_.mean), c.mean);
    std::copy(std::begin(config_.stddev), std::end(config_.stddev), c.stddev);
    try {
      kernels::validate(normalize_params(c));
    } catch (const std::invalid_argument& e) {
      throw ConfigError(std::string("dtype ") + kernels::dtype_name(c.dtype) + ": " + e.what());
    }
  }
  std::unique_ptr<DeviceBackend> backend = !gpu              ? make_host_backend(set.count)
                                           : env.gpu_backend ? env.gpu_backend(set)
                                                             : make_cuda_backend(set);
  LoaderCore* core = core_.get();
  c.labels_offset = h.labels_offset;
  c.valid_offset = h.valid_offset;
  core_->staging =
      std::make_unique<Staging>(std::move(backend), c, [core](int) { core->transfer_signal(); });
  core_->staging->pin_initial(static_cast<int>(config_.initial_slots));
}

void Loader::Impl::set_up_shard_cache(const DatasetIndex& index) {
  if (index.remote_shards.empty()) return;
  std::vector<RemoteShard> cached;
  for (const RemoteShard& r : index.remote_shards) {
    if (!r.copy.empty()) cached.push_back(r);
  }
  if (cached.empty()) {
    shard_cache_ = options_.cache_limit == 0
                       ? "off (cache_limit 0): workers read byte ranges from the server"
                       : "off (no cache folder, or the server sends no ETag): workers read byte "
                         "ranges from the server";
    log_.post("shard cache: " + shard_cache_);
    return;
  }
  // A batch reads from one shuffle window's shards, or from the next one too at a window's
  // edge (and, with small shards or padding that wraps, from several): the limit must hold at
  // least the largest window, else copies would be evicted before their batches are done. (A
  // batch that alone needs more is fetched past the limit, with a line in the log.)
  std::size_t per_window = 0;  // the plan's windows hold the same counts of shards every epoch
  for (const ShardWindow& w : EpochPlan(config_.plan).shard_windows(0))
    per_window = std::max(per_window, w.shards.size());
  std::vector<std::uint64_t> sizes;
  for (const RemoteShard& r : cached) sizes.push_back(r.size);
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  std::uint64_t need = 0;
  for (std::size_t i = 0; i < std::min(per_window, sizes.size()); ++i) need += sizes[i];
  const std::string root = cache_root(options_.cache_dir);
  if (need > options_.cache_limit) {
    shard_cache_ = "off: cache_limit " + bytes_text(options_.cache_limit) + " cannot hold the " +
                   bytes_text(need) + " of the " + std::to_string(per_window) +
                   " largest shards a shuffle window reads; workers read byte ranges from the "
                   "server (raise cache_limit, or lower shuffle_window)";
    log_.post("shard cache: " + shard_cache_);
    return;
  }
  auto store = std::make_unique<ShardStore>(root, options_.cache_limit);
  shard_cache_ = "on: " + store->folder() + ", limit " + bytes_text(options_.cache_limit);
  log_.post("shard cache " + shard_cache_ + "; " + std::to_string(cached.size()) + " of " +
            std::to_string(index.remote_shards.size()) + " remote shard(s) can be cached");
  prefetcher_ = std::make_unique<ShardPrefetcher>(core_, config_.plan, std::move(cached),
                                                  std::move(store), log_);
  ShardPrefetcher* gate = prefetcher_.get();
  MutexLock lock(core_->mutex);
  core_->slots.set_gate([gate](std::int64_t seq, std::uint64_t generation, bool consumer_next) {
    return gate->ready(seq, generation, consumer_next);
  });
}

// The supervisor starts first (its constructor-time errors, like a worker of another version,
// reach the caller); the stager last, because a constructor that throws would leave a running
// thread behind.
void Loader::Impl::start_threads() {
  if (config_.initial_workers == 0) {
    inline_runner_ = std::make_unique<ChunkRunner>(core_->view);
  } else {
    const std::string exe = locate_worker(options_.worker_path);
    done_fd_ = raise_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "an eventfd");
    try {
      supervisor_ = std::make_unique<Supervisor>(
          core_, config_, log_,
          std::make_unique<WorkerPool>(core_->view, core_->arena.fd(), done_fd_, exe), done_fd_);
      supervisor_->start();
    } catch (...) {
      supervisor_.reset();
      ::close(done_fd_);  // ~Impl does not run for a constructor that throws
      throw;
    }
  }
  if (core_->staging) stager_ = std::make_unique<Stager>(core_, options_.devices.to_string());
}

Loader::Impl::~Impl() {
  {
    MutexLock lock(core_->mutex);
    core_->stop = true;
  }
  core_->wake();
  core_->cv.notify_all();
  stager_.reset();
  supervisor_.reset();
  if (prefetcher_) {
    {
      MutexLock lock(core_->mutex);
      core_->slots.set_gate(nullptr);
    }
    prefetcher_.reset();
  }
  if (done_fd_ >= 0) ::close(done_fd_);
  log_.flush();
  // Batches still held keep core_ (and the arena mapping) alive; nothing else refers to us.
}

// ---- public surface ------------------------------------------------------------------------

Loader::Loader(Options options) : Loader(std::move(options), LoaderEnvironment{}) {}

void LoaderAccess::while_locked(Loader& loader, const std::function<void()>& f) {
  MutexLock lock(loader.impl_->core().mutex);
  f();
}

Loader::Loader(Options options, const LoaderEnvironment& env) {
  const Clock::time_point created = Clock::now();
  check_options(options);
  IndexOptions request;
  request.split = options.split;
  request.label_field = options.label_field;
  request.image_root = options.image_root;
  request.mask_field = options.mask_field;
  request.bytes_field = options.bytes_field;
  request.box_field = options.box_field;
  request.on_error = options.on_error;
  request.max_classes = options.max_classes;
  request.caches = {cache_root(options.cache_dir), options.cache_limit > 0};
  DatasetIndex index = build_index(options.data, request);
  ResolvedConfig config = resolve(std::move(options), index);
  impl_ = std::make_unique<Impl>(std::move(config), std::move(index), env, created);
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
