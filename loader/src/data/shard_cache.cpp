#include "data/shard_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/text.hpp"
#include "common/unique_fd.hpp"
#include "data/file_reader.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;

namespace {

// Downloads go through a buffer of this many bytes: one ranged GET each, so a server that
// drops the connection costs at most one piece, retried.
constexpr std::size_t kPieceBytes = std::size_t{8} << 20;

// Removes what a download of `copy` that died (a killed process) left behind. REQUIRES: the
// caller holds copy's lock, so no download of it is running.
void remove_partials(const std::string& copy) {
  const fs::path p(copy);
  const std::string prefix = p.filename().string() + ".part.";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(p.parent_path(), ec)) {
    if (e.path().filename().string().starts_with(prefix)) fs::remove(e.path(), ec);
  }
}

// A 64-bit FNV-1a hash of `text`, as 16 hex digits: the cache's file names.
std::string cache_key(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char name[17];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(h));
  return name;
}

// The lock file of the copy at `copy` (<key>.tar -> <key>.lock).
std::string lock_path(const std::string& copy) {
  return copy.substr(0, copy.size() - 4) + ".lock";
}

}  // namespace

std::string cache_root(const std::string& configured) {
  const auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v == nullptr ? "" : v);
  };
  std::string root = configured;
  if (root.empty()) root = env("STOKE_CACHE_DIR");
  if (root.empty() && !env("XDG_CACHE_HOME").empty()) root = env("XDG_CACHE_HOME") + "/stoke";
  if (root.empty() && !env("HOME").empty()) root = env("HOME") + "/.cache/stoke";
  if (root.empty()) return root;
  // Absolute, so that workers started later (after a chdir) name the same copies.
  std::error_code ec;
  const fs::path absolute = fs::absolute(root, ec);
  return ec ? root : absolute.lexically_normal().string();
}

std::string version_key(const std::string& url, std::uint64_t size, const std::string& etag) {
  return cache_key(url + "\n" + std::to_string(size) + "\n" + etag);
}

std::string shard_copy_path(const std::string& root, const std::string& url, std::uint64_t size,
                            const std::string& etag) {
  return root + "/shards/" + version_key(url, size, etag) + ".tar";
}

ShardStore::ShardStore(const std::string& root, std::uint64_t limit)
    : folder_(root + "/shards"), limit_(limit) {
  std::error_code ec;
  fs::create_directories(folder_, ec);
  if (ec || !fs::is_directory(folder_))
    throw ConfigError("cannot use the shard cache folder " + folder_ + ": " +
                      (ec ? ec.message() : "not a folder") +
                      " (set cache_dir to a writable folder, or cache_limit to 0 to read shards "
                      "from the server without a local copy)");
}

bool ShardStore::use(const std::string& path) const {
  // Touching the time also answers whether the copy exists, in one call. A copy this process
  // may read but not touch (another user's, a read-only folder) is there all the same.
  if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  return ::access(path.c_str(), R_OK) == 0;
}

std::uint64_t ShardStore::fetch(const std::string& url, std::uint64_t size, const std::string& path,
                                const RemotePolicy& policy) const {
  if (use(path)) return 0;
  const std::string lock_file = lock_path(path);
  UniqueFd lock(::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.get() < 0)
    throw ShardCacheFolderError("cannot open " + lock_file + ": " + std::strerror(errno));
  // Another loader downloading this shard holds the lock: wait for it (then the copy is there),
  // but not past the deadline, nor past a shutdown.
  const auto start = std::chrono::steady_clock::now();
  bool locked = false;
  for (;;) {
    if (::flock(lock.get(), LOCK_EX | LOCK_NB) == 0) {
      locked = true;
      break;
    }
    if (errno != EWOULDBLOCK && errno != EINTR)
      throw ShardCacheFolderError("cannot lock " + lock_file + ": " + std::strerror(errno));
    if (policy.cancel != nullptr && policy.cancel->load())
      throw Error(redact_url(url) + ": cancelled (the loader is shutting down)");
    if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(policy.deadline_s))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (use(path)) return 0;  // another loader fetched it while this one waited
  if (locked) remove_partials(path);
  std::string tmp = path + ".part.XXXXXX";
  const int raw = ::mkstemp(tmp.data());
  if (raw < 0) throw ShardCacheFolderError("cannot create " + tmp + ": " + std::strerror(errno));
  UniqueFd out(raw);
  std::vector<std::uint8_t> piece(
      std::min<std::uint64_t>(kPieceBytes, std::max<std::uint64_t>(size, 1)));
  std::uint64_t done = 0;
  try {
    while (done < size) {
      const auto want =
          static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), size - done));
      const std::size_t got = remote_read(url, done, piece.data(), want, policy);
      if (!write_fully(out.get(), piece.data(), got))
        throw ShardCacheFolderError("cannot write " + tmp + ": " + std::strerror(errno));
      done += got;
      if (got < want) break;  // the object ends here now
    }
    // On disk before its name is: a copy under its name is trusted as whole from then on.
    if (::fdatasync(out.get()) != 0 || ::fchmod(out.get(), 0644) != 0 ||
        ::rename(tmp.c_str(), path.c_str()) != 0)
      throw ShardCacheFolderError("cannot move " + tmp + " into place: " + std::strerror(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  return done;
}

std::vector<ShardStore::Copy> ShardStore::copies() const {
  std::vector<Copy> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder_, ec)) {
    if (!e.path().filename().string().ends_with(".tar")) continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0) continue;  // evicted by another loader just now
    out.push_back({e.path().string(), static_cast<std::uint64_t>(st.st_size),
                   std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec});
  }
  return out;
}

bool ShardStore::make_room(std::uint64_t incoming, const std::set<std::string>& keep,
                           std::vector<std::string>& evicted) const {
  std::vector<Copy> found = copies();
  std::uint64_t total = 0;
  for (const Copy& c : found) total += c.bytes;
  if (total + incoming <= limit_) return true;
  std::sort(found.begin(), found.end(),
            [](const Copy& a, const Copy& b) { return a.used_ns < b.used_ns; });
  for (const Copy& c : found) {
    if (total + incoming <= limit_) break;
    if (keep.count(c.path) != 0) continue;
    if (::unlink(c.path.c_str()) == 0) {
      // Its lock goes too: a loader that still opens the old one may download the shard beside
      // one that locks a new one, which costs a download, never a half copy (each writes its
      // own file and renames it whole).
      ::unlink(lock_path(c.path).c_str());
      evicted.push_back(c.path);
      total -= c.bytes;
    } else if (errno == ENOENT) {
      total -= c.bytes;  // another loader evicted it just now
    }
  }
  return total + incoming <= limit_;
}

std::uint64_t ShardStore::used() const {
  std::uint64_t total = 0;
  for (const Copy& c : copies()) total += c.bytes;
  return total;
}

}  // namespace stoke::detail
