#pragma once
// The dataset index file's format: what write_index_file writes and map_index_file maps, checking
// every field before trusting it. Native byte order:
//   0                       IndexFileHeader
//   header.region_offset    the index region (data/dataset_view.hpp's format), 4096-aligned
//   header.meta_offset      what is not per sample: flags, class names, left-out files, shard
//                           starts, notes, remote shards (length-prefixed records)
//   header.identity_offset  the identity text the key hashes (data/index_identity.hpp), compared
//                           whole on open
//
// Thread-safety: functions are reentrant; a MappedIndex is immutable after construction and
// safe to read from any thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "data/dataset_index.hpp"
#include "data/dataset_view.hpp"

namespace stoke::detail {

// The format's version, which the identity names too: a file of another version is never read.
// 1: the region is dataset_view.hpp's format with its 120-byte FileEntry; 2: kShards; 3: kFiles
// in narrow columns (data/index_columns.hpp); 4: Parquet's chunks and pages among them; 5: and
// Parquet rows' image files (an Image struct's path) in the path stream.
inline constexpr std::uint32_t kIndexFileFormat = 5;

// IDX data as the reader takes it (data/mnist.cpp), and as an index file may claim it.
inline constexpr std::int64_t kMaxIdxSide = 4096;
inline constexpr std::uint64_t kMaxIdxImages = std::uint64_t{1} << 28;

class MappedIndex;
std::unique_ptr<MappedIndex> map_index_file(int fd, const std::string& identity, int max_classes,
                                            int origin, std::string file);
bool attach_pixels(MappedIndex& index, int fd, const std::string& identity, int max_classes);
std::shared_ptr<const MappedIndex> index_dataset(const std::string& data,
                                                 const struct IndexOptions& options);

// A dataset index, mapped read-only.
class MappedIndex {
 public:
  // Where the index came from.
  enum class Origin {
    kBuilt,    // indexed by this process and written to the machine's shared file
    kFound,    // the machine's shared file, written earlier (by another rank, or a past run)
    kPrivate,  // indexed by this process into a file of its own (no shared file could be used)
  };

  MappedIndex(const MappedIndex&) = delete;
  MappedIndex& operator=(const MappedIndex&) = delete;
  ~MappedIndex();

  // Everything of the index but its per-sample arrays (entries, labels, pixels, boxes and paths
  // are empty: they are in the mapping).
  const DatasetIndex& info() const { return info_; }
  // The mapped index. `copies` false: every remote shard's local copy is forgotten (the shard
  // cache is off; the workers read the servers).
  DatasetView view(bool copies = true) const;
  // kRaw (IDX): the pixels, then the labels, in a file of their own (attach_pixels), the first
  // sample's first byte at pixels_offset() of it; null and -1 until attached.
  const std::uint8_t* pixels() const;
  int pixels_fd() const { return pixels_fd_; }
  static constexpr std::uint64_t pixels_offset() { return 4096; }
  // The mapping's first byte (the region is at region_offset()).
  const std::uint8_t* bytes() const { return map_; }
  // The descriptor of the index file (a worker maps it), and where the region lies in it.
  int fd() const { return fd_; }
  std::uint64_t region_offset() const { return region_offset_; }
  std::uint64_t region_size() const { return region_size_; }
  std::size_t box_total() const { return box_total_; }
  std::size_t raw_bytes() const;  // kRaw: bytes per sample
  Origin origin() const { return origin_; }
  // The shared file's path ("" for a private one) and the time spent waiting for another process
  // that was writing it.
  const std::string& file() const { return file_; }
  double waited_s() const { return waited_s_; }
  // The time this process spent indexing (0 when it found the file).
  double built_s() const { return built_s_; }
  // Drops the pages this process touched (checking, resolving the options) from its resident
  // set: the page cache keeps them for every process that reads them later.
  void release_pages() const;

 private:
  friend std::unique_ptr<MappedIndex> map_index_file(int, const std::string&, int, int,
                                                     std::string);
  friend std::shared_ptr<const MappedIndex> index_dataset(const std::string&, const IndexOptions&);
  friend bool attach_pixels(MappedIndex&, int, const std::string&, int);
  MappedIndex() = default;

  DatasetIndex info_;
  int fd_ = -1;
  const std::uint8_t* map_ = nullptr;
  std::size_t map_size_ = 0;
  std::uint64_t region_offset_ = 0;
  std::uint64_t region_size_ = 0;
  std::size_t box_total_ = 0;
  Origin origin_ = Origin::kPrivate;
  std::string file_;
  double waited_s_ = 0;
  double built_s_ = 0;
  int pixels_fd_ = -1;
  const std::uint8_t* pixels_map_ = nullptr;
  std::size_t pixels_map_size_ = 0;
};

// An index file of `index` written to `fd` (from its current position, which must be 0), with
// `identity`. False when it cannot be written (errno set). A kRaw index's pixels are not in it:
// write_pixels_file writes them to a file of their own.
bool write_index_file(int fd, const DatasetIndex& index, const std::string& identity);

// The pixels file of a kRaw index (the IDX files, unpacked: the data, not an index of it): a
// 4 KiB header, the pixels (uint8 [N][H][W][C]) at MappedIndex::pixels_offset(), one label byte
// a sample (IDX labels are bytes), then `identity`. False when it cannot be written (errno set).
// The index file itself then holds no per-sample entry at all.
bool write_pixels_file(int fd, const DatasetIndex& index, const std::string& identity);

// Maps the pixels file open at `fd` (which it takes, and closes unless it succeeds) into the
// kRaw `index`: false when it is not a pixels file of `identity` with the index's samples' bytes,
// or a label in it is not below max_classes (a stale, damaged or planted one is rebuilt, never
// read).
bool attach_pixels(MappedIndex& index, int fd, const std::string& identity, int max_classes);

// The index in the file open at `fd` (which it takes), mapped and checked: nullptr when it is
// not an index file of this format, was written for another identity, or any offset, length,
// label or count in it points outside what it holds (a damaged or planted file is rebuilt,
// never read).
// `origin` is a MappedIndex::Origin.
std::unique_ptr<MappedIndex> map_index_file(int fd, const std::string& identity, int max_classes,
                                            int origin, std::string file);

}  // namespace stoke::detail
