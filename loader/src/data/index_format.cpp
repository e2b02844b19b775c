#include "data/index_format.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>

#include "common/align.hpp"
#include "common/fd.hpp"
#include "data/file_reader.hpp"
#include "data/index_columns.hpp"
#include "data/shard_list.hpp"

namespace stoke::detail {

namespace {

constexpr char kMagic[8] = {'S', 'T', 'O', 'K', 'E', 'I', 'X', '\0'};
constexpr std::uint64_t kRegionOffset = 4096;

struct IndexFileHeader {
  char magic[8] = {};
  std::uint32_t format = kIndexFileFormat;
  std::uint32_t header_size = 0;
  std::uint64_t file_size = 0;
  std::uint64_t region_offset = 0, region_size = 0;
  std::uint64_t meta_offset = 0, meta_size = 0;
  std::uint64_t identity_offset = 0, identity_size = 0;
  std::uint32_t kind = 0;
  std::uint32_t flags = 0;  // kHasBoxes | kHasMasks | kHasBytes | kIsParquet
  std::int64_t size = 0;
  std::int32_t height = 0, width = 0, channels = 0, reserved = 0;
  std::uint64_t box_total = 0;  // kShards: shard records; kFiles: its boxes (for the log only)
};
constexpr std::uint32_t kHasBoxes = 1, kHasMasks = 2, kHasBytes = 4, kIsParquet = 8;

// The meta section: little records of 8-byte counts and length-prefixed strings.
class MetaWriter {
 public:
  void u64(std::uint64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(const std::string& s) {
    u64(s.size());
    out_ += s;
  }
  void strings(const std::vector<std::string>& v) {
    u64(v.size());
    for (const std::string& s : v) str(s);
  }
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// Reads what MetaWriter wrote, never past `end`: a count or length larger than what is left
// makes it fail (and allocate nothing large).
class MetaReader {
 public:
  MetaReader(const std::uint8_t* p, std::size_t n) : p_(p), end_(p + n) {}
  bool ok() const { return ok_; }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    if (static_cast<std::size_t>(end_ - p_) < sizeof v) return fail();
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  // A count of records each at least `min_bytes` long.
  std::uint64_t count(std::size_t min_bytes) {
    const std::uint64_t n = u64();
    return n <= static_cast<std::size_t>(end_ - p_) / min_bytes ? n : fail();
  }
  std::string str() {
    const std::uint64_t n = u64();
    if (n > static_cast<std::size_t>(end_ - p_)) return fail(), std::string();
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  std::vector<std::string> strings() {
    std::vector<std::string> v(count(8));
    for (std::string& s : v) s = str();
    return v;
  }

 private:
  std::uint64_t fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  bool ok_ = true;
};

std::string meta_text(const DatasetIndex& index) {
  MetaWriter w;
  w.strings(index.class_names);
  w.u64(index.rejected.size());
  for (const RejectedFile& r : index.rejected) {
    w.str(r.path);
    w.u64(static_cast<std::uint64_t>(r.reason));
  }
  w.u64(index.shard_starts.size());
  for (std::int64_t s : index.shard_starts) w.u64(static_cast<std::uint64_t>(s));
  w.strings(index.shard_notes);
  w.u64(index.remote_shards.size());
  for (const RemoteShard& r : index.remote_shards) {
    w.u64(r.shard);
    w.u64(r.shards);
    w.str(r.url);
    w.u64(r.size);
    w.str(r.copy);
  }
  w.strings(index.box_notes);
  return w.text();
}

bool read_meta(MetaReader& r, DatasetIndex& index) {
  index.class_names = r.strings();
  index.rejected.resize(r.count(16));
  for (RejectedFile& f : index.rejected) {
    f.path = r.str();
    const std::uint64_t reason = r.u64();
    if (reason >= static_cast<std::uint64_t>(BadInput::kCount)) return false;
    f.reason = static_cast<BadInput>(reason);
  }
  index.shard_starts.resize(r.count(8));
  for (std::int64_t& s : index.shard_starts) s = static_cast<std::int64_t>(r.u64());
  index.shard_notes = r.strings();
  index.remote_shards.resize(r.count(40));
  for (RemoteShard& s : index.remote_shards) {
    s.shard = r.u64();
    s.shards = r.u64();
    s.url = r.str();
    s.size = r.u64();
    s.copy = r.str();
  }
  index.box_notes = r.strings();
  return r.ok();
}

// The region's size and bytes, each section 64-byte aligned: kRaw's and kShards' written from
// the index without a copy, kFiles' encoded first (`files`, data/index_columns.hpp).
std::uint64_t region_size(const DatasetIndex& index, const std::optional<FilesImage>& files) {
  if (index.kind == DatasetKind::kShards)
    return align_up(sizeof(LazyShardOptions), kIndexAlign) +
           align_up(index.shard_records.size() * sizeof(ShardRecord), kIndexAlign) +
           index.paths.size();
  if (index.kind == DatasetKind::kRaw) return 0;  // (every byte is in the pixels file)
  return files->size();
}

bool write_region(int fd, const DatasetIndex& index, const std::optional<FilesImage>& files) {
  static const char kZeros[kIndexAlign] = {};
  const auto section = [fd](const void* p, std::size_t n) {
    return write_fully(fd, p, n) && write_fully(fd, kZeros, align_up(n, kIndexAlign) - n);
  };
  if (index.kind == DatasetKind::kRaw) return true;
  if (index.kind == DatasetKind::kShards)
    return section(&index.lazy_options, sizeof index.lazy_options) &&
           section(index.shard_records.data(), index.shard_records.size() * sizeof(ShardRecord)) &&
           write_fully(fd, index.paths.data(), index.paths.size());
  return files->write(fd);
}

// A NUL within each of LazyShardOptions' strings.
template <std::size_t N>
bool terminated(const char (&field)[N]) {
  return std::memchr(field, '\0', N) != nullptr;
}

// kShards: the options' strings end, the shards' starts add up to the samples, and every path
// lies within the path bytes.
bool shards_hold(const IndexFileHeader& h, const std::uint8_t* region, int max_classes) {
  const std::uint64_t head = align_up(sizeof(LazyShardOptions), kIndexAlign);
  if (h.box_total < 1 || h.box_total > kMaxShards || head > h.region_size) return false;
  const std::uint64_t records = align_up(h.box_total * sizeof(ShardRecord), kIndexAlign);
  if (records > h.region_size - head) return false;
  const std::uint64_t paths = h.region_size - head - records;
  LazyShardOptions o;
  std::memcpy(&o, region, sizeof o);
  if (!terminated(o.label_field) || !terminated(o.mask_field) || !terminated(o.bytes_field) ||
      !terminated(o.box_field) || !terminated(o.cache_root) || o.max_classes < 1 ||
      o.max_classes > max_classes || o.on_error > static_cast<std::uint32_t>(OnError::kError) ||
      o.shard_copies > 1)
    return false;
  const auto* r = reinterpret_cast<const ShardRecord*>(region + head);
  std::uint64_t start = 0;
  for (std::uint64_t s = 0; s < h.box_total; ++s, ++r) {
    if (r->start != start || r->samples > static_cast<std::uint64_t>(h.size) - start ||
        r->path_length == 0 || !within(r->path_offset, r->path_length, paths))
      return false;
    start += r->samples;
  }
  return start == static_cast<std::uint64_t>(h.size);
}

// Every entry's offsets and lengths within the region's sections, every label below max_classes.
bool region_holds(const IndexFileHeader& h, const std::uint8_t* region, int max_classes) {
  const auto n = static_cast<std::uint64_t>(h.size);
  if (h.kind == static_cast<std::uint32_t>(DatasetKind::kRaw)) {
    // (IDX data: one channel, and nothing a file entry has: the accessors of masks, bytes and
    // boxes read entries, which raw data has none of)
    // The IDX reader's bounds (data/mnist.cpp), so that no product of them can wrap.
    if (h.height < 1 || h.width < 1 || h.channels != 1 || h.height > kMaxIdxSide ||
        h.width > kMaxIdxSide || n > kMaxIdxImages || h.flags != 0 || h.box_total != 0)
      return false;
    return h.region_size == 0;  // (the labels are checked with the pixels: attach_pixels)
  }
  if (h.kind == static_cast<std::uint32_t>(DatasetKind::kShards))
    return shards_hold(h, region, max_classes);
  if (h.kind != static_cast<std::uint32_t>(DatasetKind::kFiles)) return false;
  return files_region_holds(region, h.region_size, n, max_classes);
}

// kShards: the plan's shard starts (in the meta section) are the records' (the workers'), so
// both place every sample in the same shard.
bool starts_match_records(const DatasetIndex& info, const std::uint8_t* region,
                          std::uint64_t shards) {
  if (info.kind != DatasetKind::kShards) return true;
  if (info.shard_starts.size() != shards + 1) return false;
  const auto* r = reinterpret_cast<const ShardRecord*>(
      region + align_up(sizeof(LazyShardOptions), kIndexAlign));
  for (std::uint64_t s = 0; s < shards; ++s)
    if (static_cast<std::uint64_t>(info.shard_starts[s]) != r[s].start) return false;
  return true;
}

// The shard starts and remote shards agree with the samples.
bool meta_holds(const DatasetIndex& info) {
  const std::vector<std::int64_t>& s = info.shard_starts;
  if (!s.empty()) {
    if (s.front() != 0 || s.back() != info.size) return false;
    for (std::size_t i = 1; i < s.size(); ++i)
      if (s[i] < s[i - 1]) return false;
  }
  for (const RemoteShard& r : info.remote_shards)
    if (s.empty() || r.shard >= s.size() - 1 || r.shards == 0 ||
        r.shards > s.size() - 1 - r.shard)
      return false;
  return true;
}

}  // namespace

MappedIndex::~MappedIndex() {
  if (map_ != nullptr) ::munmap(const_cast<std::uint8_t*>(map_), map_size_);
  if (fd_ >= 0) ::close(fd_);
  if (pixels_map_ != nullptr) ::munmap(const_cast<std::uint8_t*>(pixels_map_), pixels_map_size_);
  if (pixels_fd_ >= 0) ::close(pixels_fd_);
}

DatasetView MappedIndex::view(bool copies) const {
  return DatasetView(IndexRegion{info_.kind, info_.size, map_ + region_offset_, raw_bytes(),
                                 box_total_, copies, pixels()});
}

const std::uint8_t* MappedIndex::pixels() const {
  return pixels_map_ == nullptr ? nullptr : pixels_map_ + kRegionOffset;
}

std::size_t MappedIndex::raw_bytes() const {
  return static_cast<std::size_t>(info_.height) * info_.width * info_.channels;
}

void MappedIndex::release_pages() const {
  ::madvise(const_cast<std::uint8_t*>(map_), map_size_, MADV_DONTNEED);
  ::madvise(const_cast<std::uint8_t*>(map_), map_size_, MADV_RANDOM);  // (samples are read so)
  if (pixels_map_ != nullptr)
    ::madvise(const_cast<std::uint8_t*>(pixels_map_), pixels_map_size_, MADV_DONTNEED);
}

namespace {

constexpr char kPixelsMagic[8] = {'S', 'T', 'O', 'K', 'E', 'P', 'X', '\0'};
constexpr std::uint32_t kPixelsFormat = 1;

// The pixels file: this header, the pixels at kRegionOffset, one label byte a sample, then the
// identity text.
struct PixelsFileHeader {
  char magic[8] = {};
  std::uint32_t format = kPixelsFormat;
  std::uint32_t header_size = sizeof(PixelsFileHeader);
  std::uint64_t file_size = 0;
  std::uint64_t pixels_size = 0;
  std::uint64_t samples = 0;
  std::uint64_t identity_size = 0;
};

}  // namespace

bool write_pixels_file(int fd, const DatasetIndex& index, const std::string& identity) {
  PixelsFileHeader h;
  std::memcpy(h.magic, kPixelsMagic, sizeof kPixelsMagic);
  h.pixels_size = index.pixels.size();
  h.samples = index.labels.size();
  h.identity_size = identity.size();
  h.file_size = kRegionOffset + h.pixels_size + h.samples + h.identity_size;
  std::string head(kRegionOffset, '\0');
  std::memcpy(head.data(), &h, sizeof h);
  // (IDX labels are bytes: read_idx gives 0..255.)
  const std::vector<std::uint8_t> labels(index.labels.begin(), index.labels.end());
  return write_fully(fd, head.data(), head.size()) &&
         write_fully(fd, index.pixels.data(), index.pixels.size()) &&
         write_fully(fd, labels.data(), labels.size()) &&
         write_fully(fd, identity.data(), identity.size());
}

bool attach_pixels(MappedIndex& index, int fd, const std::string& identity, int max_classes) {
  UniqueFd owned(fd);
  struct stat st {};
  if (index.info_.kind != DatasetKind::kRaw || ::fstat(fd, &st) != 0 ||
      st.st_size < static_cast<off_t>(kRegionOffset))
    return false;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  PixelsFileHeader h;
  if (pread_fully(fd, &h, sizeof h, 0) != static_cast<std::int64_t>(sizeof h)) return false;
  const auto n = static_cast<std::uint64_t>(index.info_.size);
  const std::uint64_t per = index.raw_bytes();
  // (Bounded before any product: the file holds per + 1 bytes a sample after its header.)
  if (per == 0 || n > (size - kRegionOffset) / (per + 1)) return false;
  const std::uint64_t want = n * per;
  if (std::memcmp(h.magic, kPixelsMagic, sizeof kPixelsMagic) != 0 || h.format != kPixelsFormat ||
      h.header_size != sizeof h || h.file_size != size || h.pixels_size != want || h.samples != n ||
      h.identity_size != identity.size() || kRegionOffset + want + n + identity.size() != size)
    return false;
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return false;
  const auto* map = static_cast<const std::uint8_t*>(p);
  const std::uint8_t* labels = map + kRegionOffset + want;
  const bool ok =
      std::string_view(reinterpret_cast<const char*>(labels + n), identity.size()) == identity &&
      std::all_of(labels, labels + n, [&](std::uint8_t l) { return l < max_classes; });
  if (!ok) {
    ::munmap(p, size);
    return false;
  }
  index.pixels_map_ = map;
  index.pixels_map_size_ = size;
  index.pixels_fd_ = owned.release();
  return true;
}

bool write_index_file(int fd, const DatasetIndex& index, const std::string& identity) {
  IndexFileHeader h;
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.header_size = sizeof h;
  h.kind = static_cast<std::uint32_t>(index.kind);
  h.flags = (index.has_boxes ? kHasBoxes : 0) | (index.has_masks ? kHasMasks : 0) |
            (index.has_bytes ? kHasBytes : 0) | (index.parquet ? kIsParquet : 0);
  h.size = index.size;
  h.height = index.height;
  h.width = index.width;
  h.channels = index.channels;
  h.box_total =
      index.kind == DatasetKind::kShards ? index.shard_records.size() : index.boxes.size();
  std::optional<FilesImage> files;
  if (index.kind == DatasetKind::kFiles) files.emplace(encode_files(index));
  h.region_offset = kRegionOffset;
  h.region_size = region_size(index, files);
  const std::string meta = meta_text(index);
  h.meta_offset = h.region_offset + h.region_size;
  h.meta_size = meta.size();
  h.identity_offset = h.meta_offset + h.meta_size;
  h.identity_size = identity.size();
  h.file_size = h.identity_offset + h.identity_size;
  std::string head(kRegionOffset, '\0');
  std::memcpy(head.data(), &h, sizeof h);
  return write_fully(fd, head.data(), head.size()) && write_region(fd, index, files) &&
         write_fully(fd, meta.data(), meta.size()) &&
         write_fully(fd, identity.data(), identity.size());
}

std::unique_ptr<MappedIndex> map_index_file(int fd, const std::string& identity, int max_classes,
                                            int origin, std::string file) {
  std::unique_ptr<MappedIndex> m(new MappedIndex);
  MappedIndex& out = *m;
  out.fd_ = fd;  // closed by m from here on
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kRegionOffset)) return nullptr;
  out.map_size_ = static_cast<std::size_t>(st.st_size);
  void* p = ::mmap(nullptr, out.map_size_, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return nullptr;
  out.map_ = static_cast<const std::uint8_t*>(p);
  IndexFileHeader h;
  std::memcpy(&h, out.map_, sizeof h);
  const std::uint64_t size = out.map_size_;
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.format != kIndexFileFormat ||
      h.header_size != sizeof h || h.file_size != size || h.region_offset != kRegionOffset ||
      !within(h.region_offset, h.region_size, size) || !within(h.meta_offset, h.meta_size, size) ||
      !within(h.identity_offset, h.identity_size, size) || h.size < 1 ||
      (h.flags & ~(kHasBoxes | kHasMasks | kHasBytes | kIsParquet)) != 0)
    return nullptr;
  if (std::string_view(reinterpret_cast<const char*>(out.map_ + h.identity_offset),
                       h.identity_size) != identity)
    return nullptr;
  if (!region_holds(h, out.map_ + h.region_offset, max_classes)) return nullptr;
  DatasetIndex& info = out.info_;
  info.kind = static_cast<DatasetKind>(h.kind);
  info.size = h.size;
  info.height = h.height;
  info.width = h.width;
  info.channels = h.channels;
  info.has_boxes = (h.flags & kHasBoxes) != 0;
  info.has_masks = (h.flags & kHasMasks) != 0;
  info.has_bytes = (h.flags & kHasBytes) != 0;
  info.parquet = (h.flags & kIsParquet) != 0;
  // (The flags and the region agree: a Parquet region has its chunks, and only it has; its
  // bytes are a column of their own.)
  if (info.parquet != (info.kind == DatasetKind::kFiles &&
                       FilesRegion(out.map_ + h.region_offset).parquet()))
    return nullptr;
  if (info.parquet &&
      info.has_bytes != (FilesRegion(out.map_ + h.region_offset).parquet_columns() == 2))
    return nullptr;
  MetaReader reader(out.map_ + h.meta_offset, h.meta_size);
  if (!read_meta(reader, info) || !meta_holds(info) ||
      !starts_match_records(info, out.map_ + h.region_offset, h.box_total))
    return nullptr;
  out.region_offset_ = h.region_offset;
  out.region_size_ = h.region_size;
  out.box_total_ = h.box_total;
  out.origin_ = static_cast<MappedIndex::Origin>(origin);
  out.file_ = std::move(file);
  return m;
}

}  // namespace stoke::detail
