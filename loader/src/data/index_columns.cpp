#include "data/index_columns.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "common/align.hpp"
#include "data/dataset_index.hpp"
#include "data/file_reader.hpp"
#include "data/parquet_page.hpp"

namespace stoke::detail {
namespace {

constexpr std::int64_t kMaxUnsigned = std::int64_t{1} << 62;  // offsets, sizes: far beyond any

std::uint32_t record_width(std::uint32_t section) {
  switch (section) {
    case kSources:
      return sizeof(SourceRecord);
    case kFolders:
      return sizeof(FolderRecord);
    case kPathBlocks:
    case kMaskPathBlocks:
      return sizeof(std::uint64_t);
    case kBoxes:
      return sizeof(SampleBox);
    case kParquetChunks:
      return sizeof(ParquetChunkRecord);
    case kParquetPages:
      return sizeof(ParquetPageRecord);
    default:
      return 1;  // text and path bytes
  }
}

// LEB128: 7 bits a byte, the high bit set on all but the last.
void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}

// Reads a varint below 2^32 from [*p, end): false when it runs past end or is larger.
bool get_varint(const std::uint8_t*& p, const std::uint8_t* end, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (p == end) return false;
    const std::uint8_t b = *p++;
    v |= std::uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return v <= std::numeric_limits<std::uint32_t>::max();
  }
  return false;
}

// Walks block b of a front-coded path stream, calling entry(k, head, suffix, tail, tail_length)
// for its first `entries` entries: the first's head is its folder's number (suffix 0), the
// others' the bytes they keep of the start of the path before, and suffix the bytes they keep of
// its end; entry returns the path's length, or -1 when it cannot be read. False when anything
// lies outside the block's bytes, the folders or the path before.
template <typename Entry>
bool walk_block(const std::uint64_t* blocks, std::uint64_t block_total, const std::uint8_t* bytes,
                std::uint64_t byte_total, std::uint64_t folder_total, std::uint64_t b,
                std::uint64_t entries, Entry&& entry) {
  const std::uint64_t begin = blocks[b];
  const std::uint64_t end = b + 1 < block_total ? blocks[b + 1] : byte_total;
  if (begin > end || end > byte_total) return false;
  const std::uint8_t* p = bytes + begin;
  const std::uint8_t* stop = bytes + end;
  std::uint64_t length = 0;  // of the path before
  for (std::uint64_t k = 0; k < entries; ++k) {
    std::uint64_t head = 0, suffix = 0, tail = 0;
    if (!get_varint(p, stop, head) || (k > 0 && !get_varint(p, stop, suffix)) ||
        !get_varint(p, stop, tail))
      return false;
    if (k == 0 ? head >= folder_total : head > length || suffix > length - head) return false;
    if (tail > static_cast<std::uint64_t>(stop - p)) return false;
    const std::int64_t now = entry(k, head, suffix, reinterpret_cast<const char*>(p), tail);
    if (now < 0) return false;
    p += tail;
    length = static_cast<std::uint64_t>(now);
  }
  return true;
}

}  // namespace

// Lays out a region's sections one after another, each 64-byte aligned: the columns it encodes
// are its own, the other sections point at what they were given (nothing large is copied).
class Writer {
 public:
  FilesImage image;

  void section(std::uint32_t s, const void* data, std::uint64_t count, std::uint32_t width) {
    SectionInfo& info = place(s, count, width);
    if (count > 0)
      image.chunks_.push_back({info.offset, static_cast<const std::uint8_t*>(data), count * width});
  }
  // A section of bytes the image keeps.
  template <typename T>
  void owned(std::uint32_t s, std::vector<T> records, std::uint32_t width) {
    const std::uint64_t count = records.size();
    if constexpr (std::is_same_v<T, std::uint8_t>) {
      keep(place(s, count, width), std::move(records));  // (bytes already: kept as they are)
    } else {
      std::vector<std::uint8_t> bytes(count * width);
      if (count > 0) std::memcpy(bytes.data(), records.data(), bytes.size());
      keep(place(s, count, width), std::move(bytes));
    }
  }

  // A column of `count` values value(i), stored as base plus the narrowest width that holds
  // every value.
  template <typename Value>
  void column(std::uint32_t s, std::uint64_t count, Value&& value) {
    std::int64_t lo = 0, hi = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::int64_t v = value(i);
      lo = i == 0 ? v : std::min(lo, v);
      hi = i == 0 ? v : std::max(hi, v);
    }
    const auto span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    const std::uint32_t width = span == 0             ? 0
                                : span <= 0xff        ? 1
                                : span <= 0xffff      ? 2
                                : span <= 0xffffffffu ? 4
                                                      : 8;
    SectionInfo& info = place(s, count, width);
    info.base = lo;
    if (width == 0) return;
    std::vector<std::uint8_t> bytes(count * width);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t v = static_cast<std::uint64_t>(value(i)) - static_cast<std::uint64_t>(lo);
      std::memcpy(bytes.data() + i * width, &v, width);  // (little-endian: the low bytes)
    }
    keep(info, std::move(bytes));
  }

  FilesImage finish(std::uint32_t mask_kind, std::uint32_t parquet_columns) && {
    image.header_.mask_kind = mask_kind;
    image.header_.parquet_columns = parquet_columns;
    image.size_ = align_up(end_, kIndexAlign);
    return std::move(image);
  }

 private:
  SectionInfo& place(std::uint32_t s, std::uint64_t count, std::uint32_t width) {
    SectionInfo& info = image.header_.sections[s];
    info.offset = align_up(end_, kIndexAlign);
    info.count = count;
    info.width = width;
    end_ = info.offset + count * width;
    return info;
  }
  void keep(const SectionInfo& info, std::vector<std::uint8_t> bytes) {
    image.owned_.push_back(std::move(bytes));
    const std::vector<std::uint8_t>& kept = image.owned_.back();
    image.chunks_.push_back({info.offset, kept.data(), kept.size()});
  }

  std::uint64_t end_ = sizeof(FilesHeader);
};

namespace {

// Front-codes the paths path(i) in blocks of kPathBlock: each block's first as its folder's
// number and its name, the others as the bytes they keep of the start and of the end of the path
// before and what lies between ("n01440764_10026.JPEG" after "n01440764_10025.JPEG": 14 bytes of
// the start, 5 of the end, and "6").
template <typename Path>
void front_code(std::size_t n, Path&& path, std::unordered_map<std::string, std::uint32_t>& ids,
                std::vector<std::string>& folders, std::vector<std::uint64_t>& blocks,
                std::vector<std::uint8_t>& out) {
  std::string_view before;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view p = path(i);
    if (i % kPathBlock == 0) {
      blocks.push_back(out.size());
      const std::size_t slash = p.rfind('/');
      const std::size_t cut = slash == std::string_view::npos ? 0 : slash + 1;
      const auto [it, added] = ids.try_emplace(std::string(p.substr(0, cut)),
                                               static_cast<std::uint32_t>(folders.size()));
      if (added) folders.push_back(it->first);
      put_varint(out, it->second);
      put_varint(out, p.size() - cut);
      out.insert(out.end(), p.begin() + static_cast<std::ptrdiff_t>(cut), p.end());
    } else {
      const std::size_t limit = std::min(before.size(), p.size());
      std::size_t head = 0;
      while (head < limit && before[head] == p[head]) ++head;
      std::size_t suffix = 0;
      while (suffix < limit - head &&
             before[before.size() - 1 - suffix] == p[p.size() - 1 - suffix])
        ++suffix;
      put_varint(out, head);
      put_varint(out, suffix);
      put_varint(out, p.size() - head - suffix);
      out.insert(out.end(), p.begin() + static_cast<std::ptrdiff_t>(head),
                 p.end() - static_cast<std::ptrdiff_t>(suffix));
    }
    before = p;
  }
}

}  // namespace

std::int64_t IntColumn::operator[](std::int64_t i) const {
  const auto at = static_cast<std::size_t>(i);
  switch (width_) {
    case 1:
      return base_ + data_[at];
    case 2: {
      std::uint16_t v;
      std::memcpy(&v, data_ + at * 2, 2);
      return base_ + v;
    }
    case 4: {
      std::uint32_t v;
      std::memcpy(&v, data_ + at * 4, 4);
      return base_ + v;
    }
    case 8: {
      std::uint64_t v;
      std::memcpy(&v, data_ + at * 8, 8);
      return static_cast<std::int64_t>(static_cast<std::uint64_t>(base_) + v);
    }
    default:
      return base_;
  }
}

FilesRegion::FilesRegion(const std::uint8_t* region) {
  FilesHeader h;
  std::memcpy(&h, region, sizeof h);
  const auto at = [&](std::uint32_t s) { return region + h.sections[s].offset; };
  mask_kind_ = h.mask_kind;
  sources_ = reinterpret_cast<const SourceRecord*>(at(kSources));
  source_total_ = h.sections[kSources].count;
  text_ = reinterpret_cast<const char*>(at(kText));
  text_size_ = h.sections[kText].count;
  folders_ = reinterpret_cast<const FolderRecord*>(at(kFolders));
  folder_total_ = h.sections[kFolders].count;
  paths_ = {reinterpret_cast<const std::uint64_t*>(at(kPathBlocks)), h.sections[kPathBlocks].count,
            at(kPathBytes), h.sections[kPathBytes].count};
  mask_paths_ = {reinterpret_cast<const std::uint64_t*>(at(kMaskPathBlocks)),
                 h.sections[kMaskPathBlocks].count, at(kMaskPathBytes),
                 h.sections[kMaskPathBytes].count};
  boxes_ = reinterpret_cast<const SampleBox*>(at(kBoxes));
  if (h.sections[kParquetChunks].count > 0) {
    parquet_chunks_ = reinterpret_cast<const ParquetChunkRecord*>(at(kParquetChunks));
    parquet_columns_ = h.parquet_columns;
    parquet_pages_ = reinterpret_cast<const ParquetPageRecord*>(at(kParquetPages));
    parquet_page_total_ = h.sections[kParquetPages].count;
  }
  for (std::uint32_t c = kFirstColumn; c < kSectionCount; ++c)
    columns_[c - kFirstColumn] = IntColumn(at(c), h.sections[c]);
}

std::pair<std::size_t, std::int64_t> FilesRegion::source_of(std::int64_t i) const {
  return record_holding(sources_, source_total_, i, [](const SourceRecord& s) { return s.first; });
}

std::string FilesRegion::decode(const PathStream& stream, std::int64_t i) const {
  const auto n = static_cast<std::uint64_t>(i);
  const std::uint64_t b = n / kPathBlock;
  std::string path;
  if (b >= stream.block_total) return path;
  std::string end;  // the bytes an entry keeps of the end of the path before
  const bool ok = walk_block(stream.blocks, stream.block_total, stream.bytes, stream.byte_total,
                             folder_total_, b, n % kPathBlock + 1,
                             [&](std::uint64_t k, std::uint64_t head, std::uint64_t suffix,
                                 const char* tail, std::uint64_t tail_length) {
                               if (k == 0) {
                                 const FolderRecord& f = folders_[head];
                                 if (f.offset > text_size_ || f.length > text_size_ - f.offset)
                                   return std::int64_t{-1};
                                 path.assign(text_ + f.offset, f.length);
                               } else {
                                 end.assign(path, path.size() - suffix, suffix);
                                 path.resize(head);
                               }
                               path.append(tail, tail_length);
                               path += end;
                               end.clear();
                               return static_cast<std::int64_t>(path.size());
                             });
  if (!ok) path.clear();  // (not after a region files_region_holds accepted)
  return path;
}

FilesImage encode_files(const DatasetIndex& index) {
  // (Parquet: an entry per row group, and a label per row.)
  const std::vector<FileEntry>& e = index.entries;
  const std::size_t n = index.parquet ? index.labels.size() : e.size();
  Writer w;
  std::string text;
  std::vector<SourceRecord> sources;
  // Shards: one source each, its samples' path (and copy) stored once.
  for (std::size_t s = 0; s + 1 < index.shard_starts.size(); ++s) {
    SourceRecord& r = sources.emplace_back();
    r.first = static_cast<std::uint64_t>(index.shard_starts[s]);
    r.path_offset = text.size();
    if (index.shard_starts[s] < index.shard_starts[s + 1]) {
      const FileEntry& first = e[index.parquet ? s : r.first];
      r.path_length = first.path_length;
      r.copy_length = first.copy_length;
      const std::string_view path = std::string_view(index.paths).substr(
          first.path_offset, std::size_t{first.path_length} + first.copy_length);
      // A Parquet file's row groups are sources of one path: it is stored once.
      const SourceRecord* before = sources.size() > 1 ? &sources[sources.size() - 2] : nullptr;
      if (before != nullptr && before->path_length == r.path_length &&
          before->copy_length == r.copy_length &&
          std::string_view(text).substr(before->path_offset, path.size()) == path)
        r.path_offset = before->path_offset;
      else
        text += path;
    }
  }
  // Plain files: every path front-coded, the folders once.
  std::unordered_map<std::string, std::uint32_t> ids;
  std::vector<std::string> folders;
  std::vector<std::uint64_t> blocks, mask_blocks;
  std::vector<std::uint8_t> path_bytes, mask_bytes;
  const auto in_paths = [&](std::uint64_t offset, std::uint32_t length) {
    return std::string_view(index.paths).substr(offset, length);
  };
  if (sources.empty()) {
    front_code(
        n, [&](std::size_t i) { return in_paths(e[i].path_offset, e[i].path_length); }, ids,
        folders, blocks, path_bytes);
  } else if (!index.parquet_image_files.empty()) {
    // Parquet rows whose image is a file of its own: its path; every other row's is empty.
    std::size_t next = 0;  // (front_code asks for each row once, in order)
    const auto& files = index.parquet_image_files;
    front_code(
        n,
        [&](std::size_t i) {
          if (next < files.size() && files[next].first == i)
            return std::string_view(files[next++].second);
          return std::string_view();
        },
        ids, folders, blocks, path_bytes);
  }
  const std::uint32_t mask_kind = n > 0 && !index.parquet ? e[0].mask_kind : kNoMask;
  if (mask_kind == kMaskFile)
    front_code(
        n, [&](std::size_t i) { return in_paths(e[i].mask_path_offset, e[i].mask_path_length); },
        ids, folders, mask_blocks, mask_bytes);
  std::vector<FolderRecord> folder_records;
  for (const std::string& f : folders) {
    folder_records.push_back({text.size(), f.size()});
    text += f;
  }
  // Boxes in sample order, so that sample i's are [box_first[i], box_first[i + 1]): the index's
  // own when they are (COCO's, shards'), else a copy in that order.
  std::vector<std::uint64_t> box_first{0};
  bool in_order = true;
  for (const FileEntry& f : index.parquet ? std::span<const FileEntry>() : std::span(e)) {
    in_order = in_order && f.box_first == box_first.back();
    box_first.push_back(box_first.back() + f.box_count);
  }
  std::vector<SampleBox> reordered;
  if (!in_order)
    for (const FileEntry& f : e)
      reordered.insert(
          reordered.end(), index.boxes.begin() + static_cast<std::ptrdiff_t>(f.box_first),
          index.boxes.begin() + static_cast<std::ptrdiff_t>(f.box_first + f.box_count));
  w.owned(kSources, std::move(sources), sizeof(SourceRecord));
  w.owned(kText, std::vector<char>(text.begin(), text.end()), 1);
  w.owned(kFolders, std::move(folder_records), sizeof(FolderRecord));
  w.owned(kPathBlocks, std::move(blocks), sizeof(std::uint64_t));
  w.owned(kPathBytes, std::move(path_bytes), 1);
  w.owned(kMaskPathBlocks, std::move(mask_blocks), sizeof(std::uint64_t));
  w.owned(kMaskPathBytes, std::move(mask_bytes), 1);
  w.section(kParquetChunks, index.parquet_chunks.data(), index.parquet_chunks.size(),
            sizeof(ParquetChunkRecord));
  w.section(kParquetPages, index.parquet_pages.data(), index.parquet_pages.size(),
            sizeof(ParquetPageRecord));
  if (in_order)
    w.section(kBoxes, index.boxes.data(), box_first.back(), sizeof(SampleBox));
  else
    w.owned(kBoxes, std::move(reordered), sizeof(SampleBox));
  const auto col = [&](std::uint32_t s, auto field) {
    w.column(s, n, [&](std::uint64_t i) {
      return index.parquet ? 0 : static_cast<std::int64_t>(field(e[i]));
    });
  };
  if (index.parquet)
    w.column(kLabelColumn, n, [&](std::uint64_t i) { return std::int64_t{index.labels[i]}; });
  else
    col(kLabelColumn, [](const FileEntry& f) { return f.label; });
  col(kOffsetColumn, [](const FileEntry& f) { return f.offset; });
  col(kSizeColumn, [](const FileEntry& f) { return f.size; });
  col(kMaskOffsetColumn, [](const FileEntry& f) { return f.mask_offset; });
  col(kMaskSizeColumn, [](const FileEntry& f) { return f.mask_size; });
  col(kBytesOffsetColumn, [](const FileEntry& f) { return f.bytes_offset; });
  if (index.parquet && !index.parquet_bytes_sizes.empty())
    w.column(kBytesSizeColumn, n,
             [&](std::uint64_t i) { return std::int64_t{index.parquet_bytes_sizes[i]}; });
  else
    col(kBytesSizeColumn, [](const FileEntry& f) { return f.bytes_size; });
  w.column(kBoxFirstColumn, n + 1, [&](std::uint64_t i) {
    return index.parquet ? 0 : static_cast<std::int64_t>(box_first[i]);
  });
  col(kAnnotatedWidthColumn, [](const FileEntry& f) { return f.annotated_width; });
  col(kAnnotatedHeightColumn, [](const FileEntry& f) { return f.annotated_height; });
  return std::move(w).finish(mask_kind, index.parquet ? index.parquet_columns : 0);
}

bool FilesImage::write(int fd) const {
  static const std::uint8_t kZeros[kIndexAlign] = {};
  if (!write_fully(fd, &header_, sizeof header_)) return false;
  std::uint64_t at = sizeof header_;
  for (const Chunk& c : chunks_) {  // (in offset order: the order they were placed in)
    for (; at < c.offset; at += std::min<std::uint64_t>(kIndexAlign, c.offset - at))
      if (!write_fully(fd, kZeros, std::min<std::uint64_t>(kIndexAlign, c.offset - at)))
        return false;
    if (!write_fully(fd, c.data, c.size)) return false;
    at += c.size;
  }
  return write_fully(fd, kZeros, size_ - at);
}

namespace {

// Every entry of a front-coded path stream decodes within it and the folders.
bool paths_hold(const std::uint8_t* region, const FilesHeader& h, std::uint32_t blocks_section,
                std::uint64_t samples) {
  const SectionInfo& b = h.sections[blocks_section];
  const SectionInfo& p = h.sections[blocks_section + 1];
  if (b.count != (samples + kPathBlock - 1) / kPathBlock) return false;
  const auto* blocks = reinterpret_cast<const std::uint64_t*>(region + b.offset);
  const auto* folders = reinterpret_cast<const FolderRecord*>(region + h.sections[kFolders].offset);
  const std::uint64_t text = h.sections[kText].count;
  for (std::uint64_t k = 0; k < b.count; ++k) {
    const bool ok =
        walk_block(blocks, b.count, region + p.offset, p.count, h.sections[kFolders].count, k,
                   std::min<std::uint64_t>(kPathBlock, samples - k * kPathBlock),
                   [&](std::uint64_t entry, std::uint64_t head, std::uint64_t suffix, const char*,
                       std::uint64_t tail) {
                     std::uint64_t length = head + suffix + tail;
                     if (entry == 0) {
                       if (!within(folders[head].offset, folders[head].length, text))
                         return std::int64_t{-1};
                       length = folders[head].length + tail;
                     }
                     return length <= std::numeric_limits<std::uint32_t>::max()
                                ? static_cast<std::int64_t>(length)
                                : std::int64_t{-1};
                   });
    if (!ok) return false;
  }
  return true;
}

// Every value of column c within [lo, hi].
bool column_within(const std::uint8_t* region, const SectionInfo& info, std::int64_t lo,
                   std::int64_t hi) {
  if (info.width == 0) return info.base >= lo && info.base <= hi;
  if (info.base < lo || info.base > hi) return false;
  const IntColumn values(region + info.offset, info);
  for (std::uint64_t i = 0; i < info.count; ++i) {
    const std::uint64_t v = static_cast<std::uint64_t>(values[static_cast<std::int64_t>(i)]);
    // (Compared unsigned after the base: a width-8 value may wrap the sum.)
    if (v - static_cast<std::uint64_t>(info.base) >
        static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(info.base))
      return false;
  }
  return true;
}

// Parquet's chunks and pages: none, or one chunk per source and column (1 or 2 columns), each
// chunk's data pages following the last's, starting at its row group's row 0, in order, each at
// most kMaxPageRows rows, and its dictionary page, codec and levels ones a worker reads.
bool parquet_holds(const std::uint8_t* region, const FilesHeader& h, std::uint64_t samples) {
  const SectionInfo& c = h.sections[kParquetChunks];
  const SectionInfo& p = h.sections[kParquetPages];
  const std::uint64_t sources = h.sections[kSources].count;
  const std::uint64_t columns = h.parquet_columns;
  if (c.count == 0) return p.count == 0 && columns == 0;
  if (columns < 1 || columns > 2 || c.count != sources * columns) return false;
  const auto* chunks = reinterpret_cast<const ParquetChunkRecord*>(region + c.offset);
  const auto* pages = reinterpret_cast<const ParquetPageRecord*>(region + p.offset);
  const auto* starts = reinterpret_cast<const SourceRecord*>(region + h.sections[kSources].offset);
  for (std::uint64_t r = 0; r < c.count; ++r) {
    const std::uint64_t s = r / columns;
    const ParquetChunkRecord& k = chunks[r];
    const std::uint64_t end = r + 1 < c.count ? chunks[r + 1].first_page : p.count;
    if (k.first_page > end || end > p.count) return false;
    if (!codec_supported(static_cast<ParquetCodec>(k.codec)) || k.max_def > 2 ||
        k.dictionary_size > kMaxPageBytes)
      return false;
    const std::uint64_t rows =
        (s + 1 < sources ? starts[s + 1].first : samples) - starts[s].first;
    if (rows > 0 && (k.first_page == end || pages[k.first_page].first_row != 0)) return false;
    for (std::uint64_t q = k.first_page; q < end; ++q) {
      const std::uint64_t next = q + 1 < end ? pages[q + 1].first_row : rows;
      if (next <= pages[q].first_row || next - pages[q].first_row > kMaxPageRows ||
          pages[q].size == 0 || pages[q].size > kMaxPageBytes)
        return false;
    }
  }
  return true;
}

}  // namespace

bool files_region_holds(const std::uint8_t* region, std::uint64_t size, std::uint64_t samples,
                        int max_classes) {
  FilesHeader h;
  if (size < sizeof h) return false;
  std::memcpy(&h, region, sizeof h);
  // (Every sample takes a byte at least: a path's entry, or a shard member's offset, distinct
  // from its neighbours'; a Parquet sample is a row of a page, which holds at most kMaxPageRows.
  // A planted count beyond that would have start-up loops run for ever.)
  const std::uint64_t pages = h.sections[kParquetPages].count;
  if (h.sections[kParquetChunks].count == 0
          ? samples > size
          : pages > size || samples > pages * kMaxPageRows || samples > kMaxParquetSamples)
    return false;
  if (h.mask_kind > kMaskMember) return false;
  for (std::uint32_t s = 0; s < kSectionCount; ++s) {
    const SectionInfo& info = h.sections[s];
    const bool column = s >= kFirstColumn;
    const std::uint32_t w = info.width;
    if (column ? !(w == 0 || w == 1 || w == 2 || w == 4 || w == 8) : w != record_width(s))
      return false;
    if (info.offset < sizeof h || info.offset % 8 != 0 || info.offset > size) return false;
    if (w > 0 && info.count > (size - info.offset) / w) return false;
    const std::uint64_t want = s == kBoxFirstColumn ? samples + 1 : samples;
    if (column && info.count != want) return false;
  }
  const auto* sources = reinterpret_cast<const SourceRecord*>(region + h.sections[kSources].offset);
  const std::uint64_t source_total = h.sections[kSources].count;
  const std::uint64_t text = h.sections[kText].count;
  for (std::uint64_t s = 0; s < source_total; ++s) {
    const SourceRecord& r = sources[s];
    if ((s == 0 ? r.first != 0 : r.first < sources[s - 1].first) || r.first > samples ||
        !within(r.path_offset, std::uint64_t{r.path_length} + r.copy_length, text))
      return false;
    const std::uint64_t next = s + 1 < source_total ? sources[s + 1].first : samples;
    if (next > r.first && r.path_length == 0) return false;  // (a source with samples)
  }
  if (!parquet_holds(region, h, samples)) return false;
  const auto* folders = reinterpret_cast<const FolderRecord*>(region + h.sections[kFolders].offset);
  for (std::uint64_t f = 0; f < h.sections[kFolders].count; ++f)
    if (!within(folders[f].offset, folders[f].length, text)) return false;
  // Shards: every sample a member of one; else every sample a path of its own. Parquet rows may
  // have a path (empty: their image is in their row).
  const bool paths = source_total == 0 ||
                     (h.sections[kParquetChunks].count > 0 && h.sections[kPathBlocks].count > 0);
  if (paths ? !paths_hold(region, h, kPathBlocks, samples) : h.sections[kPathBlocks].count != 0)
    return false;
  if (h.mask_kind == kMaskFile ? !paths_hold(region, h, kMaskPathBlocks, samples)
                               : h.sections[kMaskPathBlocks].count != 0)
    return false;
  const auto within = [&](std::uint32_t c, std::int64_t lo, std::int64_t hi) {
    return column_within(region, h.sections[c], lo, hi);
  };
  constexpr std::int64_t kInt = std::numeric_limits<std::int32_t>::max();
  constexpr std::int64_t kUint = std::numeric_limits<std::uint32_t>::max();
  if (!within(kLabelColumn, -1, max_classes - 1) || !within(kOffsetColumn, 0, kMaxUnsigned) ||
      !within(kSizeColumn, 0, kMaxUnsigned) || !within(kMaskOffsetColumn, 0, kMaxUnsigned) ||
      !within(kMaskSizeColumn, 0, kMaxUnsigned) || !within(kBytesOffsetColumn, 0, kMaxUnsigned) ||
      !within(kBytesSizeColumn, 0, kUint) || !within(kAnnotatedWidthColumn, 0, kInt) ||
      !within(kAnnotatedHeightColumn, 0, kInt))
    return false;
  // Box ranges: from 0, never decreasing, within the boxes.
  const SectionInfo& first = h.sections[kBoxFirstColumn];
  const IntColumn box_first(region + first.offset, first);
  const auto box_total = static_cast<std::int64_t>(h.sections[kBoxes].count);
  if (!within(kBoxFirstColumn, 0, box_total) || box_first[0] != 0) return false;
  if (first.width > 0)
    for (std::uint64_t i = 0; i < samples; ++i)
      if (box_first[static_cast<std::int64_t>(i) + 1] < box_first[static_cast<std::int64_t>(i)])
        return false;
  return true;
}

}  // namespace stoke::detail
