#pragma once
// The dataset index: built once in the training process, copied into the arena, and read by
// every worker through DatasetView. Thread-safety: build_index is reentrant; a DatasetIndex is
// a value. DatasetView is read-only and safe from any thread or process.
//
// Arena format (at header.index_offset):
//   kRaw:   int32 labels[N], then (64-byte aligned) uint8 pixels[N][H][W][C]
//   kFiles: FileEntry entries[N], then (64-byte aligned) SampleBox boxes[header.box_total]
//           (each entry's are [box_first, box_first + box_count)), then the path bytes the
//           entries point into (absolute paths; the members of one shard share their shard's
//           path, and a remote shard's URL is followed by the path of its local copy)

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/file_reader.hpp"
#include "data/remote.hpp"
#include "data/sample_box.hpp"
#include "ipc/arena_layout.hpp"
#include "stoke/error.hpp"
#include "stoke/options.hpp"

namespace stoke::detail {

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

// A shard on HTTP or S3, as indexed: what the shard cache fetches.
struct RemoteShard {
  std::size_t shard = 0;  // its place in the shard list
  std::string url;
  std::uint64_t size = 0;
  std::string copy;  // its local copy's path (data/shard_cache.hpp); "" when it can have none
};

struct RejectedFile {
  std::string path;
  BadInput reason = BadInput::kNone;
};

struct DatasetIndex {
  DatasetKind kind = DatasetKind::kRaw;
  std::int64_t size = 0;
  std::vector<std::int32_t> labels;         // kRaw
  int height = 0, width = 0, channels = 0;  // kRaw
  std::vector<std::uint8_t> pixels;         // kRaw
  std::vector<FileEntry> entries;           // kFiles
  std::string paths;                        // kFiles
  std::vector<SampleBox> boxes;             // kFiles: every entry's boxes (detection data)
  bool has_boxes = false;                   // a detection dataset (even if no image has a box)
  bool has_masks = false;                   // every entry has a mask
  bool has_bytes = false;                   // every entry has pass-through bytes
  // The classes' names where the dataset names them (an image-folder tree's folders, a COCO
  // file's categories), label i's at i. Empty where labels are bare numbers (IDX, list files,
  // shards): nothing is kept per possible label, so one large label costs nothing here.
  std::vector<std::string> class_names;
  std::vector<RejectedFile> rejected;  // files left out while indexing (counted as skipped)
  // Tar shards: samples [shard_starts[i], shard_starts[i + 1]) come from shard i, in the order
  // of the shard list. Empty for other datasets.
  std::vector<std::int64_t> shard_starts;
  std::vector<std::string> shard_notes;  // damaged shards, stale sidecars: for the log
  // The shards on HTTP or S3, in shard order. Those with an ETag can have a local copy when
  // copies are asked for and a cache folder can be named.
  std::vector<RemoteShard> remote_shards;
  std::vector<std::string> box_notes;  // annotations left out (crowd, bad boxes): for the log

  // Forgets every remote shard's local copy (the shard cache is off): the workers read each
  // member from its server, whatever a copy's name holds on disk.
  void drop_shard_copies();

  std::size_t arena_bytes() const;
  // REQUIRES: dst has arena_bytes() bytes, 64-byte aligned.
  void write_to(std::uint8_t* dst) const;
};

// Where remote shards' indexes are cached, and whether their local copies are named (the shard
// cache, data/shard_cache.hpp): under `root`; nowhere when it is empty.
struct IndexCaches {
  std::string root;
  bool shard_copies = false;
};

struct IndexOptions {
  Split split = Split::kTrain;           // IDX data
  std::string label_field = "cls";       // shards: where a sample's label is
  std::string image_root;                // COCO: where file_names resolve ("": the JSON's folder)
  std::string mask_field;                // shards: the extension of a sample's mask member, or ""
  std::string bytes_field;               // shards: the extension of a sample's bytes member, or ""
  std::string box_field;                 // shards: the extension of a sample's boxes member, or ""
  OnError on_error = OnError::kSkip;     // COCO: what a bad box is (data/coco.hpp)
  int max_classes = kDefaultMaxClasses;  // labels read from the data are below it (Options')
  IndexCaches caches;
  RemotePolicy remote;  // shards on HTTP or S3: how they are asked for (the loader's RemoteConfig)
};

// Indexes an IDX folder, an image-folder tree, a list file, WebDataset tar shards (see
// data/shard_list.hpp for the forms) or a COCO annotation file (a path ending in .json; its
// samples have label -1 and their boxes). Throws ConfigError when the path is missing, cannot be
// walked, holds no samples, or a list line is malformed (naming the file and line); DataError
// when a label the data states (a shard member, a box class, a list line, an IDX label) is not
// below options.max_classes (naming where it is and the value).
DatasetIndex build_index(const std::string& path, const IndexOptions& options = {});

// The DataError for a number the data gives as a label that is not below max_classes: `where`
// names the shard member or list line, `what` the number's role ("label", "classes[3]").
DataError label_over_bound(const std::string& where, const std::string& what, std::uint64_t value,
                           int max_classes);

// The most pass-through bytes one sample may carry (its member is left out as too_large).
inline constexpr std::uint64_t kMaxSampleBytes = std::uint64_t{16} << 20;

// The members, besides the image, that a shard sample's fields come from: where its label is
// ("cls", "json:KEY", "none"), and the extensions of its mask ("seg.png"), its pass-through
// bytes ("txt") and its boxes, "" for none.
struct ShardFields {
  std::string label = "cls";
  std::string mask;
  std::string bytes;
  std::string boxes;  // the extension of a JSON member {"boxes": [[x1, y1, x2, y2], ...],
                      // "classes": [c, ...]} (optionally "width", "height"), or ""
};

// The samples of WebDataset tar shards, local or remote (data/shard_dataset.cpp). Throws
// DataError for a label or box class not below max_classes.
DatasetIndex index_shards(const std::vector<std::string>& shards, const ShardFields& fields,
                          const IndexCaches& caches, const RemotePolicy& remote, int max_classes);

class DatasetView {
 public:
  explicit DatasetView(const ArenaView& arena);

  std::int64_t size() const { return size_; }
  bool raw() const { return kind_ == DatasetKind::kRaw; }
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

 private:
  DatasetKind kind_;
  std::int64_t size_;
  const std::int32_t* raw_labels_ = nullptr;
  const std::uint8_t* raw_pixels_ = nullptr;
  std::size_t raw_bytes_ = 0;
  const FileEntry* entries_ = nullptr;
  const SampleBox* boxes_ = nullptr;
  const char* paths_ = nullptr;
};

}  // namespace stoke::detail
