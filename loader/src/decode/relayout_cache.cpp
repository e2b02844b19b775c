#include "decode/relayout_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>
#include <string_view>
#include <utility>

#include "common/fd.hpp"
#include "data/cache_folder.hpp"
#include "data/file_reader.hpp"
#include "decode/jpeg_relayout.hpp"

namespace stoke::detail {

namespace {

constexpr const char* kLockName = "stoke-relayout.lock";
constexpr const char* kCountName = "stoke-relayout-bytes";
constexpr const char* kCopySuffix = ".jpg";
// How long a writer waits for the folder's lock before it gives its copy up (a holder keeps it
// for one listing of the folder at most; one that keeps it longer is a stopped process).
constexpr auto kLockWait = std::chrono::seconds(2);

// The frame of the JPEG in `d`: found by a walk of its segments up to the first frame header,
// bounded by the bytes.
struct Frame {
  bool found = false;
  bool progressive = false;  // SOF2, SOF6, SOF10, SOF14
  std::uint64_t pixels = 0;
};

Frame jpeg_frame(const std::vector<std::uint8_t>& d) {
  Frame f;
  if (d.size() < 4 || d[0] != 0xFF || d[1] != 0xD8) return f;
  std::size_t i = 2;
  while (i + 4 <= d.size()) {
    if (d[i] != 0xFF) return f;
    const std::uint8_t code = d[i + 1];
    if (code == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC) {
      if (i + 9 > d.size()) return f;
      f.found = true;
      f.progressive = code == 0xC2 || code == 0xC6 || code == 0xCA || code == 0xCE;
      f.pixels = std::uint64_t{static_cast<std::uint32_t>((d[i + 5] << 8) | d[i + 6])} *
                 static_cast<std::uint32_t>((d[i + 7] << 8) | d[i + 8]);
      return f;
    }
    if (code == 0xDA || code == 0xD9) return f;  // a scan or the end before any frame
    i += 2 + ((std::size_t{d[i + 2]} << 8) | d[i + 3]);
  }
  return f;
}

struct Listed {
  std::string path;
  std::uint64_t bytes = 0;
  std::int64_t used_ns = 0;
};

// The copies in `folder`: regular files named <32 hex digits>.jpg of a trusted owner (links not
// followed), oldest use first (ties by name). Temporary files of writers that died (untouched
// for an hour) are removed on the way.
std::vector<Listed> list_copies(const std::string& folder) {
  std::vector<Listed> out;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return out;
  const std::string_view suffix = kCopySuffix;
  const auto now = std::chrono::system_clock::now();
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    const std::string path = folder + "/" + name;
    if (name.size() > 32 + suffix.size() && is_key_text(std::string_view(name).substr(0, 32)) &&
        std::string_view(name).substr(32, suffix.size() + 5) == std::string(suffix) + ".tmp.") {
      if (stale_cache_file(path, std::chrono::hours(1), now)) ::unlink(path.c_str());
      continue;
    }
    if (name.size() != 32 + suffix.size() || !is_key_text(std::string_view(name).substr(0, 32)) ||
        !std::string_view(name).ends_with(suffix))
      continue;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !trusted_cache_file(path, st))
      continue;
    out.push_back({path, static_cast<std::uint64_t>(st.st_size),
                   std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec});
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end(), [](const Listed& a, const Listed& b) {
    return a.used_ns != b.used_ns ? a.used_ns < b.used_ns : a.path < b.path;
  });
  return out;
}

// What names a version of a local file: its path, where it lives and what it is now (a change
// of contents moves the change time even when size and modification time are put back); "" when
// it is not a regular file that can be stat'ed.
std::string version_of(const std::string& source) {
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  return source + "\n" + std::to_string(st.st_dev) + "\n" + std::to_string(st.st_ino) + "\n" +
         std::to_string(st.st_size) + "\n" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + "\n" + std::to_string(st.st_ctim.tv_sec) + "." +
         std::to_string(st.st_ctim.tv_nsec);
}

}  // namespace

std::string relayout_cache_folder(const std::string& root) {
  return root + "/relayout";
}

RelayoutCache::RelayoutCache(std::string folder, std::uint64_t limit, stoke::Relayout which,
                             std::uint64_t max_pixels)
    : folder_(std::move(folder)), limit_(limit), which_(which), max_pixels_(max_pixels) {}

std::string RelayoutCache::copy_path(const std::string& source, std::string* version) const {
  const std::string id = version_of(source);
  if (id.empty()) return {};
  if (version != nullptr) *version = id;
  // Two FNV-1a hashes of the version, each from its own first byte: 128 bits of name.
  return folder_ + "/" + cache_key("a" + id) + cache_key("b" + id) + kCopySuffix;
}

bool RelayoutCache::read(const std::string& source, std::vector<std::uint8_t>& into) {
  pending_.clear();
  pending_source_ = source;
  if (which_ == stoke::Relayout::kOff) return false;
  pending_ = copy_path(source, &pending_version_);
  if (pending_.empty()) return false;
  UniqueFd fd(::open(pending_.c_str(), O_RDONLY | kCacheOpenFlags));
  if (fd.get() < 0) return false;  // none yet (or a link, refused)
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      !trusted_cache_file(pending_, st) || st.st_size < 4)
    return false;  // not a copy: offer() renames a copy over it
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (read_open_file(fd.get(), size, {0, size}, into) != BadInput::kNone) return false;
  if (into.size() != size || into[0] != 0xFF || into[1] != 0xD8 || into[size - 2] != 0xFF ||
      into[size - 1] != 0xD9) {
    ::unlink(pending_.c_str());  // a copy cut short (a crash before its bytes reached the disk)
    return false;
  }
  ::futimens(fd.get(), nullptr);  // its last use (the eviction order); a failure costs nothing
  pending_.clear();
  ++hits_;
  return true;
}

bool RelayoutCache::offer(std::vector<std::uint8_t>& bytes) {
  const std::string path = std::exchange(pending_, std::string());
  if (path.empty() || broken_ || refused_.contains(path)) return false;
  const Frame frame = jpeg_frame(bytes);
  if (!frame.found || (which_ != stoke::Relayout::kAll && !frame.progressive) ||
      frame.pixels > max_pixels_)
    return false;  // (too many pixels: the decode refuses it before any coefficient is read)
  // The bytes must be the version the copy is named after (the file may have changed since).
  if (version_of(pending_source_) != pending_version_) return false;
  Relayout r = relayout_jpeg(bytes.data(), bytes.size());
  if (!r.why.empty()) {
    if (refused_.size() < kMaxRefused) refused_.insert(path);  // not tried again each epoch
    return false;
  }
  bytes.swap(r.bytes);
  if (bytes.size() > limit_) return true;  // decoded from the copy, which is not kept
  if (!write_cache_file(path,
                        [&](int fd) { return write_fully(fd, bytes.data(), bytes.size()); })) {
    broken_ = true;  // a folder that cannot be written: no copies, and no more re-layouts
    return true;
  }
  if (count_in(path, bytes.size())) ++stored_;
  return true;
}

bool RelayoutCache::count_in(const std::string& path, std::uint64_t bytes) {
  const std::string lock_path = folder_ + "/" + kLockName;
  const CacheFolderLock lock(
      lock_path, cache_file_mode(cache_shared()),
      [&lock_path](const struct stat& st) { return trusted_cache_file(lock_path, st); }, kLockWait,
      std::chrono::microseconds(100));  // (held for ~50 us)
  if (!lock.held()) return false;  // (the copy stays; the next listing counts it)
  const std::string count_path = folder_ + "/" + kCountName;
  std::optional<std::uint64_t> counted;
  if (const std::optional<std::string> text = read_cache_file(count_path, 64)) {
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
    if (ec == std::errc() && end == text->data() + text->size() && n <= limit_) counted = n;
  }
  std::uint64_t total = counted ? *counted + bytes : 0;
  if (!counted || total > limit_) {
    // Listed (the new copy among them): the count made true, then the least recently used
    // copies but the new one removed until the rest are under 90% of the limit.
    const std::vector<Listed> copies = list_copies(folder_);
    total = 0;
    for (const Listed& c : copies) total += c.bytes;
    if (total > limit_) {
      const std::uint64_t target = limit_ - limit_ / 10;
      for (const Listed& c : copies) {
        if (total <= target) break;
        if (c.path == path || ::unlink(c.path.c_str()) != 0) continue;
        total -= c.bytes;
        ++evicted_;
      }
    }
  }
  // A count that cannot be written is removed, so that the next writer lists the folder.
  if (!write_cache_file(count_path, std::to_string(total))) ::unlink(count_path.c_str());
  return true;
}

std::uint64_t RelayoutCache::folder_bytes(const std::string& folder) {
  std::uint64_t total = 0;
  for (const Listed& c : list_copies(folder)) total += c.bytes;
  return total;
}

}  // namespace stoke::detail
