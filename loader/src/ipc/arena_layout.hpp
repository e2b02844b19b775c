#pragma once
// The shared arena's fixed, versioned layout: ArenaHeader at offset 0 holds every section's
// offset, and every section and slot starts on a 4096-byte boundary (docs/ARCHITECTURE.md, "The
// arena's layout", maps it). The training process writes everything before any worker starts;
// afterwards workers only read the header and pipeline (and the index file), write the slot
// ranges their tasks name, and use their own WorkerRecord's rings.
//
// Thread-safety: see each field. Nothing in the arena is a lock: every cross-process word is a
// lock-free atomic or a process-shared POSIX semaphore (whose post/wait cannot be left "held"
// by a process that dies), so a worker that dies anywhere cannot block the others.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "common/align.hpp"
#include "data/bad_input.hpp"
#include "data/dataset_view.hpp"
#include "ipc/shared_semaphore.hpp"
#include "ipc/spsc_ring.hpp"
#include "stoke/kernels/erase.hpp"
#include "stoke/kernels/mix.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {

inline constexpr std::uint64_t kArenaMagic = 0x414e4552414b5453ull;  // "STKARENA"
// 2: SharedSemaphore (sem_t) in WorkerRecord; 3: ArenaHeader::verify_region; 4: FileEntry member
// ranges; 5: FileEntry::copy_length (a remote shard's local copy after its URL); 6: boxes (in the
// index and the slots), geometry; 7: ArenaHeader::remote_deadline_s; 8: Step of 128
// bytes (photometric steps), the slots' applied ops; 9: Step of 224 bytes (random
// erasing, timm's policies), the slots' erase boxes; 10: Step of 288 bytes
// (random_affine's ranges, AugMix's settings); 11: the slots' mix samples and soft labels; 12:
// the index file; 13: the public stoke::Step itself as the step record (no mirror of it); 14:
// the index file's narrow columns (format 3), IDX pixels in a file of their own (fd 6); 15: the
// index file's Parquet sections (format 4), ArenaHeader::page_cache_mib; 16: the relayout cache
// (ArenaHeader::relayout*, Completion::relayout_*), the slots' per-sample source index; 17: the
// datasets' records (ArenaDataset: a mixture's sources); 18: decode=gpu/hybrid
// (ArenaHeader::decode, the slots' JpegJobs and compressed bytes)
inline constexpr std::uint32_t kLayoutVersion = 18;
inline constexpr std::size_t kPage = 4096;
inline constexpr std::size_t kVersionChars = 32;
// The most datasets a loader reads (a mixture's sources): each is a record in the header and two
// descriptors of each worker (its index and pixels, fds 5 + 2s and 6 + 2s).
inline constexpr std::size_t kMaxDatasets = 16;

// A unit of work: samples [begin, begin + count) of a slot.
struct Task {
  enum Kind : std::uint32_t { kRun = 0, kStop = 1 };
  std::uint64_t seq = 0;  // unique per loader; completions echo it
  std::uint32_t kind = kRun;
  std::uint32_t slot = 0;
  std::int64_t epoch = 0;
  std::int64_t global_begin = 0;  // global epoch position of sample `begin`
  std::uint32_t begin = 0;
  std::uint32_t count = 0;
};

// Samples that were replaced are reported through the slot's `bad` bytes, not here, so no
// number of bad files in one chunk can overflow a fixed-size report.
struct Completion {
  enum Status : std::int32_t { kOk = 0, kDataError = 1 };
  std::uint64_t seq = 0;
  std::int32_t status = kOk;
  std::uint32_t reason = 0;        // BadInput, when status == kDataError
  std::int64_t error_sample = -1;  // dataset index, when status == kDataError
  // Where the chunk's time went, in nanoseconds of the producing thread: reading files,
  // decoding them, and everything else (augmenting, writing the slot).
  std::int64_t read_ns = 0;
  std::int64_t decode_ns = 0;
  std::int64_t augment_ns = 0;
  // The relayout cache (decode/relayout_cache.hpp): the chunk's samples read from copies, and
  // copies made.
  std::int32_t relayout_hits = 0;
  std::int32_t relayout_stored = 0;
};

// The pair of rings between the training process and one worker, and its handshake.
struct WorkerRecord {
  static constexpr std::uint32_t kRingSize = 64;
  enum State : std::uint32_t { kEmpty = 0, kReady = 1, kVersionMismatch = 2, kBadArena = 3 };

  // Written by the worker once at start-up, read by the training process after a wakeup.
  std::atomic<std::uint32_t> state{kEmpty};
  std::int32_t pid = 0;
  char version[kVersionChars] = {};
  // The dataset index the worker is producing right now (-1 between samples). Written by the
  // worker, read by the training process after the worker died or timed out, to name the sample.
  std::atomic<std::int64_t> current_sample{-1};
  // Posted once per task pushed; the worker waits on it when its ring is empty.
  SharedSemaphore tasks_posted;
  SpscRing<Task, kRingSize> tasks;       // training process -> worker
  SpscRing<Completion, kRingSize> done;  // worker -> training process
};

// A dataset's record in the header: what a worker needs to map its index and read its samples.
struct ArenaDataset {
  DatasetKind kind = DatasetKind::kRaw;
  std::uint32_t shard_copies = 1;  // 0: remote shards' local copies are not read (no shard cache)
  std::int64_t first_id = 0;       // its samples' ids in the loader: [first_id, + sample_count)
  std::int64_t sample_count = 0;
  std::uint64_t index_offset = 0;  // in its index file
  std::uint64_t index_size = 0;
  std::int64_t box_total = 0;   // kShards: the shards (kFiles' sections say their own sizes)
  std::int32_t raw_height = 0;  // kRaw only: every sample is raw_height x raw_width x raw_channels
  std::int32_t raw_width = 0;
  std::int32_t raw_channels = 0;
  // Parquet: the decoded pages a worker keeps, in MiB (data/parquet_reader.hpp).
  std::uint32_t page_cache_mib = 0;
  std::int32_t label_offset = 0;  // added to each label the dataset gives (-1 stays -1)
  std::uint32_t relayout = 0;     // 1: the relayout cache copies its files
};

// decode=gpu/hybrid: how sample j of a slot reaches its pixels. Written by the worker that
// produces the sample, read by the training process's stager once the slot is ready.
struct JpegJob {
  // Who decodes it: the worker (the slot's pixels hold the sample, as under decode=cpu) or the
  // devices (the sample's place in the compressed bytes holds `size` bytes of a JPEG).
  enum By : std::uint32_t { kWorker = 0, kDevice = 1 };
  // Why a worker decoded it (kDevice: kNone).
  enum Why : std::uint32_t {
    kNone = 0,
    kHybrid = 1,       // decode=hybrid chose the worker for its position
    kNotJpeg = 2,      // another format (PNG, ...) or raw pixels
    kUnsupported = 3,  // a JPEG the devices do not take: CMYK/YCCK, 12-bit, arithmetic, lossless
    kTooLarge = 4,     // more bytes than max_compressed_bytes
  };
  // (Where its output comes from is the sample's geometry record, as for every sample.)
  std::uint32_t by = kWorker;
  std::uint32_t why = kNone;
  std::uint32_t size = 0;
  std::uint32_t progressive = 0;  // kDevice: a progressive JPEG (nvJPEG's hardware backend: no)
};
static_assert(std::is_trivially_copyable_v<JpegJob> && sizeof(JpegJob) == 16);

struct ArenaHeader {
  std::uint64_t magic = kArenaMagic;
  std::uint32_t layout_version = kLayoutVersion;
  std::uint32_t header_size = sizeof(ArenaHeader);
  char version[kVersionChars] = {};  // library version that built the arena
  std::uint64_t total_size = 0;

  // The datasets: one, or a mixture's sources (ids [first_id, first_id + sample_count) each).
  std::uint32_t dataset_count = 1;
  std::uint32_t on_error_skip = 1;
  ArenaDataset datasets[kMaxDatasets] = {};
  std::int64_t max_pixels = 0;  // decoded images larger than this are bad input (kTooLarge)
  std::int64_t sample_count = 0;   // the datasets' in all
  std::int32_t verify_region = 0;  // Verify::kRegion: JPEG scans are decoded through the crop only
  std::uint32_t pad4 = 0;
  // Remote shards: the deadline of a worker's ranged read (RemotePolicy::deadline_s; 0: the
  // default), the training process's, so that no worker reads the environment for it.
  double remote_deadline_s = 0;
  // The relayout cache (decode/relayout_cache.hpp): which local JPEGs it copies (a Relayout;
  // kOff: none), its limit, and its folder (NUL-terminated), for the datasets whose record says
  // so. The loader sets `relayout` only with a folder it made and a limit above 0, and a
  // dataset's only for a kFiles dataset that is not Parquet
  // (Loader::Impl::set_up_relayout_cache).
  std::uint32_t relayout = 0;
  std::uint32_t pad0 = 0;
  std::uint64_t relayout_limit = 0;
  char relayout_folder[1024] = {};

  // Pipeline.
  std::uint64_t seed = 0;
  std::uint64_t steps_offset = 0;
  std::uint32_t step_count = 0;
  std::int32_t out_height = 0;
  std::int32_t out_width = 0;
  std::int32_t out_channels = 0;

  // Workers.
  std::uint64_t workers_offset = 0;
  std::uint32_t worker_capacity = 0;
  std::uint32_t pad1 = 0;
  std::uint64_t worker_stride = 0;

  // Batch slots.
  std::uint32_t batch = 0;
  std::uint32_t slot_capacity = 0;
  std::uint64_t slots_offset = 0;
  // Samples that killed workers repeatedly; under OnError::kSkip workers treat them as bad input.
  // Appended by the training process only: entries [0, poisoned_count) are final.
  std::uint64_t poison_offset = 0;
  std::uint32_t poison_capacity = 0;
  std::uint32_t pad2 = 0;
  std::uint64_t slot_stride = 0;
  std::uint64_t sample_bytes = 0;
  std::uint64_t labels_offset = 0;  // within a slot
  std::uint64_t ids_offset = 0;
  std::uint64_t planned_offset = 0;
  std::uint64_t valid_offset = 0;
  std::uint64_t sources_offset = 0;  // int32 per sample: its source in a mixture (0 otherwise)
  std::uint64_t bad_offset = 0;

  // Boxes: each sample keeps at most max_boxes (0: the slots hold none), mapped through its
  // geometric steps and kept by these rules (augment/boxes.hpp, BoxRules).
  std::uint32_t max_boxes = 0;
  float box_min_size = 1;
  float box_min_area = 0;
  float box_min_visible = 0;
  std::uint64_t boxes_offset = 0;  // within a slot
  std::uint64_t box_classes_offset = 0;
  std::uint64_t box_counts_offset = 0;
  std::uint64_t geometry_offset = 0;
  // Masks: mask_bytes per label (0: the slots hold none); padding gets mask_ignore.
  std::uint32_t mask_bytes = 0;
  std::uint32_t mask_ignore = 255;
  std::uint64_t masks_offset = 0;
  // Pass-through bytes: at most max_bytes per sample (0: the slots hold none).
  std::uint32_t max_bytes = 0;
  std::uint32_t pad3 = 0;
  std::uint64_t bytes_offset = 0;
  std::uint64_t byte_counts_offset = 0;
  // Photometric ops: at most max_ops recorded per sample (0: the slots hold none).
  std::uint32_t max_ops = 0;
  // random_erasing's rectangles: 1 when the slots hold one EraseBox per sample (the erasing of
  // a float output, done by the batch's normalize), 0 when none.
  std::uint32_t erase_boxes = 0;
  std::uint64_t ops_offset = 0;
  std::uint64_t erase_offset = 0;
  // MixUp/CutMix: 1 when the slots hold one kernels::MixSample per sample (the mixing of a float
  // output, done after its normalize), 0 when none. Soft labels: soft_classes float32 per sample
  // (0: none). Both written by the training process's stager, never by workers.
  std::uint32_t mixing = 0;
  std::uint32_t soft_classes = 0;
  std::uint64_t mix_offset = 0;
  std::uint64_t soft_labels_offset = 0;
  // Decoding (Options::decode): 0 cpu, 1 gpu, 2 hybrid (a Decode); hybrid's share of samples
  // for the devices; and, unless cpu, a JpegJob and compressed_bytes bytes per sample.
  std::uint32_t decode = 0;
  float gpu_share = 0;
  std::uint64_t compressed_bytes = 0;
  std::uint64_t jpeg_jobs_offset = 0;  // within a slot
  std::uint64_t compressed_offset = 0;
};

static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(sizeof(ArenaHeader) <= kPage);  // the steps start on the next page
static_assert(sizeof(AppliedOp) == 32 && std::is_trivially_copyable_v<AppliedOp>);
// The pipeline's steps are copied into the arena as the public records they are: a worker of the
// same layout version (and build: the version handshake) reads exactly what the loader wrote.
static_assert(std::is_trivially_copyable_v<Step> && std::is_standard_layout_v<Step>);

// Typed access to an arena mapped at `base`. Thread-safety: as the fields it points to.
class ArenaView {
 public:
  // The datasets' mappings, one per record: `index`, its index file's (the dataset() views read
  // them; empty where none is needed); `pixels`, IDX data's first sample's pixels
  // (MappedIndex::pixels()), null for other data.
  struct Mapping {
    const std::uint8_t* index = nullptr;
    const std::uint8_t* pixels = nullptr;
  };
  explicit ArenaView(std::uint8_t* base, std::span<const Mapping> datasets = {}) : base_(base) {
    std::copy_n(datasets.begin(), std::min(datasets.size(), kMaxDatasets), datasets_.begin());
  }

  std::uint8_t* base() const { return base_; }
  ArenaHeader& header() const { return *reinterpret_cast<ArenaHeader*>(base_); }
  // Dataset d's index at its record's index_offset of its mapping, read as the record describes
  // it. REQUIRES: d < header().dataset_count, the view was made with d's mapping.
  DatasetView dataset(std::size_t d = 0) const {
    const ArenaDataset& r = header().datasets[d];
    return DatasetView(IndexRegion{
        r.kind, r.sample_count, datasets_[d].index + r.index_offset,
        static_cast<std::size_t>(r.raw_height) * r.raw_width * r.raw_channels,
        static_cast<std::size_t>(r.box_total), r.shard_copies != 0, datasets_[d].pixels});
  }
  // The dataset whose ids hold the loader's sample `sample` (a handful of records: a walk).
  std::size_t dataset_of(std::int64_t sample) const {
    const ArenaHeader& h = header();
    std::size_t d = 0;
    while (d + 1 < h.dataset_count && sample >= h.datasets[d + 1].first_id) ++d;
    return d;
  }
  const Step* steps() const { return reinterpret_cast<const Step*>(base_ + header().steps_offset); }
  WorkerRecord& worker(std::uint32_t i) const {
    return *reinterpret_cast<WorkerRecord*>(base_ + header().workers_offset +
                                            i * header().worker_stride);
  }
  std::uint8_t* slot(std::uint32_t s) const {
    return base_ + header().slots_offset + s * header().slot_stride;
  }
  std::uint8_t* pixels(std::uint32_t s) const { return slot(s); }
  std::int32_t* labels(std::uint32_t s) const {
    return reinterpret_cast<std::int32_t*>(slot(s) + header().labels_offset);
  }
  float* boxes(std::uint32_t s) const {
    return reinterpret_cast<float*>(slot(s) + header().boxes_offset);
  }
  std::int32_t* box_classes(std::uint32_t s) const {
    return reinterpret_cast<std::int32_t*>(slot(s) + header().box_classes_offset);
  }
  std::int32_t* box_counts(std::uint32_t s) const {
    return reinterpret_cast<std::int32_t*>(slot(s) + header().box_counts_offset);
  }
  std::uint8_t* masks(std::uint32_t s) const { return slot(s) + header().masks_offset; }
  std::uint8_t* bytes(std::uint32_t s) const { return slot(s) + header().bytes_offset; }
  std::int32_t* byte_counts(std::uint32_t s) const {
    return reinterpret_cast<std::int32_t*>(slot(s) + header().byte_counts_offset);
  }
  std::int64_t* ids(std::uint32_t s) const {
    return reinterpret_cast<std::int64_t*>(slot(s) + header().ids_offset);
  }
  std::int64_t* planned_ids(std::uint32_t s) const {
    return reinterpret_cast<std::int64_t*>(slot(s) + header().planned_offset);
  }
  std::int64_t* poisoned() const {
    return reinterpret_cast<std::int64_t*>(base_ + header().poison_offset);
  }
  std::atomic<std::uint32_t>& poisoned_count() const {
    return *reinterpret_cast<std::atomic<std::uint32_t>*>(base_ + header().poison_offset -
                                                          sizeof(std::uint64_t));
  }
  std::uint8_t* bad(std::uint32_t s) const { return slot(s) + header().bad_offset; }
  float* geometry(std::uint32_t s) const {
    return reinterpret_cast<float*>(slot(s) + header().geometry_offset);
  }
  std::uint8_t* valid(std::uint32_t s) const { return slot(s) + header().valid_offset; }
  std::int32_t* sources(std::uint32_t s) const {
    return reinterpret_cast<std::int32_t*>(slot(s) + header().sources_offset);
  }
  AppliedOp* applied_ops(std::uint32_t s) const {
    return reinterpret_cast<AppliedOp*>(slot(s) + header().ops_offset);
  }
  kernels::EraseBox* erase_boxes(std::uint32_t s) const {
    return reinterpret_cast<kernels::EraseBox*>(slot(s) + header().erase_offset);
  }
  kernels::MixSample* mix_samples(std::uint32_t s) const {
    return reinterpret_cast<kernels::MixSample*>(slot(s) + header().mix_offset);
  }
  float* soft_labels(std::uint32_t s) const {
    return reinterpret_cast<float*>(slot(s) + header().soft_labels_offset);
  }
  JpegJob* jpeg_jobs(std::uint32_t s) const {
    return reinterpret_cast<JpegJob*>(slot(s) + header().jpeg_jobs_offset);
  }
  // Sample j's compressed bytes: compressed(s) + j * header().compressed_bytes.
  std::uint8_t* compressed(std::uint32_t s) const { return slot(s) + header().compressed_offset; }

 private:
  std::uint8_t* base_;
  std::array<Mapping, kMaxDatasets> datasets_{};
};

}  // namespace stoke::detail
