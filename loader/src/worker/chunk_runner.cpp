#include "worker/chunk_runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <opencv2/core.hpp>
#include <string>

#include "augment/masks.hpp"
#include "common/stopwatch.hpp"
#include "data/shard_cache.hpp"
#include "data/shard_list.hpp"

namespace stoke::detail {

namespace {

// The training process's remote policy, as the arena carries it. (Workers do not read
// STOKE_REMOTE_DEADLINE_S themselves: a worker started after the training process changed its
// environment would otherwise read with another deadline than the index and the prefetcher.)
RemotePolicy arena_policy(const ArenaHeader& h) {
  RemotePolicy policy;
  if (h.remote_deadline_s > 0) policy.deadline_s = h.remote_deadline_s;
  return policy;
}

}  // namespace

ChunkRunner::Dataset::Dataset(const ArenaView& arena, std::size_t d)
    : record(arena.header().datasets[d]),
      first(record.first_id),
      view(arena.dataset(d)),
      parquet(std::size_t{record.page_cache_mib} << 20) {
  if (view.lazy()) tables.emplace(view, arena_policy(arena.header()), record.shard_copies != 0);
}

ChunkRunner::ChunkRunner(const ArenaView& arena, FileReader* files)
    : arena_(arena),
      own_files_(files != nullptr ? nullptr
                                  : std::make_unique<SampleFiles>(arena_policy(arena.header()))),
      files_(files != nullptr ? *files : *own_files_),
      decoder_(arena.header().max_pixels) {
  for (std::uint32_t d = 0; d < arena.header().dataset_count; ++d) datasets_.emplace_back(arena, d);
  dataset_ = &datasets_.front();
  view_ = &dataset_->view;
  jpeg_.set_verify(arena.header().verify_region != 0 ? Verify::kRegion : Verify::kWholeFile);
  const ArenaHeader& h = arena.header();
  if (h.relayout != 0)  // (set only with a folder and a limit; each dataset's record says more)
    relayout_.emplace(
        std::string(h.relayout_folder, ::strnlen(h.relayout_folder, sizeof h.relayout_folder)),
        h.relayout_limit, static_cast<stoke::Relayout>(h.relayout),
        static_cast<std::uint64_t>(h.max_pixels));
  // A float output's erasing is its normalize's (the slots then hold erase boxes); a uint8
  // output's is the worker's.
  augmenter_.set_erase_pixels(arena.header().erase_boxes == 0);
}

BadInput ChunkRunner::produce(std::int64_t sample, SampleRng rng, std::uint8_t* dst,
                              const FieldSlots& to) {
  if (current_ != nullptr) current_->store(sample, std::memory_order_relaxed);
  if (poisoned(sample)) return BadInput::kCrashedWorker;
  dataset_ = &datasets_[arena_.dataset_of(sample)];
  const std::int64_t row = sample - dataset_->first;
  if (dataset_->tables) {
    const ShardTables::Located at = dataset_->tables->locate(row);
    if (at.error != BadInput::kNone) return at.error;
    view_ = at.view;
    row_ = at.row;
  } else {
    view_ = &dataset_->view;
    row_ = row;
  }
  augmenter_.set_boxes(view_->boxes(row_));  // for box_crop
  if (to.job != nullptr) *to.job = JpegJob{.why = to.device ? JpegJob::kNotJpeg : JpegJob::kHybrid};
  try {
    const BadInput r = produce_or_throw(rng, dst, to);
    if (r != BadInput::kNone) return r;
    if (to.mask != nullptr) {
      const BadInput m = produce_mask(to.mask);
      if (m != BadInput::kNone) return in_mask(m);
    }
    return to.bytes == nullptr ? r : produce_bytes(to.bytes, to.byte_count);
  } catch (const std::bad_alloc&) {
    return BadInput::kTooLarge;
  } catch (const ImageTooLarge&) {
    return BadInput::kTooLarge;
  } catch (const cv::Exception&) {
    return BadInput::kUndecodable;
  } catch (const BadImage& e) {
    return e.reason;
  }
}

BadInput ChunkRunner::produce_or_throw(SampleRng& rng, std::uint8_t* dst, const FieldSlots& to) {
  const ArenaHeader& h = arena_.header();
  ImageRef src;
  if (view_->raw()) {
    const ArenaDataset& r = dataset_->record;
    src = ImageRef{view_->raw_pixels(row_),
                   r.raw_height,
                   r.raw_width,
                   r.raw_channels,
                   static_cast<std::size_t>(r.raw_width) * r.raw_channels,
                   false};
  } else {
    std::span<const std::uint8_t> bytes;
    if (view_->parquet()) {
      const Stopwatch watch(read_ns_);
      ByteSpan row;
      const BadInput read =
          dataset_->parquet.read_image(*view_, row_, page_reader(), files_, file_, path_, row);
      if (read != BadInput::kNone) return read;
      bytes = {row.data, row.size};
    } else {
      const BadInput read = relayout_ && dataset_->record.relayout != 0
                                ? read_image_file()
                                : read_sample_file(false, view_->range(row_));
      if (read != BadInput::kNone) return read;
      bytes = file_;
    }
    if (is_jpeg(bytes)) {
      // Decoded lazily: only the region the pipeline reads, at the scale it needs.
      const BadInput r = jpeg_.open(bytes.data(), bytes.size(), h.out_channels, h.max_pixels);
      if (r != BadInput::kNone) return r;
      if (!annotated_size(jpeg_.width(), jpeg_.height())) return BadInput::kWrongSize;
      if (to.device && hand_to_devices(bytes, rng, to)) return BadInput::kNone;
      augmenter_.run(arena_.steps(), static_cast<int>(h.step_count), jpeg_, rng, dst, h.out_height,
                     h.out_width, h.out_channels);
      return BadInput::kNone;
    }
    BadInput r;
    {
      const Stopwatch watch(decode_ns_);
      r = decoder_.decode_buffer(bytes.data(), bytes.size(), h.out_channels, decoded_);
    }
    if (r != BadInput::kNone) return r;
    const cv::Mat& m = decoded_.pixels;
    if (!annotated_size(m.cols, m.rows)) return BadInput::kWrongSize;
    src = ImageRef{m.data, m.rows, m.cols, m.channels(), m.step[0], decoded_.bgr};
  }
  augmenter_.run(arena_.steps(), static_cast<int>(h.step_count), src, rng, dst, h.out_height,
                 h.out_width, h.out_channels);
  return BadInput::kNone;
}

bool ChunkRunner::hand_to_devices(std::span<const std::uint8_t> bytes, SampleRng& rng,
                                  const FieldSlots& to) {
  const ArenaHeader& h = arena_.header();
  JpegJob& job = *to.job;
  if (!jpeg_.device_decodable()) {
    job.why = JpegJob::kUnsupported;
    return false;
  }
  if (bytes.size() > h.compressed_bytes) {
    job.why = JpegJob::kTooLarge;
    return false;
  }
  // Its map goes into the slot's geometry (write_geometry), which says where the devices
  // resample from.
  augmenter_.run_geometry(arena_.steps(), static_cast<int>(h.step_count), jpeg_, rng, h.out_height,
                          h.out_width, h.out_channels);
  job = JpegJob{.by = JpegJob::kDevice,
                .why = JpegJob::kNone,
                .size = static_cast<std::uint32_t>(bytes.size()),
                .progressive = jpeg_.progressive() ? 1u : 0u};
  std::memcpy(to.compressed, bytes.data(), bytes.size());
  return true;
}

ParquetRows::ReadRange ChunkRunner::page_reader() {
  return [this](const ByteRange& range, std::vector<std::uint8_t>& into) {
    const BadInput r = read_sample_bytes(false, range);
    into.swap(file_);
    return r;
  };
}

BadInput ChunkRunner::read_sample_file(bool mask_file, ByteRange range) {
  const Stopwatch watch(read_ns_);
  return read_sample_bytes(mask_file, range);
}

BadInput ChunkRunner::read_image_file() {
  const ByteRange range = view_->range(row_);
  path_ = view_->path(row_);
  // A plain local file (a shard's member has a range; a URL is read from its server).
  if (range.offset != 0 || range.size != 0 || is_url(path_)) return read_sample_file(false, range);
  {
    const Stopwatch watch(read_ns_);
    if (relayout_->read(path_, file_)) return BadInput::kNone;
  }
  const BadInput read = read_sample_file(false, range);
  if (read != BadInput::kNone) return read;
  // Re-laying a file out is decoding work (its coefficients are read and written again).
  const Stopwatch watch(decode_ns_);
  relayout_->offer(file_);
  return BadInput::kNone;
}

BadInput ChunkRunner::read_sample_bytes(bool mask_file, ByteRange range) {
  BadInput read = BadInput::kMissing;
  // A remote shard's local copy when the shard cache has it (it may never have been fetched,
  // been evicted since, or be unreadable here: then the server's bytes, by a ranged request).
  if (const std::string_view copy = mask_file ? std::string_view() : view_->copy(row_);
      !copy.empty()) {
    path_.assign(copy);
    read = read_shard_copy(path_, range, file_);  // never through a planted symlink
  }
  if (read == BadInput::kMissing || read == BadInput::kUnreadable) {
    path_ = mask_file ? view_->mask_path(row_) : view_->path(row_);
    read = files_.read(path_, range, file_);
  }
  return read;
}

BadInput ChunkRunner::produce_bytes(std::uint8_t* dst, std::int32_t* count) {
  const ArenaHeader& h = arena_.header();
  const ByteRange range = view_->bytes_range(row_);
  const std::size_t n = std::min<std::size_t>(range.size, h.max_bytes);
  if (n > 0 && view_->parquet()) {
    // A row's value in the bytes column (the index has its size: a page that gives another is
    // not the page indexed).
    const Stopwatch watch(read_ns_);
    ByteSpan value;
    const BadInput read = dataset_->parquet.read(*view_, row_, kParquetBytes, page_reader(), value);
    if (read != BadInput::kNone) return read;
    if (value.size != range.size) return BadInput::kCorrupt;
    std::memcpy(dst, value.data, n);
  } else if (n > 0) {
    const BadInput read = read_sample_file(false, {range.offset, n});
    if (read != BadInput::kNone) return read;
    std::memcpy(dst, file_.data(), n);
  }
  std::memset(dst + n, 0, h.max_bytes - n);
  *count = static_cast<std::int32_t>(n);
  return BadInput::kNone;
}

BadInput ChunkRunner::produce_mask(std::uint8_t* dst) {
  const ArenaHeader& h = arena_.header();
  const bool own_file = view_->mask_kind(row_) == kMaskFile;
  const BadInput read = read_sample_file(own_file, view_->mask_range(row_));
  if (read != BadInput::kNone) return read;
  const OutputMap& map = augmenter_.output_map();
  LabelMap labels;
  BadInput r;
  {
    const Stopwatch watch(decode_ns_);
    r = decode_mask(map, labels);
  }
  if (r != BadInput::kNone) return r;
  map_mask(augmenter_.warps(), augmenter_.map_after_warps(), labels, h.out_width, h.out_height,
           static_cast<int>(h.mask_bytes), static_cast<std::uint16_t>(h.mask_ignore), dst);
  return BadInput::kNone;
}

namespace {

// Whether every label of rows [0, rows) fits in 8 bits.
bool fits_8_bits(const LabelMap& m, int rows) {
  for (int y = 0; y < rows; ++y) {
    const auto* row = reinterpret_cast<const std::uint16_t*>(
        static_cast<const std::uint8_t*>(m.data) + static_cast<std::size_t>(y) * m.stride);
    for (int x = 0; x < m.width; ++x) {
      if (row[x] > 255) return false;
    }
  }
  return true;
}

}  // namespace

BadInput ChunkRunner::decode_mask(const OutputMap& map, LabelMap& out) {
  const ArenaHeader& h = arena_.header();
  int rows = 0;  // decoded rows, from the top
#ifndef STOKE_NO_IMGCODECS
  if (is_png(file_.data(), file_.size())) {
    if (const BadInput r = png_mask_.open(file_.data(), file_.size(), h.max_pixels);
        r != BadInput::kNone)
      return r;
    // Before any row is decoded: a mask of another size cannot fit its image.
    if (png_mask_.width() != map.source_width || png_mask_.height() != map.source_height)
      return BadInput::kWrongSize;
    const bool whole = h.verify_region == 0;
    rows = whole ? png_mask_.height()
                 : last_source_row(augmenter_.warps(), augmenter_.map_after_warps(),
                                   static_cast<int>(h.out_height), png_mask_.height()) +
                       1;
    if (const BadInput r = png_mask_.decode(std::max(rows - 1, 0), whole); r != BadInput::kNone)
      return r;
    out = LabelMap{png_mask_.rows(), png_mask_.width(), png_mask_.height(), png_mask_.bytes(),
                   png_mask_.stride()};
  } else
#endif
  {
    const BadInput r = decoder_.decode_label_map(file_.data(), file_.size(), mask_);
    if (r != BadInput::kNone) return r;
    const cv::Mat& m = mask_.pixels;
    if (m.cols != map.source_width || m.rows != map.source_height) return BadInput::kWrongSize;
    out = LabelMap{m.data, m.cols, m.rows, m.depth() == CV_16U ? 2 : 1, m.step[0]};
    rows = m.rows;
  }
  if (out.bytes == 2 && h.mask_bytes == 1 && !fits_8_bits(out, rows)) return BadInput::kBadMask;
  return BadInput::kNone;
}

bool ChunkRunner::annotated_size(int width, int height) const {
  const int w = view_->annotated_width(row_), h = view_->annotated_height(row_);
  return w == 0 || (w == width && h == height);
}

void ChunkRunner::write_boxes(std::uint32_t slot, std::uint32_t j) {
  const ArenaHeader& h = arena_.header();
  const std::size_t max = h.max_boxes;
  const BoxRules rules{h.box_min_size, h.box_min_area, h.box_min_visible};
  const std::span<const SampleBox> source = view_->boxes(row_);
  mapped_.resize(max);
  kept_.resize(max);
  const std::size_t n = map_boxes(augmenter_.warps(), augmenter_.map_after_warps(), h.out_width,
                                  h.out_height, rules, source, mapped_, kept_);
  float* boxes = arena_.boxes(slot) + j * max * 4;
  std::int32_t* classes = arena_.box_classes(slot) + j * max;
  for (std::size_t k = 0; k < max; ++k) {
    const Box b = k < n ? mapped_[k] : Box{};
    boxes[4 * k] = b.x1;
    boxes[4 * k + 1] = b.y1;
    boxes[4 * k + 2] = b.x2;
    boxes[4 * k + 3] = b.y2;
    classes[k] = k < n ? dataset_->offset(source[kept_[k]].label) : -1;
  }
  arena_.box_counts(slot)[j] = static_cast<std::int32_t>(n);
}

void ChunkRunner::write_geometry(std::uint32_t slot, std::uint32_t j) {
  const OutputMap& m = augmenter_.output_map();
  float* g = arena_.geometry(slot) + 6 * j;
  g[0] = static_cast<float>(m.sx);
  g[1] = static_cast<float>(m.tx);
  g[2] = static_cast<float>(m.sy);
  g[3] = static_cast<float>(m.ty);
  g[4] = static_cast<float>(m.source_width);
  g[5] = static_cast<float>(m.source_height);
}

// The sample's photometric ops in order, then kNone to the row's end.
void ChunkRunner::write_ops(std::uint32_t slot, std::uint32_t j) {
  const std::uint32_t width = arena_.header().max_ops;
  AppliedOp* row = arena_.applied_ops(slot) + std::size_t{width} * j;
  const std::span<const AppliedOp> ops = augmenter_.applied_ops();
  const std::size_t n = std::min<std::size_t>(ops.size(), width);  // validation: ops <= width
  std::copy_n(ops.begin(), n, row);
  std::fill(row + n, row + width, AppliedOp{});
}

void ChunkRunner::prefetch_raw(std::int64_t sample) const {
  const Dataset& d = datasets_[arena_.dataset_of(sample)];
  if (!d.view.raw()) return;
  const std::uint8_t* p = d.view.raw_pixels(sample - d.first);
  const std::size_t bytes = d.view.raw_bytes();
  for (std::size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off);
}

bool ChunkRunner::poisoned(std::int64_t sample) const {
  const std::uint32_t n = arena_.poisoned_count().load(std::memory_order_acquire);
  const std::int64_t* list = arena_.poisoned();
  for (std::uint32_t i = 0; i < n; ++i) {
    if (list[i] == sample) return true;
  }
  return false;
}

Completion ChunkRunner::run(const Task& task, std::atomic<std::int64_t>* current) noexcept {
  const ArenaHeader& h = arena_.header();
  current_ = current;
  Completion done;
  done.seq = task.seq;
  const auto started = std::chrono::steady_clock::now();
  read_ns_ = decode_ns_ = 0;
  jpeg_.take_decode_ns();
  const std::int64_t hits_before = relayout_ ? relayout_->hits() : 0;
  const std::int64_t stored_before = relayout_ ? relayout_->stored() : 0;
  // Where the chunk's time went; everything but reading and decoding counts as augmenting.
  const auto timed = [&]() -> Completion& {
    const std::int64_t total = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - started)
                                   .count();
    done.read_ns = read_ns_;
    done.decode_ns = decode_ns_ + jpeg_.take_decode_ns();
    done.augment_ns = std::max<std::int64_t>(0, total - done.read_ns - done.decode_ns);
    if (relayout_) {
      done.relayout_hits = static_cast<std::int32_t>(relayout_->hits() - hits_before);
      done.relayout_stored = static_cast<std::int32_t>(relayout_->stored() - stored_before);
    }
    return done;
  };
  std::uint8_t* pixels = arena_.pixels(task.slot);
  std::int32_t* labels = arena_.labels(task.slot);
  std::int64_t* ids = arena_.ids(task.slot);
  const std::int64_t* planned = arena_.planned_ids(task.slot);
  std::uint8_t* bad = arena_.bad(task.slot);
  const std::uint32_t end = task.begin + task.count;
  const bool raw = std::any_of(datasets_.begin(), datasets_.end(),
                               [](const Dataset& d) { return d.view.raw(); });
  for (std::uint32_t j = task.begin; j < end; ++j) {
    // Raw samples sit at random places in a large index: fetch the next ones' pixels early so
    // the copy below does not wait on memory.
    if (raw && j + 2 < end) prefetch_raw(planned[j + 2]);
    const std::int64_t position = task.global_begin + (j - task.begin);
    const std::int64_t wanted = planned[j];
    std::uint8_t* dst = pixels + j * h.sample_bytes;
    FieldSlots to;
    if (h.mask_bytes > 0)
      to.mask =
          arena_.masks(task.slot) + std::size_t(j) * h.mask_bytes * h.out_height * h.out_width;
    if (h.max_bytes > 0) {
      to.bytes = arena_.bytes(task.slot) + std::size_t(j) * h.max_bytes;
      to.byte_count = arena_.byte_counts(task.slot) + j;
    }
    if (h.decode != 0) {
      to.job = arena_.jpeg_jobs(task.slot) + j;
      to.compressed = arena_.compressed(task.slot) + std::size_t(j) * h.compressed_bytes;
      to.device = h.decode == static_cast<std::uint32_t>(Decode::kGpu) ||
                  SampleRng(h.seed, kDecodeStream, task.epoch, position).uniform() < h.gpu_share;
    }
    // Every attempt at this position draws the same numbers: output depends on the position only.
    const auto rng = [&] { return SampleRng(h.seed, kSampleStream, task.epoch, position); };
    std::int64_t sample = wanted;
    bad[j] = 0;
    const BadInput reason = produce(wanted, rng(), dst, to);
    if (reason != BadInput::kNone) {
      const auto fail = [&] {
        if (current_ != nullptr) current_->store(-1, std::memory_order_relaxed);
        done.status = Completion::kDataError;
        done.reason = static_cast<std::uint32_t>(reason);
        done.error_sample = wanted;
        return timed();
      };
      if (!h.on_error_skip) return fail();
      bad[j] = static_cast<std::uint8_t>(reason);
      bool replaced = false;
      const Dataset& own =
          datasets_[arena_.dataset_of(wanted)];  // a substitute is of the sample's own dataset
      const std::int64_t n = own.view.size();
      for (int k = 1; k <= kMaxSubstitutes && !replaced; ++k) {
        sample = own.first + (wanted - own.first + k) % n;
        replaced = produce(sample, rng(), dst, to) == BadInput::kNone;
      }
      if (!replaced) return fail();
    }
    labels[j] = dataset_->offset(view_->label(row_));
    ids[j] = sample;
    // Through the map `sample` got:
    write_geometry(task.slot, j);
    if (h.max_ops > 0) write_ops(task.slot, j);
    if (h.erase_boxes != 0) arena_.erase_boxes(task.slot)[j] = augmenter_.erase_box();
    if (h.max_boxes > 0) write_boxes(task.slot, j);
  }
  if (current_ != nullptr) current_->store(-1, std::memory_order_relaxed);
  return timed();
}

}  // namespace stoke::detail
