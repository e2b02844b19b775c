#include "data/index_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "common/align.hpp"
#include "common/build_info.hpp"
#include "common/fd.hpp"
#include "common/number_text.hpp"
#include "common/text.hpp"
#include "data/cache_folder.hpp"
#include "data/file_reader.hpp"
#include "data/folder_scan.hpp"
#include "data/shard_list.hpp"
#include "remote/remote.hpp"
#include "stoke/error.hpp"
#include "stoke/mnist.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'S', 'T', 'O', 'K', 'E', 'I', 'X', '\0'};
// Version 1: the region is dataset_view.hpp's format with its 120-byte FileEntry; 2: kShards.
constexpr std::uint32_t kFormat = 2;
constexpr std::uint64_t kRegionOffset = 4096;
constexpr const char* kSuffix = ".stoke-index";

struct IndexFileHeader {
  char magic[8] = {};
  std::uint32_t format = kFormat;
  std::uint32_t header_size = 0;
  std::uint64_t file_size = 0;
  std::uint64_t region_offset = 0, region_size = 0;
  std::uint64_t meta_offset = 0, meta_size = 0;
  std::uint64_t identity_offset = 0, identity_size = 0;
  std::uint32_t kind = 0;
  std::uint32_t flags = 0;  // kHasBoxes | kHasMasks | kHasBytes
  std::int64_t size = 0;
  std::int32_t height = 0, width = 0, channels = 0, reserved = 0;
  std::uint64_t box_total = 0;  // kFiles: SampleBoxes; kShards: shard records
};
constexpr std::uint32_t kHasBoxes = 1, kHasMasks = 2, kHasBytes = 4;

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
  index.remote_shards.resize(r.count(32));
  for (RemoteShard& s : index.remote_shards) {
    s.shard = r.u64();
    s.url = r.str();
    s.size = r.u64();
    s.copy = r.str();
  }
  index.box_notes = r.strings();
  return r.ok();
}

// Whether [offset, offset + length) lies within [0, size).
bool within(std::uint64_t offset, std::uint64_t length, std::uint64_t size) {
  return offset <= size && length <= size - offset;
}

// The region's bytes, as DatasetIndex::write_to lays them out, written to fd without a copy.
bool write_region(int fd, const DatasetIndex& index) {
  static const char kZeros[kIndexAlign] = {};
  const auto section = [fd](const void* p, std::size_t n) {
    return write_fully(fd, p, n) && write_fully(fd, kZeros, align_up(n, kIndexAlign) - n);
  };
  if (index.kind == DatasetKind::kRaw)
    return section(index.labels.data(), index.labels.size() * sizeof(std::int32_t)) &&
           write_fully(fd, index.pixels.data(), index.pixels.size());
  if (index.kind == DatasetKind::kShards)
    return section(&index.lazy_options, sizeof index.lazy_options) &&
           section(index.shard_records.data(), index.shard_records.size() * sizeof(ShardRecord)) &&
           write_fully(fd, index.paths.data(), index.paths.size());
  return section(index.entries.data(), index.entries.size() * sizeof(FileEntry)) &&
         section(index.boxes.data(), index.boxes.size() * sizeof(SampleBox)) &&
         write_fully(fd, index.paths.data(), index.paths.size());
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
    if (h.height < 1 || h.width < 1 || h.channels != 1 || h.height > (1 << 16) ||
        h.width > (1 << 16) || h.flags != 0 || h.box_total != 0)
      return false;
    const std::uint64_t labels = align_up(n * sizeof(std::int32_t), kIndexAlign);
    const std::uint64_t per = std::uint64_t(h.height) * std::uint64_t(h.width) * h.channels;
    if (n > h.region_size / per || h.region_size != labels + n * per) return false;
    const auto* l = reinterpret_cast<const std::int32_t*>(region);
    for (std::uint64_t i = 0; i < n; ++i)
      if (l[i] < 0 || l[i] >= max_classes) return false;
    return true;
  }
  if (h.kind == static_cast<std::uint32_t>(DatasetKind::kShards))
    return shards_hold(h, region, max_classes);
  if (h.kind != static_cast<std::uint32_t>(DatasetKind::kFiles)) return false;
  if (n > h.region_size / sizeof(FileEntry) || h.box_total > h.region_size / sizeof(SampleBox))
    return false;
  const std::uint64_t entries = align_up(n * sizeof(FileEntry), kIndexAlign);
  const std::uint64_t boxes = align_up(h.box_total * sizeof(SampleBox), kIndexAlign);
  if (entries + boxes > h.region_size) return false;
  const std::uint64_t paths = h.region_size - entries - boxes;
  const auto* e = reinterpret_cast<const FileEntry*>(region);
  for (std::uint64_t i = 0; i < n; ++i, ++e) {
    const bool ok =
        within(e->path_offset, std::uint64_t{e->path_length} + e->copy_length, paths) &&
        within(e->name_offset, e->name_length, paths) && e->mask_kind <= kMaskMember &&
        (e->mask_kind != kMaskFile || within(e->mask_path_offset, e->mask_path_length, paths)) &&
        within(e->box_first, e->box_count, h.box_total) && e->label >= -1 &&
        e->label < max_classes && e->annotated_width >= 0 && e->annotated_height >= 0;
    if (!ok) return false;
  }
  return true;
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
    if (s.empty() || r.shard >= s.size() - 1) return false;
  return true;
}

// One input's version: "<what> <path>\t<size>\t<mtime>\t<ctime>\t<inode>\t<device>\n".
void add_version(std::string& out, const char* what, const std::string& path,
                 const struct stat& st) {
  char v[160];
  std::snprintf(v, sizeof v, "\t%lld\t%lld.%09ld\t%lld.%09ld\t%llu\t%llu\n",
                static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec),
                st.st_mtim.tv_nsec, static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec,
                static_cast<unsigned long long>(st.st_ino),
                static_cast<unsigned long long>(st.st_dev));
  out += what;
  out += ' ';
  out += path;
  out += v;
}

// The same, stat'ed here; false when it cannot be.
bool add_version(std::string& out, const char* what, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  add_version(out, what, path, st);
  return true;
}

// Whether `dir`'s file system counts a folder's subfolders in its link count (2: none), as
// ext2/3/4, XFS, tmpfs and NFS (of such a server) do; others (FUSE, CIFS, ISO 9660) may say 2 of
// any folder.
bool counts_subfolders(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0xEF53:      // ext2/3/4
    case 0x58465342:  // XFS
    case 0x01021994:  // tmpfs
    case 0x6969:      // NFS
      return true;
    default:
      return false;
  }
}

// The versions of `dir` (whose stat is `st`) and every folder below it, not following links: a
// file added to, removed from or renamed in any of them changes its folder's times. `leaf`: known
// to hold no folder, so it is not read.
bool add_folder_versions(std::string& out, const std::string& dir, const struct stat& st, int depth,
                         bool leaf) {
  add_version(out, "dir", dir, st);
  if (leaf) return true;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  std::vector<std::string> subs;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat s {};
      is_dir = ::lstat(path.c_str(), &s) == 0 && S_ISDIR(s.st_mode);
    }
    if (is_dir) subs.push_back(path);
  }
  ::closedir(d);
  std::sort(subs.begin(), subs.end());
  for (const std::string& sub : subs) {
    struct stat s {};
    if (depth >= 64 || ::stat(sub.c_str(), &s) != 0 ||
        !add_folder_versions(out, sub, s, depth + 1, false))
      return false;
  }
  return true;
}

// An image-folder tree: its root, then each class folder (links followed, as the index does;
// stat'ed at once, each a round trip on a network file system) and the folders below it.
bool add_tree_versions(std::string& out, const std::string& root) {
  if (!add_version(out, "root", root)) return false;
  std::vector<std::string> classes;
  try {
    for (const fs::path& c : class_folders(root)) classes.push_back(c.string());
  } catch (const std::exception&) {
    return false;  // (indexing reports it)
  }
  const std::vector<PathStat> stats = stat_paths(classes);
  // Which class folders hold none: by the link count where the file system keeps it so, else
  // by reading them (at once); the rare ones that do are walked below.
  const bool counted = counts_subfolders(root);
  std::vector<std::string> unknown;
  for (std::size_t i = 0; i < classes.size(); ++i)
    if (stats[i].error == 0 && !(counted && stats[i].st.st_nlink == 2))
      unknown.push_back(classes[i]);
  const std::vector<int> subfolders = has_subfolders(unknown);
  for (std::size_t i = 0, u = 0; i < classes.size(); ++i) {
    if (stats[i].error != 0) return false;
    bool leaf = counted && stats[i].st.st_nlink == 2;
    if (!leaf) leaf = subfolders[u++] == 0;
    if (!add_folder_versions(out, classes[i], stats[i].st, 0, leaf)) return false;
  }
  return true;
}

// Every shard's version (a local one's file and sidecar, a remote one's size and ETag).
bool add_shard_versions(std::string& out, const std::vector<std::string>& shards,
                        const RemotePolicy& policy, std::map<std::string, RemoteObject>* seen) {
  for (const std::string& name : shards) {
    if (is_url(name)) {
      if (redact_url(name) != printable(name)) return false;  // (see dataset_identity)
      const RemoteObject object = remote_stat(name, policy);
      if (seen != nullptr) (*seen)[name] = object;
      if (object.etag.empty()) return false;
      out += "url " + redact_url(name) + "\t" + std::to_string(object.size) + "\t" + object.etag +
             "\n";
      continue;
    }
    const std::string path = fs::absolute(name).lexically_normal().string();
    if (!add_version(out, "shard", path)) return false;
    if (!add_version(out, "sidecar", path + ".idx")) out += "sidecar " + path + ".idx\tnone\n";
  }
  return true;
}

// The shared index folder under `root`, made and checked: "" when it cannot be used (the index
// is then private; a cache folder that is refused for remote shards is refused there).
std::string index_folder(const std::string& root) {
  if (root.empty()) return "";
  const std::string folder = root + "/datasets";
  try {
    return prepare_cache_folder(root, false) && prepare_cache_folder(folder, true) ? folder : "";
  } catch (const ConfigError&) {
    return "";
  }
}

// A copy of the file open at `fd` (which it closes) in a memfd of this process's own, or -1.
int private_copy(int fd, std::uint64_t size) {
  const int copy = try_raise_fd(::memfd_create("stoke-index", MFD_CLOEXEC));
  off_t from = 0;
  while (copy >= 0 && static_cast<std::uint64_t>(from) < size) {
    const ssize_t n = ::sendfile(copy, fd, &from, static_cast<std::size_t>(size - from));
    if (n <= 0 && !(n < 0 && errno == EINTR)) {
      ::close(copy);
      ::close(fd);
      return -1;
    }
  }
  ::close(fd);
  return copy;
}

// Whether the files the index left out as empty still are: an image written after indexing
// (copied in place) changes no folder's times, so its index would keep leaving it out.
bool empty_files_still_empty(const DatasetIndex& info) {
  for (const RejectedFile& r : info.rejected) {
    struct stat st {};
    if (r.reason == BadInput::kEmpty && ::stat(r.path.c_str(), &st) == 0 && st.st_size != 0)
      return false;
  }
  return true;
}

// kShards: the options the file carries are the ones this loader would write. (A file copied
// whole from another loader's, identity and all, could otherwise lift the label bound or point
// the workers' indexing at another folder.)
bool lazy_options_hold(const MappedIndex& m, const IndexOptions& options) {
  if (m.info().kind != DatasetKind::kShards) return true;
  const LazyShardOptions want = lazy_shard_options(options);
  return std::memcmp(&want, m.bytes() + m.region_offset(), sizeof want) == 0;
}

// The shared index file at `path` when it is one of ours, of this identity, whole and current.
// One that another member of a shared cache's group owns is read from a private copy: it could
// rewrite the file after it is checked.
std::unique_ptr<MappedIndex> open_shared(const std::string& path, const std::string& identity,
                                         const IndexOptions& options, MappedIndex::Origin origin) {
  int fd = try_raise_fd(::open(path.c_str(), O_RDONLY | kCacheOpenFlags));
  struct stat st {};
  if (fd < 0) return nullptr;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      !trusted_cache_file(path, st)) {
    ::close(fd);
    return nullptr;
  }
  if (st.st_uid != ::geteuid() &&
      (fd = private_copy(fd, static_cast<std::uint64_t>(st.st_size))) < 0)
    return nullptr;
  std::unique_ptr<MappedIndex> m =
      map_index_file(fd, identity, options.max_classes, static_cast<int>(origin), path);
  if (m && (!empty_files_still_empty(m->info()) || !lazy_options_hold(*m, options))) return nullptr;
  if (m) ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // still in use
  return m;
}

// Removes what a killed writer of `name` left (its temporary files), and index files unused for
// kIndexFileKeepDays. Called with `name`'s lock held.
void sweep(const std::string& folder, const std::string& name) {
  const auto now = std::chrono::system_clock::now();
  const auto keep = std::chrono::hours(24 * kIndexFileKeepDays);
  // Old files are looked for at most every 10 minutes by a process: one that indexes a
  // dataset-level index's shards one by one writes thousands of files here, and would stat
  // them all for each. (Temporary files of `name` are looked for every time: names alone.)
  static std::mutex expiry_mutex;
  static std::map<std::string, std::int64_t> last_expiry;  // by folder: minutes since the epoch
  const std::int64_t minute =
      std::chrono::duration_cast<std::chrono::minutes>(now.time_since_epoch()).count();
  bool expire = false;
  {
    const std::lock_guard lock(expiry_mutex);
    std::int64_t& last = last_expiry[folder];
    expire = minute - last >= 10;
    if (expire) last = minute;
  }
  DIR* d = ::opendir(folder.c_str());
  if (d == nullptr) return;
  const std::string tmp_prefix = name + ".tmp.";
  while (const dirent* e = ::readdir(d)) {
    const std::string_view file = e->d_name;
    if (file.starts_with(tmp_prefix)) {
      ::unlink((folder + "/" + std::string(file)).c_str());
      continue;
    }
    if (!expire) continue;
    const std::string path = folder + "/" + std::string(file);
    struct stat st {};
    if (!file.ends_with(kSuffix) || ::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    const auto modified =
        std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec));
    if (now - modified > keep) ::unlink(path.c_str());
  }
  ::closedir(d);
}

// Frees what the build left in this process's heap.
void forget(DatasetIndex& index) {
  index = DatasetIndex{};
  ::malloc_trim(0);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Says `what` and the time so far through options.progress, every progress_every_s, while it
// lives: long indexing and long waits are not silent.
class Ticker {
 public:
  Ticker(const IndexOptions& options, std::string what)
      : progress_(options.progress), every_(options.progress_every_s), what_(std::move(what)) {
    if (progress_ && every_ > 0) thread_ = std::thread([this] { run(); });
  }
  ~Ticker() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

 private:
  void run() {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    for (int n = 1;; ++n) {
      const auto at = start + std::chrono::duration<double>(every_ * n);
      if (wake_.wait_until(lock,
                           std::chrono::time_point_cast<std::chrono::steady_clock::duration>(at),
                           [this] { return done_; }))
        return;
      try {
        progress_("dataset index: " + what_ + ", " + decimal_text(seconds_since(start)) +
                  " s so far");
      } catch (...) {  // (a log that throws says nothing more)
        return;
      }
    }
  }

  const std::function<void(const std::string&)> progress_;
  const double every_;
  const std::string what_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

// The index built into a memfd of this process's own.
std::unique_ptr<MappedIndex> private_index(DatasetIndex index, int max_classes) {
  const int fd = try_raise_fd(::memfd_create("stoke-index", MFD_CLOEXEC));
  if (fd < 0 || !write_index_file(fd, index, "")) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    throw Error(std::string("cannot hold the dataset index in memory (memfd): ") +
                std::strerror(e));
  }
  forget(index);
  std::unique_ptr<MappedIndex> m =
      map_index_file(fd, "", max_classes, static_cast<int>(MappedIndex::Origin::kPrivate), "");
  if (!m) throw Error("the dataset index written in memory does not read back");
  return m;
}

}  // namespace

MappedIndex::~MappedIndex() {
  if (map_ != nullptr) ::munmap(const_cast<std::uint8_t*>(map_), map_size_);
  if (fd_ >= 0) ::close(fd_);
}

DatasetView MappedIndex::view(bool copies) const {
  return DatasetView(
      IndexRegion{info_.kind, info_.size, map_ + region_offset_, raw_bytes(), box_total_, copies});
}

std::size_t MappedIndex::raw_bytes() const {
  return static_cast<std::size_t>(info_.height) * info_.width * info_.channels;
}

void MappedIndex::release_pages() const {
  ::madvise(const_cast<std::uint8_t*>(map_), map_size_, MADV_DONTNEED);
  ::madvise(const_cast<std::uint8_t*>(map_), map_size_, MADV_RANDOM);  // (samples are read so)
}

std::string index_file_name(const std::string& identity) {
  return cache_key(identity) + kSuffix;
}

std::optional<std::string> dataset_identity(const std::string& data, const IndexOptions& o,
                                            std::map<std::string, RemoteObject>* seen) {
  // (A URL with a user:password or a signature is indexed privately: the index holds the URL
  // whole, and a key of the redacted one would hand it to another run or user.)
  if (redact_url(data) != printable(data)) return std::nullopt;
  std::string out =
      "stoke dataset index " + std::to_string(kFormat) + " (stoke " + kVersion + ")\n";
  out += "data " + redact_url(data) + "\n";
  out += "options split=" + std::to_string(static_cast<int>(o.split)) + " label=" + o.label_field +
         " mask=" + o.mask_field + " bytes=" + o.bytes_field + " boxes=" + o.box_field +
         " on_error=" + std::to_string(static_cast<int>(o.on_error)) +
         " max_classes=" + std::to_string(o.max_classes) +
         " num_classes=" + std::to_string(o.num_classes) +
         " copies=" + (o.caches.shard_copies ? o.caches.root : std::string()) + "\n";
  if (data.empty()) return std::nullopt;
  std::error_code ec;
  if (lowercase(fs::path(data).extension().string()) == ".json") {
    out += "image_root " +
           (o.image_root.empty() ? std::string() : fs::absolute(o.image_root, ec).string()) + "\n";
    if (!add_version(out, "json", fs::absolute(data, ec).lexically_normal().string()))
      return std::nullopt;
    return out;
  }
  if (const auto shards = shard_list(data)) {
    if (!add_shard_versions(out, *shards, o.remote, seen)) return std::nullopt;
    return out;
  }
  const std::string path = fs::absolute(data, ec).lexically_normal().string();
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return std::nullopt;
  if (!fs::is_directory(status))
    return add_version(out, "list", path) ? std::optional(out) : std::nullopt;
  if (!is_idx_folder(path)) return add_tree_versions(out, path) ? std::optional(out) : std::nullopt;
  if (!add_version(out, "idx", path)) return std::nullopt;
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (entry.is_regular_file(ec) && !add_version(out, "file", entry.path().string()))
      return std::nullopt;
  return ec ? std::nullopt : std::optional(out);
}

bool write_index_file(int fd, const DatasetIndex& index, const std::string& identity) {
  IndexFileHeader h;
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.header_size = sizeof h;
  h.kind = static_cast<std::uint32_t>(index.kind);
  h.flags = (index.has_boxes ? kHasBoxes : 0) | (index.has_masks ? kHasMasks : 0) |
            (index.has_bytes ? kHasBytes : 0);
  h.size = index.size;
  h.height = index.height;
  h.width = index.width;
  h.channels = index.channels;
  h.box_total =
      index.kind == DatasetKind::kShards ? index.shard_records.size() : index.boxes.size();
  h.region_offset = kRegionOffset;
  h.region_size = index.arena_bytes();
  const std::string meta = meta_text(index);
  h.meta_offset = h.region_offset + h.region_size;
  h.meta_size = meta.size();
  h.identity_offset = h.meta_offset + h.meta_size;
  h.identity_size = identity.size();
  h.file_size = h.identity_offset + h.identity_size;
  std::string head(kRegionOffset, '\0');
  std::memcpy(head.data(), &h, sizeof h);
  return write_fully(fd, head.data(), head.size()) && write_region(fd, index) &&
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
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.format != kFormat ||
      h.header_size != sizeof h || h.file_size != size || h.region_offset != kRegionOffset ||
      !within(h.region_offset, h.region_size, size) || !within(h.meta_offset, h.meta_size, size) ||
      !within(h.identity_offset, h.identity_size, size) || h.size < 1 ||
      (h.flags & ~(kHasBoxes | kHasMasks | kHasBytes)) != 0)
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

std::shared_ptr<const MappedIndex> index_dataset(const std::string& data,
                                                 const IndexOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto built_here = [&](std::unique_ptr<MappedIndex> m) {
    m->built_s_ = seconds_since(start) - m->waited_s_;
    return std::shared_ptr<const MappedIndex>(std::move(m));
  };
  std::map<std::string, RemoteObject> seen;  // (the HEADs asked for the key serve indexing too)
  const std::optional<std::string> identity =
      options.caches.root.empty() ? std::nullopt : dataset_identity(data, options, &seen);
  IndexOptions build = options;
  build.remote_seen = &seen;
  const auto indexed = [&] {
    const Ticker ticker(options, "indexing " + redact_url(data));
    return build_index(data, build);
  };
  const auto privately = [&] { return built_here(private_index(indexed(), options.max_classes)); };
  const std::string folder = identity ? index_folder(options.caches.root) : "";
  if (folder.empty()) return privately();

  const std::string name = index_file_name(*identity);
  const std::string path = folder + "/" + name;
  using Origin = MappedIndex::Origin;
  if (auto found = open_shared(path, *identity, options, Origin::kFound)) return found;
  // Another loader of this machine may be writing it: wait for its lock, then look again.
  const std::string lock_path = folder + "/" + name + ".lock";
  // (Read-only: flock needs no more, and another member of a shared cache's group may open it.)
  UniqueFd lock(try_raise_fd(::open(lock_path.c_str(), O_RDONLY | O_CREAT | kCacheOpenFlags,
                                    cache_file_mode(cache_shared()))));
  struct stat st {};
  if (lock.get() < 0 || ::fstat(lock.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      !trusted_cache_file(lock_path, st))
    return privately();
  const auto wait_start = std::chrono::steady_clock::now();
  int locked = ::flock(lock.get(), LOCK_EX | LOCK_NB);
  if (locked != 0 && errno == EWOULDBLOCK) {
    const Ticker ticker(
        options, "waiting for another loader indexing " + redact_url(data) + " into " + path);
    while ((locked = ::flock(lock.get(), LOCK_EX)) != 0 && errno == EINTR) {
    }
  }
  if (locked != 0) return privately();  // (no locks here, an NFS home without lockd)
  // Released by name, not only by closing: a process forked meanwhile (without exec) holds the
  // same open file, and would hold the lock as long as it lives.
  struct Unlock {
    int fd;
    ~Unlock() { ::flock(fd, LOCK_UN); }
  } unlock{lock.get()};
  const double waited = seconds_since(wait_start);
  if (auto found = open_shared(path, *identity, options, Origin::kFound)) {
    found->waited_s_ = waited;
    return found;
  }
  sweep(folder, name);
  DatasetIndex index = indexed();
  if (!write_cache_file(path, [&](int fd) { return write_index_file(fd, index, *identity); })) {
    auto m = private_index(std::move(index), options.max_classes);  // (a full disk: only slower)
    m->waited_s_ = waited;
    return built_here(std::move(m));
  }
  forget(index);
  if (auto built = open_shared(path, *identity, options, Origin::kBuilt)) {
    built->waited_s_ = waited;
    return built_here(std::move(built));
  }
  throw Error(path + ": the dataset index just written does not read back");
}

}  // namespace stoke::detail
