#include "device/staging.hpp"

#include <chrono>
#include <cstring>

#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

constexpr int kBounceBuffersPerDevice = 2;

}  // namespace

Staging::Staging(std::unique_ptr<DeviceBackend> backend, const StagingConfig& config,
                 std::function<void(int)> on_done)
    : backend_(std::move(backend)),
      config_(config),
      on_done_(std::move(on_done)),
      chunk_bytes_(static_cast<std::size_t>(config.samples_per_device) * config.height *
                   config.width * config.channels),
      out_bytes_(config.dtype == DType::kUInt8 ? chunk_bytes_
                                               : chunk_bytes_ * kernels::dtype_size(config.dtype)),
      meta_bytes_(config.valid_offset +
                  static_cast<std::size_t>(config.samples_per_device) * config.devices -
                  config.labels_offset),
      slots_(config.slot_capacity) {
  counts_.mode = backend_->gpu() ? StagingMode::kRegistered : StagingMode::kHost;
}

Staging::~Staging() {
  backend_->synchronize();
  for (const auto& set : sets_) {
    for (int d = 0; d < config_.devices; ++d) {
      const auto u = static_cast<std::size_t>(d);
      if (set->d_in[u] != nullptr) backend_->free(d, set->d_in[u]);
      if (set->d_out[u] != nullptr) backend_->free(d, set->d_out[u]);
      if (set->d_pre[u] != nullptr) backend_->free(d, set->d_pre[u]);
      if (set->d_meta[u] != nullptr) backend_->free(d, set->d_meta[u]);
      if (set->events[u] != nullptr) backend_->destroy_event(d, set->events[u]);
    }
  }
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i] && slots_[i]->pinned)
      backend_->unpin(0, config_.slots_base + i * config_.slot_stride);
  }
  for (void* p : bounce_all_) backend_->free_pinned(0, p);
}

kernels::NormalizeParams normalize_params(const StagingConfig& config) {
  kernels::NormalizeParams p;
  p.samples = config.samples_per_device;
  p.height = config.height;
  p.width = config.width;
  p.channels = config.channels;
  p.dtype = config.dtype;
  p.layout = config.layout;
  for (int c = 0; c < 4; ++c) {
    p.mean[c] = config.mean[c];
    p.stddev[c] = config.stddev[c];
  }
  return p;
}

const std::uint8_t* Staging::chunk_src(int slot, int dev) const {
  return config_.slots_base + static_cast<std::size_t>(slot) * config_.slot_stride +
         static_cast<std::size_t>(dev) * chunk_bytes_;
}

const std::uint8_t* Staging::meta_src(int slot) const {
  return config_.slots_base + static_cast<std::size_t>(slot) * config_.slot_stride +
         config_.labels_offset;
}

JpegChunk Staging::jpeg_chunk(int slot, int dev) {
  std::uint8_t* base = config_.slots_base + static_cast<std::size_t>(slot) * config_.slot_stride;
  const auto first = static_cast<std::size_t>(samples_before(dev));
  JpegChunk c;
  c.jobs = reinterpret_cast<const JpegJob*>(base + config_.jpeg_jobs_offset) + first;
  c.geometry = reinterpret_cast<const float*>(base + config_.geometry_offset) + 6 * first;
  c.compressed = base + config_.compressed_offset + first * config_.compressed_bytes;
  c.stride = config_.compressed_bytes;
  c.samples = config_.samples_per_device;
  c.height = config_.height;
  c.width = config_.width;
  c.channels = config_.channels;
  c.verify = config_.verify;
  c.failed = &decode_failed_;
  c.decode_ns = &decode_ns_;
  return c;
}

void Staging::try_pin(int slot, SlotStage& s) {
  if (!backend_->gpu() || s.pinned) return;
  {
    MutexLock lock(mutex_);
    if (!fallback_reason_.empty()) return;  // failed once: the limit will not have moved
  }
  void* p = config_.slots_base + static_cast<std::size_t>(slot) * config_.slot_stride;
  const std::string why = backend_->pin(0, p, config_.slot_stride);
  MutexLock lock(mutex_);
  if (why.empty()) {
    s.pinned = true;
    counts_.pinned_bytes += static_cast<std::int64_t>(config_.slot_stride);
  } else {
    fallback_reason_ = why;
    counts_.mode = StagingMode::kPinnedFallback;
    counts_.fallback_reason = "page-locking the arena failed (" + why +
                              "); copying each chunk through pinned staging buffers";
  }
}

void Staging::pin_initial(int n) {
  for (int i = 0; i < n; ++i) try_pin(i, prepare(i));
}

Staging::SlotStage& Staging::prepare(int slot) {
  auto& entry = slots_[static_cast<std::size_t>(slot)];
  if (entry) return *entry;
  auto s = std::make_unique<SlotStage>();
  s->work.resize(static_cast<std::size_t>(config_.devices));
  s->hold_work.resize(static_cast<std::size_t>(config_.devices));
  for (int d = 0; d < config_.devices; ++d) {
    s->work[static_cast<std::size_t>(d)] = DeviceWork{this, slot, d, nullptr};
    s->hold_work[static_cast<std::size_t>(d)] = DeviceWork{this, slot, d, nullptr};
  }
  entry = std::move(s);
  return *entry;
}

// A free buffer set, or a new one (its buffers are allocated by stage()).
Staging::BufferSet* Staging::take_set() {
  MutexLock lock(mutex_);
  if (!free_sets_.empty()) {
    BufferSet* set = free_sets_.back();
    free_sets_.pop_back();
    return set;
  }
  auto set = std::make_unique<BufferSet>();
  const auto n = static_cast<std::size_t>(config_.devices);
  set->d_in.assign(n, nullptr);
  set->d_out.assign(n, nullptr);
  set->d_pre.assign(n, nullptr);
  set->d_meta.assign(n, nullptr);
  set->events.assign(n, nullptr);
  sets_.push_back(std::move(set));
  return sets_.back().get();
}

void Staging::release(int slot) {
  MutexLock lock(mutex_);
  SlotStage* s = slots_[static_cast<std::size_t>(slot)].get();
  if (s == nullptr || s->set == nullptr) return;
  free_sets_.push_back(s->set);
  s->set = nullptr;
}

void* Staging::allocate(int dev, std::size_t n) {
  void* p = backend_->alloc(dev, n);
  MutexLock lock(mutex_);
  counts_.device_bytes += static_cast<std::int64_t>(n);
  return p;
}

namespace {
constexpr auto kBounceWait = std::chrono::seconds(60);
}  // namespace

void* Staging::take_bounce() {
  MutexLock lock(mutex_);
  if (bounce_free_.empty() &&
      bounce_all_.size() < static_cast<std::size_t>(kBounceBuffersPerDevice * config_.devices)) {
    void* p =
        without_lock(mutex_, [&] { return backend_->alloc_pinned(0, chunk_bytes_ + meta_bytes_); });
    bounce_all_.push_back(p);
    return p;
  }
  // A bounce buffer comes free when a device finishes the copy out of it; a device that has
  // not finished one in this long has stopped, and waiting on would hang the loader.
  const auto until = std::chrono::steady_clock::now() + kBounceWait;
  while (bounce_free_.empty()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until)
      throw Error("no page-locked staging buffer came free within " +
                  std::to_string(kBounceWait.count()) +
                  " s: the device has stopped completing copies");
    bounce_cv_.wait_for(lock, until - now);
  }
  void* p = bounce_free_.back();
  bounce_free_.pop_back();
  return p;
}

void Staging::give_bounce(void* p) {
  {
    MutexLock lock(mutex_);
    bounce_free_.push_back(p);
  }
  bounce_cv_.notify_one();
}

void Staging::begin(int slot) {
  prepare(slot).outstanding.store(config_.devices, std::memory_order_release);
}

void Staging::hold(int slot) {
  // Added, not stored: the batch's own copies may still be in flight.
  prepare(slot).outstanding.fetch_add(config_.devices, std::memory_order_acq_rel);
}

void Staging::pass_hold(int slot) noexcept {
  SlotStage& s = *slots_[static_cast<std::size_t>(slot)];
  for (int d = 0; d < config_.devices; ++d) {
    DeviceWork& w = s.hold_work[static_cast<std::size_t>(d)];
    try {
      backend_->call_when_done(d, &Staging::device_done, &w);
    } catch (...) {
      // The device refuses work: it is broken (the next stage() reports it), and its queue
      // will not read the slot again.
      device_done(&w);
    }
  }
}

bool Staging::transferring(int slot) const {
  const SlotStage* s = slots_[static_cast<std::size_t>(slot)].get();
  return s != nullptr && s->outstanding.load(std::memory_order_acquire) > 0;
}

void Staging::stage(int slot) {
  SlotStage& s = prepare(slot);
  try_pin(slot, s);
  // A slot staged before and abandoned by a reposition still has its set.
  if (s.set == nullptr) {
    BufferSet* set = take_set();
    MutexLock lock(mutex_);
    s.set = set;
  }
  BufferSet& set = *s.set;
  const bool gpu = backend_->gpu();
  const bool normalize = config_.dtype != DType::kUInt8;
  const bool mixing = normalize && config_.mix_offset != 0;
  const kernels::NormalizeParams p = normalize_params(config_);
  std::int64_t host_copied = 0;
  for (int d = 0; d < config_.devices; ++d) {
    const auto u = static_cast<std::size_t>(d);
    if (gpu && set.d_in[u] == nullptr) set.d_in[u] = allocate(d, chunk_bytes_);
    if (normalize && set.d_out[u] == nullptr) set.d_out[u] = allocate(d, out_bytes_);
    if (mixing && set.d_pre[u] == nullptr) set.d_pre[u] = allocate(d, out_bytes_);
    if (gpu && set.d_meta[u] == nullptr) set.d_meta[u] = allocate(d, meta_bytes_);
    if (set.events[u] == nullptr) set.events[u] = backend_->create_event(d);
    const std::uint8_t* src = chunk_src(slot, d);
    const std::uint8_t* meta = meta_src(slot);
    DeviceWork& w = s.work[u];
    w.bounce = nullptr;
    if (gpu) {
      if (!s.pinned) {
        auto* bounce = static_cast<std::uint8_t*>(take_bounce());
        w.bounce = bounce;
        std::memcpy(bounce, src, chunk_bytes_);
        std::memcpy(bounce + chunk_bytes_, meta, meta_bytes_);
        host_copied += static_cast<std::int64_t>(chunk_bytes_ + meta_bytes_);
        src = bounce;
        meta = bounce + chunk_bytes_;
      }
      backend_->copy(d, set.d_in[u], src, chunk_bytes_);
      backend_->copy(d, set.d_meta[u], meta, meta_bytes_);
      src = static_cast<const std::uint8_t*>(set.d_in[u]);
    }
    if (config_.compressed_bytes > 0) {
      // Host devices decode into the slot's own pixels: the slot is the stager's until
      // on_done, and its chunk is what they normalize (or deliver, for uint8).
      backend_->decode_jpegs(d, jpeg_chunk(slot, d), const_cast<std::uint8_t*>(src));
    }
    // Mixing reads every sample of the erased chunk while it writes: the chunk is made in a
    // buffer of its own first.
    void* normalized = mixing ? set.d_pre[u] : set.d_out[u];
    if (normalize) backend_->normalize(d, p, src, normalized);
    // The rectangles and mixing from the device's copy of the chunk's arrays (host devices:
    // the slot's).
    if (normalize && config_.erase_offset != 0)
      backend_->erase(
          d, kernels::erase_params(p, field<kernels::EraseBox>(slot, d, config_.erase_offset, 1)),
          normalized);
    if (mixing)
      backend_->mix(
          d, kernels::mix_params(p, field<kernels::MixSample>(slot, d, config_.mix_offset, 1)),
          normalized, set.d_out[u]);
    backend_->record(d, set.events[u]);
    backend_->call_when_done(d, &Staging::device_done, &w);
  }
  MutexLock lock(mutex_);
  counts_.staged_batches += 1;
  if (gpu) {
    counts_.dma_copies += 2 * config_.devices;
    counts_.dma_bytes += static_cast<std::int64_t>(chunk_bytes_ + meta_bytes_) * config_.devices;
  }
  counts_.host_copy_bytes += host_copied;
}

void Staging::device_done(void* arg) {
  auto* w = static_cast<DeviceWork*>(arg);
  Staging& self = *w->owner;
  if (w->bounce != nullptr) self.give_bounce(w->bounce);
  SlotStage& s = *self.slots_[static_cast<std::size_t>(w->slot)];
  if (s.outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) self.on_done_(w->slot);
}

const void* Staging::output(int slot, int dev) const {
  const BufferSet& set = *slots_[static_cast<std::size_t>(slot)]->set;
  const auto u = static_cast<std::size_t>(dev);
  if (config_.dtype != DType::kUInt8) return set.d_out[u];
  return backend_->gpu() ? set.d_in[u] : chunk_src(slot, dev);
}

// Where device dev reads the slot's labels..valid bytes: its copy on a GPU, else the slot.
const std::uint8_t* Staging::meta(int slot, int dev) const {
  if (!backend_->gpu()) return meta_src(slot);
  return static_cast<const std::uint8_t*>(
      slots_[static_cast<std::size_t>(slot)]->set->d_meta[static_cast<std::size_t>(dev)]);
}

Event Staging::ready(int slot, int dev) const {
  return slots_[static_cast<std::size_t>(slot)]->set->events[static_cast<std::size_t>(dev)];
}

void Staging::wait(int slot, int dev) const {
  backend_->wait(dev, ready(slot, dev));
}

void Staging::wait_on(int slot, int dev, void* stream) const {
  backend_->stream_wait_event(dev, stream, ready(slot, dev));
}

void Staging::consumer_used(int dev, void* stream) {
  backend_->wait_for_stream(dev, stream);
}

StagingStats Staging::stats() const {
  MutexLock lock(mutex_);
  StagingStats s = counts_;
  s.device_decode_failed = decode_failed_.load(std::memory_order_relaxed);
  s.device_decode_ns = decode_ns_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace stoke::detail
