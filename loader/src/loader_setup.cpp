// Loader construction and destruction, and the public Loader's forwarding.

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <set>
#include <stdexcept>

#include "api/mixture_text.hpp"
#include "common/build_info.hpp"
#include "common/fd.hpp"
#include "common/number_text.hpp"
#include "data/cache_folder.hpp"
#include "data/parquet_dataset.hpp"
#include "data/shard_cache.hpp"
#include "data/shard_list.hpp"
#include "data/shard_tables.hpp"
#include "decode/relayout_cache.hpp"
#include "device/nvjpeg_decoder.hpp"
#include "loader_environment.hpp"
#include "loader_impl.hpp"
#include "prefetch/shard_cache_plan.hpp"
#include "stoke/loader.hpp"
#include "supervision/worker_pool.hpp"
#include "worker/worker_locate.hpp"

namespace stoke {

using namespace detail;

namespace {

constexpr std::uint32_t kPoisonCapacity = 4096;

// Indexing that took this long, or a wait this long for another loader's, is logged.
constexpr double kIndexLogSeconds = 1.0;

// The log's advice for Parquet data whose every sample would decode a page of many rows: a full
// shuffle (shuffle_window 0) reads the rows of a page far apart in time, so a worker decodes a
// page for almost every sample. "" when there is none to give.
std::string parquet_window_advice(const DatasetView& view, const PlanConfig& plan) {
  if (!view.parquet() || !plan.shuffle || plan.shuffle_window != 0) return {};
  const double rows = rows_per_decoded_page(view);
  if (rows < 4) return {};
  char text[64];
  std::snprintf(text, sizeof text, "%.0f", rows);
  return std::string("Parquet pages of about ") + text +
         " rows each are decoded whole, and with shuffle_window 0 a worker decodes one for "
         "almost every sample: set shuffle_window (16 reads 16 row groups at a time, each page "
         "decoded once) or write the files with smaller pages";
}

// The log's line on where the dataset index came from, when it took long enough to say.
std::string index_line(const MappedIndex& index) {
  if (index.built_s() < kIndexLogSeconds && index.waited_s() < kIndexLogSeconds) return "";
  std::string line = "dataset index: " + std::to_string(index.info().size) + " samples, " +
                     bytes_text(index.region_size()) + ", ";
  switch (index.origin()) {
    case MappedIndex::Origin::kBuilt:
      return line + "built in " + seconds_text(index.built_s()) + " s and written to " +
             index.file() + " (the machine's other ranks and later runs map it)";
    case MappedIndex::Origin::kFound:
      return line + "mapped from " + index.file() + " after waiting " +
             seconds_text(index.waited_s()) + " s for the loader writing it";
    case MappedIndex::Origin::kPrivate:
      break;
  }
  return line + "built in " + seconds_text(index.built_s()) +
         " s in this process's memory (no cache folder to share it through)";
}

// The remote shards the shard cache may keep (shard_cache_plan.hpp): the index's, or every shard
// a dataset-level index names by URL, unresolved when their copies are asked for (a cache
// folder, cache_limit > 0): the prefetcher looks each one up as the plan nears it.
std::vector<RemoteShard> remote_shards_of(const MappedIndex& mapped) {
  const DatasetIndex& index = mapped.info();
  if (index.kind != DatasetKind::kShards) return index.remote_shards;
  const DatasetView view = mapped.view();
  const LazyShardOptions& o = view.lazy_options();
  const bool copies = o.shard_copies != 0 && o.cache_root[0] != '\0';
  std::vector<RemoteShard> out;
  for (std::size_t s = 0; s < view.shard_total(); ++s) {
    std::string url(view.shard_path(s));
    if (is_url(url)) out.push_back({s, std::move(url), 0, "", copies});
  }
  return out;
}

// What the shard prefetcher sees of this loader (shard_prefetcher.hpp): LoaderCore's position,
// plan, wake-ups and error, behind its lock.
class CorePrefetchHost final : public PrefetchHost {
 public:
  explicit CorePrefetchHost(std::shared_ptr<LoaderCore> core) : core_(std::move(core)) {}
  void read(const Look& look) override {
    MutexLock lock(core_->mutex);
    const PrefetchHost::Consumer at{core_->stop, core_->slots.next_seq(),
                                    core_->slots.generation()};
    if (core_->slots.mixture())
      look(at, MixturePrefetchPlan(core_->slots.mixture_plan()));
    else
      look(at, EpochPrefetchPlan(core_->slots.plan()));
  }
  void ready_changed() override {
    core_->signal_change();  // the supervisor's eventfd, and the in-process consumer's wait
  }
  void fail(std::exception_ptr error) override {
    MutexLock lock(core_->mutex);
    core_->fail(std::move(error));
  }

 private:
  const std::shared_ptr<LoaderCore> core_;
};

}  // namespace

// (Clang's thread-safety analysis does not look inside constructors and destructors: nothing
// else can reach the members yet, or any more.)
Loader::Impl::Impl(ResolvedConfig config, std::vector<std::shared_ptr<const MappedIndex>> indexes,
                   const LoaderEnvironment& env, Clock::time_point created)
    : config_(std::move(config)),
      time_(env.time ? env.time
                     : std::shared_ptr<const TimeSource>(std::shared_ptr<void>{}, &steady_time())),
      log_(options_.log, [this](std::exception_ptr e) { log_failed(std::move(e)); }) {
  const bool mixture = config_.mixture.has_value();
  const MappedIndex& first = *indexes.front();
  const DatasetIndex& index = first.info();
  // A mixture's remote shards are numbered as its sources' shards in order.
  // (A shard two sources both read is fetched and kept for the first; the second's samples read
  // its copy while it is there, else the server's bytes.)
  std::vector<RemoteShard> remote;
  std::set<std::string> urls;
  for (std::size_t d = 0; d < indexes.size(); ++d) {
    const std::size_t base = mixture ? MixturePrefetchPlan::shard_base(*config_.mixture, d) : 0;
    for (RemoteShard& r : remote_shards_of(*indexes[d])) {
      if (!urls.insert(r.url).second) continue;
      r.shard += base;
      remote.push_back(std::move(r));
    }
  }
  const ShardCachePlan shard_cache =
      mixture ? plan_shard_cache(remote, MixturePlan(*config_.mixture), config_.remote)
              : plan_shard_cache(remote, config_.plan, config_.remote);
  for (const auto& mapped : indexes) {
    if (const std::string line = index_line(*mapped); !line.empty()) log_.post(line);
  }
  if (!mixture && index.kind == DatasetKind::kShards)
    diagnosis_ =
        std::make_unique<ShardDiagnosis>(first.view(), config_.remote.policy,
                                         [this](std::string line) { log_.post(std::move(line)); });
  for (const auto& mapped : indexes) {
    if (mapped->info().kind == DatasetKind::kShards &&
        mapped->view().lazy_options().cache_root[0] == '\0') {
      log_.post(
          "dataset-level index without a cache folder: each worker indexes the shards it "
          "reads for itself, and again after it has dropped them (it keeps 64); set "
          "cache_dir (or STOKE_CACHE_DIR) so that each shard is indexed once a machine");
      break;
    }
  }
  // Without a shard cache the workers read the servers.
  lay_out_arena(indexes, !shard_cache.cached.empty(), created, env);
  for (const auto& mapped : indexes) {
    const DatasetIndex& info = mapped->info();
    for (const RejectedFile& r : info.rejected) {  // (resolve() refused them under kError)
      core_->metrics.skipped(r.reason);
      log_.post("skipped " + r.path + " while indexing: " + bad_input_name(r.reason));
    }
    for (const std::string& note : info.shard_notes) log_.post(note);
    if (const std::string advice = parquet_window_advice(mapped->view(), config_.plan);
        !advice.empty())
      log_.post(advice);
    for (const std::string& note : info.box_notes) log_.post(note);
  }
  if (config_.over_max_boxes > 0)
    log_.post(std::to_string(config_.over_max_boxes) + " image(s) have more boxes than max_boxes " +
              std::to_string(config_.max_boxes) + ": each keeps its first " +
              std::to_string(config_.max_boxes) + " of those its crop keeps");
  if (config_.over_max_bytes > 0)
    log_.post(std::to_string(config_.over_max_bytes) + " sample(s) carry more than max_bytes " +
              std::to_string(config_.max_bytes) + " bytes: each is cut to its first " +
              std::to_string(config_.max_bytes));
  flush_log();  // now, so that a failure further on does not swallow them
  set_up_shard_cache(shard_cache);
  flush_log();  // the shard cache's line too: every set-up line is out when construction ends
  if (options_.devices.kind == DeviceSet::Kind::kCuda)
    gpus_ = std::make_unique<GpuActivityMonitor>(make_nvml_source(), options_.devices.ids);
  start_threads();
}

void Loader::Impl::lay_out_arena(const std::vector<std::shared_ptr<const MappedIndex>>& indexes,
                                 bool copies, Clock::time_point created,
                                 const LoaderEnvironment& env) {
  bool masks = false;
  for (const auto& mapped : indexes) masks = masks || mapped->info().has_masks;
  ArenaPlanInput in;
  in.step_count = static_cast<std::uint32_t>(config_.pipeline.steps().size());
  in.batch = static_cast<std::uint32_t>(options_.batch);
  in.out_height = static_cast<std::uint32_t>(config_.pipeline.output_height());
  in.out_width = static_cast<std::uint32_t>(config_.pipeline.output_width());
  in.out_channels = static_cast<std::uint32_t>(config_.pipeline.output_channels());
  in.max_boxes = static_cast<std::uint32_t>(config_.max_boxes);
  in.max_bytes = static_cast<std::uint32_t>(config_.max_bytes);
  in.max_ops = static_cast<std::uint32_t>(config_.pipeline.max_applied_ops());
  const bool erasing =
      !config_.pipeline.steps().empty() &&
      config_.pipeline.steps().back().kind == StepKind::kRandomErasing;  // validation: last
  const bool erase_pixels = options_.dtype == DType::kUInt8;
  in.erase_boxes = erasing && !erase_pixels;  // a float output is erased by its normalize
  in.mixing = mixing_on(options_);            // resolve(): a float output
  in.soft_classes = static_cast<std::uint32_t>(options_.num_classes);
  in.compressed_bytes = options_.decode == Decode::kCpu ? 0 : options_.max_compressed_bytes;
  in.mask_bytes = masks ? static_cast<std::uint32_t>(options_.mask_depth / 8) : 0;
  in.worker_capacity = static_cast<std::uint32_t>(config_.capacity);
  in.poison_capacity = kPoisonCapacity;
  in.initial_slots = config_.initial_slots;
  in.memory_budget = config_.memory_budget;
  ArenaHeader h = plan_arena(in);
  std::snprintf(h.version, sizeof h.version, "%s", worker_version_tag().c_str());
  h.on_error_skip = options_.on_error == OnError::kSkip ? 1 : 0;
  h.verify_region = options_.verify == Verify::kRegion ? 1 : 0;
  h.max_pixels = options_.max_pixels;
  h.decode = static_cast<std::uint32_t>(options_.decode);
  h.gpu_share = static_cast<float>(options_.gpu_share);
  h.dataset_count = static_cast<std::uint32_t>(indexes.size());  // resolve(): <= kMaxDatasets
  std::int64_t first_id = 0;
  for (std::size_t d = 0; d < indexes.size(); ++d) {
    const MappedIndex& mapped = *indexes[d];
    const DatasetIndex& index = mapped.info();
    ArenaDataset& r = h.datasets[d];
    r.kind = index.kind;
    r.first_id = first_id;
    r.sample_count = index.size;
    first_id += index.size;
    if (const DatasetView view = mapped.view(); view.parquet())
      r.page_cache_mib = static_cast<std::uint32_t>(
          page_cache_bytes(view, config_.plan.shuffle, config_.plan.shuffle_window) >> 20);
    r.raw_height = index.height;
    r.raw_width = index.width;
    r.raw_channels = index.channels;
    r.box_total = static_cast<std::int64_t>(mapped.box_total());
    r.index_offset = mapped.region_offset();
    r.index_size = mapped.region_size();
    r.shard_copies = copies ? 1 : 0;
    r.label_offset = config_.label_offsets.empty() ? 0 : config_.label_offsets[d];
  }
  h.sample_count = first_id;
  h.box_min_size = options_.min_box_size;
  h.box_min_area = options_.min_box_area;
  h.box_min_visible = options_.min_box_visible;
  h.mask_ignore = static_cast<std::uint32_t>(options_.mask_ignore);
  h.seed = options_.seed;
  h.remote_deadline_s = config_.remote.policy.deadline_s;
  set_up_relayout_cache(indexes, h);

  LoaderCore::Setup setup;
  setup.plan = config_.plan;
  setup.mixture = config_.mixture;
  setup.initial_slots = config_.initial_slots;
  setup.start_epoch = config_.start_epoch;
  setup.start_batch = config_.start_batch;
  setup.chunk = chunk_for(options_, config_.initial_workers);
  setup.monitor_window = options_.monitor_window;
  setup.created = created;
  setup.devices = options_.devices;
  setup.data = config_.mixture ? config_.source_data : std::vector<std::string>{options_.data};
  setup.staging = staging_maker(env);
  setup.indexes = indexes;
  const std::vector<Step>& steps = config_.pipeline.steps();
  core_ = std::make_shared<LoaderCore>(
      h,
      [&](std::uint8_t* base) {
        std::memcpy(base + h.steps_offset, steps.data(), sizeof(Step) * steps.size());
      },
      setup);
}

std::function<std::unique_ptr<Staging>(LoaderCore&)> Loader::Impl::staging_maker(
    const LoaderEnvironment& env) const {
  const DeviceSet& set = options_.devices;
  const bool gpu = set.kind == DeviceSet::Kind::kCuda;
  // Consumers read the arena itself, unless the devices have JPEGs to decode there.
  if (!gpu && options_.dtype == DType::kUInt8 && options_.decode == Decode::kCpu) return {};
  return [this, &env, &set, gpu](LoaderCore& core) {
    const ArenaHeader& h = core.view.header();
    StagingConfig c;
    c.devices = set.count;
    c.samples_per_device = options_.batch / set.count;
    c.height = static_cast<int>(h.out_height);
    c.width = static_cast<int>(h.out_width);
    c.channels = static_cast<int>(h.out_channels);
    c.dtype = options_.dtype;
    c.layout = options_.layout;
    c.slots_base = core.arena.base() + h.slots_offset;
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
    // nvJPEG must load before any batch needs it (the tests' fake GPUs decode on the host).
    if (gpu && !env.gpu_backend && options_.decode != Decode::kCpu) require_nvjpeg();
    std::unique_ptr<DeviceBackend> backend = !gpu              ? make_host_backend(set.count)
                                             : env.gpu_backend ? env.gpu_backend(set)
                                                               : make_cuda_backend(set);
    c.labels_offset = h.labels_offset;
    c.valid_offset = h.valid_offset;
    c.erase_offset = h.erase_boxes != 0 ? h.erase_offset : 0;
    c.mix_offset = h.mixing != 0 ? h.mix_offset : 0;
    c.jpeg_jobs_offset = h.jpeg_jobs_offset;
    c.geometry_offset = h.geometry_offset;
    c.compressed_offset = h.compressed_offset;
    c.compressed_bytes = h.compressed_bytes;
    c.verify = options_.verify;
    LoaderCore* signalled = &core;
    auto staging = std::make_unique<Staging>(std::move(backend), c,
                                             [signalled](int) { signalled->signal_change(); });
    staging->pin_initial(static_cast<int>(config_.initial_slots));
    return staging;
  };
}

void Loader::Impl::set_up_relayout_cache(
    const std::vector<std::shared_ptr<const MappedIndex>>& indexes, ArenaHeader& h) {
  const Relayout which = options_.relayout_cache;
  if (which == Relayout::kOff || options_.relayout_limit == 0) return;
  bool any = false;  // a local image folder or list file among the datasets
  for (std::size_t d = 0; d < indexes.size(); ++d) {
    const bool files =
        indexes[d]->info().kind == DatasetKind::kFiles && !indexes[d]->info().parquet;
    h.datasets[d].relayout = files ? 1 : 0;
    any = any || files;
  }
  if (!any) {
    relayout_cache_ = "off (for image folders and list files)";
    return;
  }
  const std::string root = cache_root(options_.cache_dir);
  const std::string folder = root.empty() ? root : relayout_cache_folder(root);
  std::string why;
  if (folder.empty()) {
    why = "no cache folder can be named: set cache_dir or STOKE_CACHE_DIR";
  } else if (folder.size() >= sizeof h.relayout_folder) {
    why = "its folder's path is longer than " + std::to_string(sizeof h.relayout_folder - 1) +
          " bytes";
  } else {
    try {
      if (!prepare_cache_folder(root, false) || !prepare_cache_folder(folder, true))
        why = "cannot make " + folder + ": " + std::strerror(errno);
    } catch (const ConfigError& e) {
      why = e.what();
    }
  }
  if (!why.empty()) {  // (said by Stats only: a default that cannot be had is no news)
    relayout_cache_ = "off (" + why + ")";
    return;
  }
  h.relayout = static_cast<std::uint32_t>(which);
  h.relayout_limit = options_.relayout_limit;
  std::snprintf(h.relayout_folder, sizeof h.relayout_folder, "%s", folder.c_str());
  relayout_cache_ = "on: " + folder + ", " +
                    (which == Relayout::kAll ? "every JPEG" : "progressive JPEGs") + ", limit " +
                    bytes_text(options_.relayout_limit);
}

void Loader::Impl::set_up_shard_cache(const ShardCachePlan& plan) {
  std::unique_ptr<ShardStore> store;
  if (!plan.cached.empty()) store = std::make_unique<ShardStore>(plan.root, plan.limit);
  shard_cache_ = plan.summary;
  if (!plan.log_line.empty()) log_.post(plan.log_line);
  if (!store) return;
  prefetcher_ = std::make_unique<ShardPrefetcher>(
      std::make_unique<CorePrefetchHost>(core_), plan.cached, std::move(store),
      config_.remote.policy, *time_, core_->view.header().slot_capacity, log_);
  ShardPrefetcher* gate = prefetcher_.get();
  MutexLock lock(core_->mutex);
  core_->slots.install_gate([gate](std::int64_t seq, std::uint64_t generation, bool consumer_next) {
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
    std::vector<WorkerPool::DatasetFds> fds;
    for (const auto& index : core_->indexes) fds.push_back({index->fd(), index->pixels_fd()});
    done_fd_ = raise_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "an eventfd");
    try {
      supervisor_ =
          std::make_unique<Supervisor>(core_, config_, log_,
                                       std::make_unique<WorkerPool>(core_->view, core_->arena.fd(),
                                                                    done_fd_, std::move(fds), exe),
                                       done_fd_, *time_);
      supervisor_->start();
    } catch (...) {
      supervisor_.reset();
      ::close(done_fd_);  // ~Impl does not run for a constructor that throws
      throw;
    }
  }
  if (options_.num_classes > 0)
    mixer_ = std::make_unique<BatchMixer>(
        mix_config(options_, config_.pipeline.output_height(), config_.pipeline.output_width()),
        core_->view, options_.devices.count);
  if (core_->staging)
    stager_ = std::make_unique<Stager>(stage_queue(core_), *core_->staging,
                                       options_.devices.to_string(), mixer_.get());
}

void Loader::Impl::log_failed(std::exception_ptr error) {
  MutexLock lock(core_->mutex);
  if (core_->fatal) {  // the loader stopped already, with its first error: show this one too
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "stoke: %s\n", e.what());
    }
  }
  core_->fail(std::move(error));
}

void Loader::Impl::flush_log() {
  log_.flush();
}

Loader::Impl::~Impl() {
  {
    MutexLock lock(core_->mutex);
    core_->stop = true;
  }
  core_->signal_change();
  stager_.reset();
  supervisor_.reset();
  if (prefetcher_) {
    {
      MutexLock lock(core_->mutex);
      core_->slots.install_gate(nullptr);
    }
    prefetcher_.reset();
  }
  if (done_fd_ >= 0) ::close(done_fd_);
  diagnosis_.reset();  // (its findings are logged below)
  flush_log();
  // Batches still held keep core_ (and the arena mapping) alive; nothing else refers to us.
}

// ---- public surface ------------------------------------------------------------------------

Loader::Loader(Options options) : Loader(std::move(options), LoaderEnvironment{}) {}

void LoaderAccess::while_locked(Loader& loader, const std::function<void()>& f) {
  MutexLock lock(loader.impl_->core().mutex);
  f();
}

std::uint64_t LoaderAccess::chunks_queued_for(Loader& loader, pid_t pid) {
  const ArenaView& view = loader.impl_->core().view;
  for (std::uint32_t i = 0; i < view.header().worker_capacity; ++i) {
    const WorkerRecord& r = view.worker(i);
    if (r.pid == pid) return r.tasks.size();
  }
  return 0;
}

Loader::Loader(Options options, const LoaderEnvironment& env) {
  const Clock::time_point created = env.time ? env.time->now() : Clock::now();
  check_options(options);
  read_mixture_file(options);
  if (!options.sources.empty() && !options.data.empty())
    throw ConfigError("give data (one dataset) or sources (a mixture), not both: data is " +
                      redact_url(options.data));
  // (Before a lone source becomes the loader's own dataset below: a loader-level source option
  // beside it would be overwritten silently.)
  if (!options.sources.empty()) check_mixture_options(options);
  // One source read once an epoch, its labels as they are: the loader of that one dataset (the
  // same batches, bytes and states).
  if (options.sources.size() == 1) {
    const MixtureSource& only = options.sources.front();
    if (only.weight >= 0 && only.samples == 0 && only.repeat == 0 && options.epoch_samples == 0 &&
        (only.label_offset == 0 || only.label_offset == kAutoLabelOffset)) {
      static_cast<SourceOptions&>(options) = only;
      options.sources.clear();
    }
  }
  RemoteConfig remote = resolve_remote(options);
  EventLog early(options.log);  // (the loader's own log does not exist yet)
  const auto index = [&](const SourceOptions& source, int num_classes) {
    IndexOptions request;
    request.split = source.split;
    request.label_field = source.label_field;
    request.image_column = source.image_column;
    request.label_column = source.label_column;
    request.image_root = source.image_root;
    request.mask_field = options.mask_field;
    request.bytes_field = options.bytes_field;
    request.box_field = options.box_field;
    request.on_error = options.on_error;
    request.max_classes = options.max_classes;
    request.num_classes = num_classes;
    request.caches = {remote.cache_root, remote.cache_limit > 0};
    request.remote = remote.policy;
    request.progress = [&early](const std::string& line) {
      early.post(line);
      early.flush();
    };
    return index_dataset(source.data, request);
  };
  std::vector<std::shared_ptr<const MappedIndex>> indexes;
  std::optional<ResolvedConfig> config;
  if (options.sources.empty()) {
    indexes.push_back(index(options, options.num_classes));
    config.emplace(resolve(std::move(options), *indexes.front(), std::move(remote)));
  } else {
    LabelOffsets offsets;
    for (std::size_t s = 0; s < options.sources.size(); ++s) {
      const MixtureSource& source = options.sources[s];
      // A dataset-level index's shards hold their labels below num_classes as they are read:
      // a source's, less its offset (an automatic one follows the sources indexed before it).
      const std::int64_t offset = offsets.of(source);
      const int classes =
          options.num_classes > 0
              ? static_cast<int>(std::max<std::int64_t>(options.num_classes - offset, 1))
              : 0;
      try {
        indexes.push_back(index(source, classes));
      } catch (const ConfigError& e) {
        throw ConfigError("source " + std::to_string(s) + ": " + e.what());
      }
      offsets.add(offset, indexes.back()->info().class_names.size());
    }
    config.emplace(resolve_mixture(std::move(options), indexes, std::move(remote)));
  }
  for (const auto& mapped : indexes)
    mapped->release_pages();  // what resolving read: the workers read the page cache's copy
  impl_ = std::make_unique<Impl>(std::move(*config), std::move(indexes), env, created);
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
const std::vector<std::string>& Loader::class_names() const { return impl_->class_names(); }
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
