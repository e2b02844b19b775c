#pragma once
// The index of a dataset of files or shard members (DatasetKind::kFiles) as it lies in the
// machine's index file: per-source records and narrow per-sample columns, about 10 bytes a
// sample, where it was a 120-byte record and a path each.
//
//   FilesHeader                 where each section is, its width and the base its values add to
//   sections, 64-byte aligned:
//     sources   SourceRecord[]  a shard's path (and a remote shard's local copy), its first sample
//     text      bytes           the sources' paths and the folders' names
//     folders   FolderRecord[]  the folders the paths of plain files start with, each once
//     paths     u64 blocks[ceil(N / 16)], then bytes: plain files' paths, front- and back-coded
//               by 16s (Parquet: none, or each row's image file, empty where the row holds it)
//     mask paths                the same, for list files' mask files
//     Parquet chunks            ParquetChunkRecord[]: per source (a row group) and column read
//                               (the image's, then the bytes', if read), the column chunk's
//                               codec, levels, dictionary page and first data page
//     Parquet pages             ParquetPageRecord[]: the chunks' data pages, in order
//     boxes     SampleBox[]     in sample order; sample i's are [box_first[i], box_first[i + 1])
//     columns   label, offset, size, mask offset and size, bytes offset and size, box_first
//               (N + 1 values), annotated width and height: each value is the column's base plus
//               an unsigned integer of 0, 1, 2, 4 or 8 bytes (0: every value is the base)
//
// A shard's samples are the members of one source: their paths are the source's, and the offsets
// are within it (what is per shard is stored once). A member's name is not stored: it is read
// from the shard's tar header when a message needs it (data/tar_index.hpp). A plain file's path
// is its folder's (stored once) and its name, each block of 16 starting whole and the others
// storing only what differs from the path before, between what they keep of its start and of
// its end: "n01440764_10026.JPEG" after "n01440764_10025.JPEG" costs 4 bytes (14 kept of the
// start, 5 of the end, "6").
//
// Thread-safety: encode_files is reentrant; a FilesRegion is read-only, safe from any thread.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/sample_box.hpp"

namespace stoke::detail {

struct DatasetIndex;

// The paths of plain files are front-coded in blocks of this many.
inline constexpr std::uint32_t kPathBlock = 16;

enum FilesSection : std::uint32_t {
  kSources,
  kText,
  kFolders,
  kPathBlocks,
  kPathBytes,
  kMaskPathBlocks,
  kMaskPathBytes,
  kParquetChunks,
  kParquetPages,
  kBoxes,
  // The integer columns, from here on.
  kLabelColumn,
  kOffsetColumn,
  kSizeColumn,
  kMaskOffsetColumn,
  kMaskSizeColumn,
  kBytesOffsetColumn,
  kBytesSizeColumn,
  kBoxFirstColumn,
  kAnnotatedWidthColumn,
  kAnnotatedHeightColumn,
  kSectionCount
};
inline constexpr std::uint32_t kFirstColumn = kLabelColumn;

struct SectionInfo {
  std::uint64_t offset = 0;  // from the region's first byte
  std::uint64_t count = 0;   // records, bytes or values
  std::int64_t base = 0;     // columns: added to every stored value
  std::uint32_t width = 0;   // bytes of a record or stored value
  std::uint32_t reserved = 0;
};
static_assert(sizeof(SectionInfo) == 32);

struct FilesHeader {
  std::uint32_t mask_kind = 0;  // every sample's: kNoMask, kMaskFile or kMaskMember
  // Parquet: the columns read, each a chunk record a row group (1: the image's; 2: and the
  // pass-through bytes', bytes_field); 0 for other data.
  std::uint32_t parquet_columns = 0;
  std::uint64_t reserved2 = 0;
  SectionInfo sections[kSectionCount];
};

// One shard: samples [first, next source's first) are its members.
struct SourceRecord {
  std::uint64_t first = 0;
  std::uint64_t path_offset = 0;  // into the text: its path or URL, then its local copy's path
  std::uint32_t path_length = 0;
  std::uint32_t copy_length = 0;  // 0: a remote shard without a local copy, or a local shard
  std::uint64_t reserved = 0;
};
static_assert(sizeof(SourceRecord) == 32);

// Parquet: a source is a row group, and its records here (one a column read) say how its column
// chunks' pages are read (data/parquet_page.hpp).
// The columns a Parquet index reads, in the order of their records.
enum ParquetColumn : std::uint32_t { kParquetImage = 0, kParquetBytes = 1 };

struct ParquetChunkRecord {
  std::uint64_t dictionary_offset = 0;  // its dictionary page, header first (size 0: none)
  std::uint32_t dictionary_size = 0;
  std::uint8_t codec = 0;    // ParquetCodec
  std::uint8_t max_def = 0;  // the image leaf's maximum definition level
  std::uint16_t reserved = 0;
  std::uint64_t first_page = 0;  // its data pages: [first_page, the next chunk's first_page)
  std::uint32_t row_group = 0;   // its number in its file (for messages)
  std::uint32_t reserved2 = 0;
};
static_assert(sizeof(ParquetChunkRecord) == 32);

// A data page of a Parquet chunk: rows [first_row, the next page's first_row, or the row
// group's end) of its row group.
// The most rows a Parquet index may claim, 4.3 billion (a planted one claiming more would have
// start-up loops over its samples run for hours).
inline constexpr std::uint64_t kMaxParquetSamples = std::uint64_t{1} << 32;

struct ParquetPageRecord {
  std::uint64_t offset = 0;  // its header, in the file
  std::uint32_t size = 0;    // header and body
  std::uint32_t first_row = 0;
};
static_assert(sizeof(ParquetPageRecord) == 16);

struct FolderRecord {
  std::uint64_t offset = 0;  // into the text: the folder's path, with its last '/'
  std::uint64_t length = 0;
};
static_assert(sizeof(FolderRecord) == 16);

// Of `n` records in the order of the samples they start at (start(record); the first at 0),
// the last that starts at or before sample i, and i's place there: it holds i, since an empty
// one starts where the next one does. A source of shards by name, or a shard of a dataset-level
// index.
template <typename Record, typename Start>
std::pair<std::size_t, std::int64_t> record_holding(const Record* records, std::size_t n,
                                                    std::int64_t i, Start start) {
  const auto at = static_cast<std::uint64_t>(i);
  const Record* r = std::upper_bound(
      records, records + n, at, [&](std::uint64_t v, const Record& s) { return v < start(s); });
  --r;
  return {static_cast<std::size_t>(r - records), static_cast<std::int64_t>(at - start(*r))};
}

// A column's values: base plus 0, 1, 2, 4 or 8 stored bytes each.
class IntColumn {
 public:
  IntColumn() = default;
  IntColumn(const std::uint8_t* data, const SectionInfo& info)
      : data_(data), base_(info.base), width_(info.width) {}
  std::int64_t operator[](std::int64_t i) const;

 private:
  const std::uint8_t* data_ = nullptr;
  std::int64_t base_ = 0;
  std::uint32_t width_ = 0;
};

// A kFiles region, read: the sections as typed pointers.
class FilesRegion {
 public:
  FilesRegion() = default;
  // REQUIRES: `region` holds a region that files_region_holds() accepted (or encode_files wrote).
  explicit FilesRegion(const std::uint8_t* region);

  std::uint32_t mask_kind() const { return mask_kind_; }
  std::size_t source_total() const { return source_total_; }
  const SourceRecord& source(std::size_t s) const { return sources_[s]; }
  std::string_view source_path(std::size_t s) const {
    return {text_ + sources_[s].path_offset, sources_[s].path_length};
  }
  std::string_view source_copy(std::size_t s) const {
    return {text_ + sources_[s].path_offset + sources_[s].path_length, sources_[s].copy_length};
  }
  // The source holding sample i, and i's place there. REQUIRES: source_total() > 0.
  std::pair<std::size_t, std::int64_t> source_of(std::int64_t i) const;
  // A plain file's path (REQUIRES: source_total() == 0), or a Parquet row's image file ("" when
  // its image is in the row, or no row's is a file: has_paths()); and its mask file's path.
  bool has_paths() const { return paths_.block_total > 0; }
  std::string path(std::int64_t i) const { return decode(paths_, i); }
  std::string mask_path(std::int64_t i) const { return decode(mask_paths_, i); }
  const SampleBox* boxes() const { return boxes_; }
  const IntColumn& column(FilesSection c) const { return columns_[c - kFirstColumn]; }
  // Parquet (sources are row groups): whether it is, the columns read (kParquetImage, and
  // kParquetBytes when there are two), a source's chunk of a column and that chunk's data pages:
  // [its first_page, parquet_pages_end).
  bool parquet() const { return parquet_chunks_ != nullptr; }
  std::uint32_t parquet_columns() const { return parquet_columns_; }
  const ParquetChunkRecord& parquet_chunk(std::size_t s, std::uint32_t column = 0) const {
    return parquet_chunks_[s * parquet_columns_ + column];
  }
  const ParquetPageRecord* parquet_pages() const { return parquet_pages_; }
  std::uint64_t parquet_pages_end(std::size_t s, std::uint32_t column = 0) const {
    const std::size_t r = s * parquet_columns_ + column + 1;
    return r < source_total_ * parquet_columns_ ? parquet_chunks_[r].first_page
                                                : parquet_page_total_;
  }

 private:
  struct PathStream {
    const std::uint64_t* blocks = nullptr;
    std::uint64_t block_total = 0;
    const std::uint8_t* bytes = nullptr;
    std::uint64_t byte_total = 0;
  };
  std::string decode(const PathStream& stream, std::int64_t i) const;

  std::uint32_t mask_kind_ = 0;
  const SourceRecord* sources_ = nullptr;
  std::size_t source_total_ = 0;
  const char* text_ = nullptr;
  std::uint64_t text_size_ = 0;
  const FolderRecord* folders_ = nullptr;
  std::uint64_t folder_total_ = 0;
  PathStream paths_, mask_paths_;
  const SampleBox* boxes_ = nullptr;
  const ParquetChunkRecord* parquet_chunks_ = nullptr;  // null: not Parquet
  std::uint32_t parquet_columns_ = 0;
  const ParquetPageRecord* parquet_pages_ = nullptr;
  std::uint64_t parquet_page_total_ = 0;
  IntColumn columns_[kSectionCount - kFirstColumn];
};

// A kFiles region ready to be written: the columns and paths it encoded, and the index's own
// boxes where they are in sample order (so the index must outlive it).
class FilesImage {
 public:
  std::uint64_t size() const { return size_; }  // a multiple of 64
  // Writes the region to `fd` at its current position: false when it cannot (errno set).
  bool write(int fd) const;

 private:
  friend class Writer;
  struct Chunk {
    std::uint64_t offset;
    const std::uint8_t* data;
    std::size_t size;
  };
  FilesHeader header_;
  std::vector<Chunk> chunks_;  // in offset order
  std::vector<std::vector<std::uint8_t>> owned_;
  std::uint64_t size_ = 0;
};

// The region of `index` (REQUIRES: index.kind == kFiles).
FilesImage encode_files(const DatasetIndex& index);

// Whether `region` (of `size` bytes, 64-byte aligned) is a kFiles region of `samples` samples
// that can be read without reading outside it: every section within it, every source's path,
// every folder, every front-coded path decoded within its block, box ranges within the boxes,
// labels in -1..max_classes-1, Parquet chunks one per source with their pages in order, each
// holding at most kMaxPageRows rows. What a damaged or planted index file is checked by.
bool files_region_holds(const std::uint8_t* region, std::uint64_t size, std::uint64_t samples,
                        int max_classes);

}  // namespace stoke::detail
