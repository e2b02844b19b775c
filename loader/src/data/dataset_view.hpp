#pragma once
// The dataset index as it lies in memory once written (DatasetIndex::write_to), and the
// read-only view every worker reads it through. The index's bytes do not say what they hold:
// the arena's header does (ipc/arena_layout.hpp; ArenaView::dataset() makes the view).
//
// Thread-safety: DatasetView is read-only and safe from any thread or process.
//
// Format (at header.index_offset in the index file, data/index_format.hpp):
//   kRaw:   int32 labels[N], then (64-byte aligned) uint8 pixels[N][H][W][C]
//   kFiles: FileEntry entries[N], then (64-byte aligned) SampleBox boxes[header.box_total]
//           (each entry's are [box_first, box_first + box_count)), then the path bytes the
//           entries point into (absolute paths; the members of one shard share their shard's
//           path, and a remote shard's URL is followed by the path of its local copy)
//   kShards: (a dataset-level index's shards, data/shard_counts.hpp: each shard is indexed on
//           its own the first time one of its samples is read, data/shard_tables.hpp)
//           LazyShardOptions, then (64-byte aligned) ShardRecord shards[header.box_total], then
//           the path bytes the records point into

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "data/file_reader.hpp"
#include "data/sample_box.hpp"

namespace stoke::detail {

enum class DatasetKind : std::uint32_t { kRaw = 1, kFiles = 2, kShards = 3 };

// The alignment of the sections after the first (pixels; boxes and path bytes).
inline constexpr std::size_t kIndexAlign = 64;

struct FileEntry {
  std::uint64_t path_offset = 0;  // into the path bytes
  std::uint32_t path_length = 0;
  std::int32_t label = 0;
  // A member of a tar shard: bytes [offset, offset + size) of the file at the path, its member
  // name at name_offset in the path bytes. size 0: the whole file.
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t name_offset = 0;
  std::uint32_t name_length = 0;
  // A member of a remote shard: the length of the path of the shard's local copy (in the shard
  // cache), which follows the URL in the path bytes. 0: no copy can exist.
  std::uint32_t copy_length = 0;
  // Its annotated boxes (detection data): boxes [box_first, box_first + box_count) of the index.
  // The image's size as annotated (0: not annotated); decoded at another size, it is bad input.
  std::uint64_t box_first = 0;
  std::uint32_t box_count = 0;
  std::int32_t annotated_width = 0;
  std::int32_t annotated_height = 0;
  // Its mask (a label map aligned with the image): kNoMask; kMaskFile, the whole file at
  // mask_path_offset (mask_path_length bytes) in the path bytes; kMaskMember, bytes
  // [mask_offset, mask_offset + mask_size) of the image's own file (a shard member).
  std::uint32_t mask_kind = 0;
  std::uint32_t mask_path_length = 0;
  std::uint64_t mask_path_offset = 0;
  std::uint64_t mask_offset = 0;
  std::uint64_t mask_size = 0;
  // Its pass-through bytes (a caption, a JSON record), when the dataset has them: bytes
  // [bytes_offset, bytes_offset + bytes_size) of the image's own file (a shard member).
  std::uint64_t bytes_offset = 0;
  std::uint32_t bytes_size = 0;
  std::uint32_t reserved = 0;
};
inline constexpr std::uint32_t kNoMask = 0, kMaskFile = 1, kMaskMember = 2;
static_assert(sizeof(FileEntry) == 120);

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
  std::size_t box_total = 0;            // kFiles: SampleBoxes after the entries; kShards: shards
  bool copies = true;                   // false: remote shards' local copies are not read
};

class DatasetView {
 public:
  explicit DatasetView(const IndexRegion& region);

  std::int64_t size() const { return size_; }
  bool raw() const { return kind_ == DatasetKind::kRaw; }
  // A dataset-level index's shards: every per-sample accessor below but size() needs the
  // sample's shard indexed (data/shard_tables.hpp) and its own view.
  bool lazy() const { return kind_ == DatasetKind::kShards; }
  // REQUIRES: !lazy()
  std::int32_t label(std::int64_t i) const { return raw() ? raw_labels_[i] : entries_[i].label; }
  // REQUIRES: raw()
  const std::uint8_t* raw_pixels(std::int64_t i) const { return raw_pixels_ + i * raw_bytes_; }
  std::size_t raw_bytes() const { return raw_bytes_; }
  // REQUIRES: !raw()
  std::string_view path(std::int64_t i) const {
    return {paths_ + entries_[i].path_offset, entries_[i].path_length};
  }
  // REQUIRES: !raw(). The bytes of the file to read (all of it, for a plain file).
  ByteRange range(std::int64_t i) const { return {entries_[i].offset, entries_[i].size}; }
  // REQUIRES: !raw(). The path of the local copy of a remote shard's sample, or "" when it has
  // none.
  std::string_view copy(std::int64_t i) const {
    const FileEntry& e = entries_[i];
    if (!copies_) return {};
    return {paths_ + e.path_offset + e.path_length, e.copy_length};
  }
  // The sample's annotated boxes (none for raw data and datasets without boxes).
  std::span<const SampleBox> boxes(std::int64_t i) const {
    if (raw()) return {};
    return {boxes_ + entries_[i].box_first, entries_[i].box_count};
  }
  // REQUIRES: !raw(). How the sample's mask is stored (kNoMask, kMaskFile, kMaskMember).
  std::uint32_t mask_kind(std::int64_t i) const { return entries_[i].mask_kind; }
  // REQUIRES: mask_kind(i) == kMaskFile. The mask file's path.
  std::string_view mask_path(std::int64_t i) const {
    return {paths_ + entries_[i].mask_path_offset, entries_[i].mask_path_length};
  }
  // REQUIRES: mask_kind(i) != kNoMask. The mask's bytes in its file (all of it: size 0).
  ByteRange mask_range(std::int64_t i) const {
    return {entries_[i].mask_offset, entries_[i].mask_size};
  }
  // REQUIRES: !raw(). The sample's pass-through bytes in its file (size 0: none to read).
  ByteRange bytes_range(std::int64_t i) const {
    return {entries_[i].bytes_offset, entries_[i].bytes_size};
  }
  // REQUIRES: !raw(). The image's annotated width and height, or 0 x 0.
  int annotated_width(std::int64_t i) const { return entries_[i].annotated_width; }
  int annotated_height(std::int64_t i) const { return entries_[i].annotated_height; }
  // REQUIRES: !raw(). The member name within the shard, or "" for a plain file.
  std::string_view member(std::int64_t i) const {
    return {paths_ + entries_[i].name_offset, entries_[i].name_length};
  }

  // REQUIRES: lazy(). The shards, each one's path and samples, and a sample's shard and its
  // place there (REQUIRES: 0 <= i < size()).
  std::size_t shard_total() const { return shard_total_; }
  std::string_view shard_path(std::size_t s) const {
    return {paths_ + shards_[s].path_offset, shards_[s].path_length};
  }
  std::uint64_t shard_samples(std::size_t s) const { return shards_[s].samples; }
  std::pair<std::size_t, std::int64_t> shard_of(std::int64_t i) const;
  const LazyShardOptions& lazy_options() const { return *lazy_options_; }

 private:
  DatasetKind kind_;
  std::int64_t size_;
  const std::int32_t* raw_labels_ = nullptr;
  const std::uint8_t* raw_pixels_ = nullptr;
  std::size_t raw_bytes_ = 0;
  const FileEntry* entries_ = nullptr;
  const SampleBox* boxes_ = nullptr;
  const char* paths_ = nullptr;
  const ShardRecord* shards_ = nullptr;
  std::size_t shard_total_ = 0;
  const LazyShardOptions* lazy_options_ = nullptr;
  bool copies_ = true;
};

}  // namespace stoke::detail
