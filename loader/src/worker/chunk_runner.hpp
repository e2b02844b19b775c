#pragma once
// Produces the samples one Task names, straight into the task's slot. The same code runs in
// stoke-worker processes and in-process (workers = 0), which is why their bytes are identical.
// Thread-safety: one ChunkRunner per thread; it owns decode and resize buffers.

#include <atomic>
#include <deque>
#include <memory>
#include <opencv2/core/mat.hpp>
#include <optional>
#include <string>
#include <vector>

#include "augment/augment.hpp"
#include "augment/boxes.hpp"
#include "augment/masks.hpp"
#include "data/dataset_view.hpp"
#include "data/file_reader.hpp"
#include "data/parquet_reader.hpp"
#include "data/shard_tables.hpp"
#include "decode/decode.hpp"
#include "decode/jpeg_region.hpp"
#include "decode/png_label_map.hpp"
#include "decode/relayout_cache.hpp"
#include "ipc/arena_layout.hpp"

namespace stoke::detail {

class ChunkRunner {
 public:
  // Sample files are read through `files` when given (a test's, or another source of bytes; it
  // must outlive the runner), else through a SampleFiles of the runner's own, under the remote
  // deadline the arena carries (ArenaHeader::remote_deadline_s).
  explicit ChunkRunner(const ArenaView& arena, FileReader* files = nullptr);
  ChunkRunner(const ChunkRunner&) = delete;  // (view_ may point at dataset_)
  ChunkRunner& operator=(const ChunkRunner&) = delete;

  // Writes pixels, labels, boxes and actual sample ids of samples [task.begin, task.begin +
  // task.count) of task.slot. Never throws for bad input; reports it in the Completion. `current`,
  // when given, is kept set to the dataset index being produced.
  Completion run(const Task& task, std::atomic<std::int64_t>* current = nullptr) noexcept;

 private:
  // Where a sample's fields besides pixels go in the slot (null: the data has none).
  struct FieldSlots {
    std::uint8_t* mask = nullptr;
    std::uint8_t* bytes = nullptr;
    std::int32_t* byte_count = nullptr;
    // decode=gpu/hybrid: the sample's job and compressed bytes, and whether its position goes to
    // the devices (a JPEG they take then gets only its geometry drawn here).
    JpegJob* job = nullptr;
    std::uint8_t* compressed = nullptr;
    bool device = false;
  };
  // Produces one sample into `dst`, with its mask and bytes; returns why it could not.
  BadInput produce(std::int64_t sample, SampleRng rng, std::uint8_t* dst, const FieldSlots& to);
  // produce()'s pixels: read, decode and augment into `dst` (or, for the devices, the JPEG's
  // bytes and geometry into to.job and to.compressed); throws for what it cannot.
  BadInput produce_or_throw(SampleRng& rng, std::uint8_t* dst, const FieldSlots& to);
  // A JPEG jpeg_ has opened, for the devices when they take it: its geometry drawn, its bytes
  // and job written; false (to.job says why) when the worker is to decode it.
  bool hand_to_devices(std::span<const std::uint8_t> bytes, SampleRng& rng, const FieldSlots& to);
  // The current sample's pass-through bytes (cut to max_bytes), and their length.
  BadInput produce_bytes(std::uint8_t* dst, std::int32_t* count);
  // The current sample's mask, through the maps and warps its pixels just got.
  BadInput produce_mask(std::uint8_t* dst);
  // The mask file in file_ as labels, of the map's source size: a PNG through libpng (only the
  // rows the crop reads, unless the whole file is checked), else OpenCV.
  BadInput decode_mask(const OutputMap& map, LabelMap& out);
  // Reads bytes `range` of the current sample's shard (its local copy first) or file, or of its
  // mask file, into file_.
  BadInput read_sample_file(bool mask_file, ByteRange range);
  BadInput read_sample_bytes(bool mask_file, ByteRange range);  // (read_sample_file, untimed)
  // The current sample's image file into file_, through the relayout cache when there is one: its
  // copy when the cache holds one, else the file (re-laid out and kept when the cache copies it).
  BadInput read_image_file();
  // How parquet_ reads a page of the current sample's file: as any sample's bytes are read
  // (read_sample_bytes, untimed: its local copy first).
  ParquetRows::ReadRange page_reader();
  // Whether a decoded width x height is the current sample's annotated size (or it has none).
  bool annotated_size(int width, int height) const;
  // Sample j's geometry in `slot`: the output map its pixels just got, and its source's size.
  void write_geometry(std::uint32_t slot, std::uint32_t j);
  void write_ops(std::uint32_t slot, std::uint32_t j);
  // Sample j's boxes (the current sample's) in `slot`, through the output map its pixels just got.
  void write_boxes(std::uint32_t slot, std::uint32_t j);
  void prefetch_raw(std::int64_t sample) const;
  bool poisoned(std::int64_t sample) const;

  // One of the arena's datasets (a mixture's source): its samples are the loader's ids [first,
  // first + view.size()).
  struct Dataset {
    Dataset(const ArenaView& arena, std::size_t d);
    const ArenaDataset& record;
    std::int64_t first = 0;
    DatasetView view;
    // A dataset-level index's shards, indexed as their samples are first read (kShards only).
    std::optional<ShardTables> tables;
    ParquetRows parquet;  // a Parquet dataset's decoded pages, within its record's budget
    // A label (or box class) the dataset gives, in the loader's range: moved by its record's
    // offset; -1 (none) stays.
    std::int32_t offset(std::int32_t label) const {
      return label < 0 ? label : label + record.label_offset;
    }
  };

  ArenaView arena_;
  std::unique_ptr<FileReader> own_files_;  // when the constructor was given none
  FileReader& files_;
  std::deque<Dataset> datasets_;  // (a deque: a ShardTables keeps its view's address)
  // The current sample (the one produce() was last given): its dataset, its index's view and
  // its place there (the dataset's view and the sample's number in it, but for kShards).
  Dataset* dataset_ = nullptr;
  const DatasetView* view_ = nullptr;
  std::int64_t row_ = 0;
  Augmenter augmenter_;
  ImageDecoder decoder_;
  DecodedImage decoded_;
  DecodedImage mask_;
  PngLabelMapReader png_mask_;
  JpegRegionSource jpeg_;
  // A local image folder's relayout cache, when the arena turns it on (else empty).
  std::optional<RelayoutCache> relayout_;
  std::string path_;
  std::vector<std::uint8_t> file_;  // the current sample's bytes
  std::vector<Box> mapped_;         // write_boxes' scratch
  std::vector<std::uint32_t> kept_;
  std::atomic<std::int64_t>* current_ = nullptr;
  std::int64_t read_ns_ = 0;    // this chunk's, so far
  std::int64_t decode_ns_ = 0;  // this chunk's, so far (JPEG: counted by jpeg_)
};

// Substitutes tried, in order, for a bad sample under OnError::kSkip: sample + 1, + 2, ... of its
// own dataset (wrapping to its first).
inline constexpr int kMaxSubstitutes = 16;

}  // namespace stoke::detail
