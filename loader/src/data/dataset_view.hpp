#pragma once
// The dataset index as it lies in the machine's index file (data/index_format.hpp writes it), and
// the read-only view every worker reads it through. The index's bytes do not say what kind they
// hold: the arena's header does (ipc/arena_layout.hpp; ArenaView::dataset() makes the view).
//
// Thread-safety: DatasetView is read-only and safe from any thread or process.
//
// Format (at header.index_offset in the index file, data/index_format.hpp):
//   kRaw:   nothing: the pixels, uint8 [N][H][W][C], then the labels, uint8 [N], are the IDX files
//           unpacked into a file of their own (data/index_format.hpp's pixels file)
//   kFiles: per-source records and narrow per-sample columns (data/index_columns.hpp)
//   kShards: (a dataset-level index's shards, data/shard_counts.hpp: each shard is indexed on
//           its own the first time one of its samples is read, data/shard_tables.hpp)
//           LazyShardOptions, then (64-byte aligned) ShardRecord shards[header.box_total], then
//           the path bytes the records point into

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "data/file_reader.hpp"
#include "data/index_columns.hpp"
#include "data/sample_box.hpp"

namespace stoke::detail {

enum class DatasetKind : std::uint32_t { kRaw = 1, kFiles = 2, kShards = 3 };

// The alignment of the sections after the first (kRaw's pixels, kShards' records and paths,
// kFiles' sections).
inline constexpr std::size_t kIndexAlign = 64;

// How a sample's mask is stored: none; a file of its own (a list file's third column); a member
// of the image's shard.
inline constexpr std::uint32_t kNoMask = 0, kMaskFile = 1, kMaskMember = 2;

// kShards: one shard of a dataset-level index, samples [start, start + samples) of the dataset.
struct ShardRecord {
  std::uint64_t start = 0;
  std::uint64_t samples = 0;
  std::uint64_t path_offset = 0;  // into the path bytes: its path or URL
  std::uint32_t path_length = 0;
  std::uint32_t reserved = 0;
};
static_assert(sizeof(ShardRecord) == 32);

// kShards: how a shard is indexed when it is first read (the IndexOptions the training process
// was given), so that a worker indexes it as the training process would. Strings are
// NUL-terminated.
struct LazyShardOptions {
  char label_field[256] = {};
  char mask_field[64] = {};
  char bytes_field[64] = {};
  char box_field[64] = {};
  char cache_root[4096] = {};  // "": no cache folder (each process indexes a shard privately)
  std::uint32_t on_error = 0;  // OnError
  std::int32_t max_classes = 0;
  std::uint32_t shard_copies = 0;  // remote shards' local copies are named (the shard cache)
  std::uint32_t reserved = 0;
};

// A written index and what its bytes do not say of themselves.
struct IndexRegion {
  DatasetKind kind = DatasetKind::kRaw;
  std::int64_t size = 0;                // samples
  const std::uint8_t* bytes = nullptr;  // the index's first byte
  std::size_t raw_bytes = 0;            // kRaw: H x W x C bytes per sample
  std::size_t box_total = 0;            // kShards: shards
  bool copies = true;                   // false: remote shards' local copies are not read
  // kRaw: the first sample's pixels, the labels after the last's (null: not mapped)
  const std::uint8_t* pixels = nullptr;
};

class DatasetView {
 public:
  explicit DatasetView(const IndexRegion& region);

  std::int64_t size() const { return size_; }
  bool raw() const { return kind_ == DatasetKind::kRaw; }
  // A dataset-level index's shards: every per-sample accessor below but size() needs the
  // sample's shard indexed (data/shard_tables.hpp) and its own view.
  bool lazy() const { return kind_ == DatasetKind::kShards; }
  // REQUIRES: !lazy(); raw(): the pixels mapped (IndexRegion::pixels).
  std::int32_t label(std::int64_t i) const {
    return raw() ? raw_labels_[i] : static_cast<std::int32_t>(files_.column(kLabelColumn)[i]);
  }
  // REQUIRES: raw(), and the pixels mapped (IndexRegion::pixels).
  const std::uint8_t* raw_pixels(std::int64_t i) const { return raw_pixels_ + i * raw_bytes_; }
  std::size_t raw_bytes() const { return raw_bytes_; }
  // REQUIRES: !raw() and !lazy() for the accessors below.
  // The file to read: the sample's own, or its shard's path or URL.
  std::string path(std::int64_t i) const {
    if (in_shards()) return std::string(files_.source_path(files_.source_of(i).first));
    return files_.path(i);
  }
  // The bytes of the file to read (all of it, for a plain file: size 0).
  ByteRange range(std::int64_t i) const {
    return {unsigned_at(kOffsetColumn, i), unsigned_at(kSizeColumn, i)};
  }
  // The path of the local copy of a remote shard's sample, or "" when it has none.
  std::string_view copy(std::int64_t i) const {
    if (!copies_ || !in_shards()) return {};
    return files_.source_copy(files_.source_of(i).first);
  }
  // The sample's annotated boxes (none for raw data and datasets without boxes).
  std::span<const SampleBox> boxes(std::int64_t i) const {
    if (raw()) return {};
    const IntColumn& first = files_.column(kBoxFirstColumn);
    const std::int64_t from = first[i];
    return {files_.boxes() + from, static_cast<std::size_t>(first[i + 1] - from)};
  }
  // How the sample's mask is stored (kNoMask, kMaskFile, kMaskMember).
  std::uint32_t mask_kind(std::int64_t) const { return files_.mask_kind(); }
  // REQUIRES: mask_kind(i) == kMaskFile. The mask file's path.
  std::string mask_path(std::int64_t i) const { return files_.mask_path(i); }
  // REQUIRES: mask_kind(i) != kNoMask. The mask's bytes in its file (all of it: size 0).
  ByteRange mask_range(std::int64_t i) const {
    return {unsigned_at(kMaskOffsetColumn, i), unsigned_at(kMaskSizeColumn, i)};
  }
  // The sample's pass-through bytes in its file (size 0: none to read).
  ByteRange bytes_range(std::int64_t i) const {
    return {unsigned_at(kBytesOffsetColumn, i), unsigned_at(kBytesSizeColumn, i)};
  }
  // The image's annotated width and height, or 0 x 0.
  int annotated_width(std::int64_t i) const {
    return static_cast<int>(files_.column(kAnnotatedWidthColumn)[i]);
  }
  int annotated_height(std::int64_t i) const {
    return static_cast<int>(files_.column(kAnnotatedHeightColumn)[i]);
  }
  // Whether the samples are members of tar shards (their names are in the shards' headers:
  // data/tar_index.hpp's member_name_before reads one) or rows of Parquet files (then
  // parquet() too, and each "shard" is a row group).
  bool in_shards() const { return kind_ == DatasetKind::kFiles && files_.source_total() > 0; }
  bool parquet() const { return kind_ == DatasetKind::kFiles && files_.parquet(); }

  // REQUIRES: parquet(). Where sample i is in a column read (kParquetImage, or kParquetBytes
  // when parquet_columns() is 2): its row group (a source), its data page (into the pages) and
  // its row there, and the page's rows.
  struct ParquetPlace {
    std::size_t source = 0;
    std::uint64_t page = 0;
    std::uint32_t row = 0;   // in the page
    std::uint32_t rows = 0;  // the page's
    std::int64_t group_row = 0;  // in the row group
  };
  ParquetPlace parquet_place(std::int64_t i, std::uint32_t column = kParquetImage) const;
  // Sample i's place in its file, for messages: "row group 3, row 17".
  std::string parquet_row_place(std::int64_t i) const;
  std::uint32_t parquet_columns() const { return files_.parquet_columns(); }
  const ParquetChunkRecord& parquet_chunk(std::size_t source,
                                          std::uint32_t column = kParquetImage) const {
    return files_.parquet_chunk(source, column);
  }
  const ParquetPageRecord& parquet_page(std::uint64_t page) const {
    return files_.parquet_pages()[page];
  }
  // The file holding the row's image when the row does not (a Hugging Face Image struct's path
  // where its bytes are null), or "".
  std::string parquet_image_file(std::int64_t i) const {
    return files_.has_paths() ? files_.path(i) : std::string();
  }
  // The end of a row group's data pages (the next one's first).
  std::uint64_t parquet_pages_end(std::size_t source, std::uint32_t column = kParquetImage) const {
    return files_.parquet_pages_end(source, column);
  }

  // REQUIRES: lazy() or in_shards(). The shards, each one's path, and a sample's shard and its
  // place there (REQUIRES: 0 <= i < size()).
  std::size_t shard_total() const { return lazy() ? shard_total_ : files_.source_total(); }
  std::string_view shard_path(std::size_t s) const {
    if (!lazy()) return files_.source_path(s);
    return {paths_ + shards_[s].path_offset, shards_[s].path_length};
  }
  std::pair<std::size_t, std::int64_t> shard_of(std::int64_t i) const;
  // REQUIRES: lazy(). A shard's samples.
  std::uint64_t shard_samples(std::size_t s) const { return shards_[s].samples; }
  const LazyShardOptions& lazy_options() const { return *lazy_options_; }

 private:
  DatasetKind kind_;
  std::int64_t size_;
  const std::uint8_t* raw_labels_ = nullptr;
  const std::uint8_t* raw_pixels_ = nullptr;
  std::size_t raw_bytes_ = 0;
  std::uint64_t unsigned_at(FilesSection c, std::int64_t i) const {
    return static_cast<std::uint64_t>(files_.column(c)[i]);
  }

  FilesRegion files_;
  const char* paths_ = nullptr;
  const ShardRecord* shards_ = nullptr;
  std::size_t shard_total_ = 0;
  const LazyShardOptions* lazy_options_ = nullptr;
  bool copies_ = true;
};

// REQUIRES: view.in_shards(). The name of sample i's image member (of a tar shard: a Parquet
// row has none, and gets ""), read back from its shard's
// header when the shard (or its local copy) is a regular file here: "" for a shard only on its
// server, or one whose header cannot be read. For messages made before the loader runs (the
// index does not keep names); it reads the file, so never under a lock others wait on.
std::string member_name(const DatasetView& view, std::int64_t i);

}  // namespace stoke::detail
