#pragma once
// The dataset index: built once per machine (data/index_file.hpp writes it to a file that the
// training processes and every worker map), and read through DatasetView
// (data/dataset_view.hpp, which also gives its format there).
// Thread-safety: build_index is reentrant; a DatasetIndex is a value.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data/bad_input.hpp"
#include "data/dataset_view.hpp"
#include "data/file_reader.hpp"
#include "data/sample_box.hpp"
#include "remote/remote.hpp"
#include "stoke/error.hpp"
#include "stoke/options.hpp"

namespace stoke::detail {

// A sample of a dataset of files or shard members as indexing builds it; the index file keeps
// it in narrow columns (data/index_columns.hpp).
struct FileEntry {
  std::uint64_t path_offset = 0;  // into `paths`
  std::uint32_t path_length = 0;
  std::int32_t label = 0;
  // A member of a tar shard: bytes [offset, offset + size) of the file at the path (its name is
  // the shard's header's, not kept). size 0: the whole file.
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
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
};

// A shard on HTTP or S3, as indexed: what the shard cache fetches.
struct RemoteShard {
  std::size_t shard = 0;  // its place in the shard list (a Parquet file: its first row group's)
  std::string url;
  std::uint64_t size = 0;
  std::string copy;  // its local copy's path (data/shard_cache.hpp); "" when it can have none
  // A shard of a dataset-level index (DatasetKind::kShards): not looked at when the loader
  // starts, so its size and copy are unknown (0 and ""); the shard prefetcher looks it up (a
  // HEAD) as the plan nears it.
  bool unresolved = false;
  // The plan's shards it holds, from `shard` on: 1 for a tar shard, a Parquet file's row groups.
  std::size_t shards = 1;
};

struct RejectedFile {
  std::string path;
  BadInput reason = BadInput::kNone;
};

struct DatasetIndex {
  DatasetKind kind = DatasetKind::kRaw;
  std::int64_t size = 0;
  std::vector<std::int32_t> labels;         // kRaw; and Parquet's, a row each
  int height = 0, width = 0, channels = 0;  // kRaw
  std::vector<std::uint8_t> pixels;         // kRaw
  // kFiles: a sample each; Parquet: a row group each (its file's path and copy: a row needs no
  // more than its label, in `labels`)
  std::vector<FileEntry> entries;
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
  // kShards (a dataset-level index): its shards (their paths in `paths`) and how each is indexed
  // when first read.
  std::vector<ShardRecord> shard_records;
  LazyShardOptions lazy_options;
  // Parquet files (data/parquet_dataset.hpp): the sources (shard_starts) are their row groups,
  // each with its image column chunk's record, and the chunks' data pages.
  bool parquet = false;
  // A record per row group and column read (ParquetColumn: the image's, then the bytes' when
  // bytes_field names a column), in that order.
  std::uint32_t parquet_columns = 1;
  std::vector<ParquetChunkRecord> parquet_chunks;
  // With bytes_field: each row's value's size in bytes (a null's: 0).
  std::vector<std::uint32_t> parquet_bytes_sizes;
  std::vector<ParquetPageRecord> parquet_pages;
  // The rows whose image is a file of its own (an Image struct's path where its bytes are null):
  // the sample and the file's path or URL, in sample order.
  std::vector<std::pair<std::uint64_t, std::string>> parquet_image_files;

  // Appends the entry of a whole file at `path` (its bytes to `paths`) and returns it.
  FileEntry& add_file(const std::string& path, std::int32_t label);
  // Gives `e` the mask file at `path` (its bytes to `paths`).
  void set_mask_file(FileEntry& e, const std::string& path);

  // Forgets every remote shard's local copy (the shard cache is off): the workers read each
  // member from its server, whatever a copy's name holds on disk.
  void drop_shard_copies();
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
  std::string bytes_field;               // a shard member's extension, a Parquet column, or ""
  std::string box_field;                 // shards: the extension of a sample's boxes member, or ""
  std::string image_column;              // Parquet: the column images are read from ("": found)
  std::string label_column;              // Parquet: the column labels are read from ("": found)
  OnError on_error = OnError::kSkip;     // COCO: what a bad box is (data/coco.hpp)
  int max_classes = kDefaultMaxClasses;  // labels read from the data are below it (Options')
  // A dataset-level index's shards: their labels are below this too when it is not 0 (Options'
  // num_classes: soft labels have no room for others), checked as each shard is indexed.
  int num_classes = 0;
  IndexCaches caches;
  RemotePolicy remote;  // shards on HTTP or S3: how they are asked for (the loader's RemoteConfig)
  // Remote shards' HEAD answers already had, by URL (dataset_identity asks them first), so that
  // indexing asks no server twice; null: none. Not owned; outlives build_index.
  const std::map<std::string, RemoteObject>* remote_seen = nullptr;
  // The Parquet files dataset_identity found the data to name, so that a folder is listed and
  // the Hub asked once; null: found again. Not owned; outlives build_index.
  const std::vector<std::string>* parquet_found = nullptr;
  // Where index_dataset (data/index_file.hpp) says, every progress_every_s, that it is still
  // indexing or still waiting for another loader's index (called from a thread of its own); null:
  // nowhere.
  std::function<void(const std::string&)> progress;
  double progress_every_s = 10;
};

// What a dataset-level index's file carries of `options`: how a worker indexes each shard.
// Throws ConfigError for a field too long for it, or holding a NUL.
LazyShardOptions lazy_shard_options(const IndexOptions& options);

// Indexes an IDX folder, an image-folder tree, a list file, WebDataset tar shards (see
// data/shard_list.hpp for the forms), a dataset-level index of shards (a .json file in a form of
// data/shard_counts.hpp: kShards, its shards indexed when first read) or a COCO annotation file
// (another .json file; its samples have label -1 and their boxes). Throws ConfigError when the path
// is missing, cannot be walked, holds no samples, or a list line is malformed (naming the file and
// line); DataError when a label the data states (a shard member, a box class, a list line, an IDX
// label) is not below options.max_classes (naming where it is and the value).
DatasetIndex build_index(const std::string& path, const IndexOptions& options = {});

// An image-folder tree's class folders: the folders (links to folders too) directly in `root`,
// sorted. Throws ConfigError for an entry that cannot be stat'ed (a link loop), and
// std::filesystem::filesystem_error when `root` cannot be listed.
std::vector<std::filesystem::path> class_folders(const std::filesystem::path& root);

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
// `seen`: HEAD answers already had, by URL (null: none).
DatasetIndex index_shards(const std::vector<std::string>& shards, const ShardFields& fields,
                          const IndexCaches& caches, const RemotePolicy& remote, int max_classes,
                          const std::map<std::string, RemoteObject>* seen = nullptr);

}  // namespace stoke::detail
