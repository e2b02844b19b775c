#include "data/shard_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/fd.hpp"
#include "common/text.hpp"
#include "data/file_reader.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;

namespace {

// Downloads go through a buffer of this many bytes: one ranged GET each, so a server that
// drops the connection costs at most one piece, retried.
constexpr std::size_t kPieceBytes = std::size_t{8} << 20;

constexpr const char* kLedgerName = "stoke-copies";
constexpr const char* kLedgerHeader = "stoke shard copies 1";
constexpr const char* kLockName = "stoke-folder.lock";
// The ledger is read whole: a folder holds far fewer copies than this.
constexpr std::uint64_t kMaxLedgerBytes = std::uint64_t{64} << 20;
// The folder's lock is held for milliseconds: a process that holds it this long is stopped.
constexpr int kFolderLockWaitS = 10;
// A live download's partial file untouched this long (at least) belongs to a stopped process.
constexpr double kStalePartialS = 3600;

std::string errno_text() {
  return std::strerror(errno);
}

bool is_key(std::string_view s) {
  return s.size() == 16 && is_key_text(s);
}

// "<key>.tar": a copy's name.
bool is_copy_name(std::string_view name) {
  return name.size() == 20 && name.ends_with(".tar") && is_key(name.substr(0, 16));
}

// "<key>.tar.part.<size>.<random>" (or an earlier version's "<key>.tar.part.<random>"): a
// partial download's name; `declared` gets <size> (0 when the name has none).
bool is_partial_name(std::string_view name, std::uint64_t& declared) {
  constexpr std::string_view kPart = ".tar.part.";
  if (name.size() <= 16 + kPart.size() || !is_key(name.substr(0, 16)) ||
      name.substr(16, kPart.size()) != kPart)
    return false;
  const std::string_view rest = name.substr(16 + kPart.size());
  declared = 0;
  const auto dot = rest.find('.');
  if (dot != std::string_view::npos)
    std::from_chars(rest.data(), rest.data() + dot, declared);  // leaves 0 when not a number
  return true;
}

std::int64_t mtime_ns(const struct stat& st) {
  return std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

double age_s(const struct stat& st) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::int64_t now_ns = std::int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  return static_cast<double>(now_ns - mtime_ns(st)) / 1e9;
}

// Whether a file in a cache folder of group `group` is one stoke may trust: this user's, or
// (when the cache is shared) one of the folder's group.
bool trusted_owner(const struct stat& st, bool shared, gid_t group) {
  return st.st_uid == ::geteuid() || (shared && st.st_gid == group);
}

// Whether a download holds the partial file open at `fd` (its flock).
bool download_holds(int fd) {
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);
    return false;
  }
  return errno == EWOULDBLOCK;
}

}  // namespace

BadInput read_shard_copy(const std::string& path, const ByteRange& range,
                         std::vector<std::uint8_t>& into) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | kCacheOpenFlags));
  if (fd.get() < 0) return errno == ENOENT ? BadInput::kMissing : BadInput::kUnreadable;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      !trusted_cache_file(path, st))
    return BadInput::kUnreadable;
  return read_open_file(fd.get(), static_cast<std::uint64_t>(st.st_size), range, into);
}

std::string shard_store_folder(const std::string& root) {
  return root + "/shards";
}

namespace {

// A copy's path in the shard store's folder: <key>.tar (the header's layout).
std::string copy_in(const std::string& folder, const std::string& url, std::uint64_t size,
                    const std::string& etag) {
  return folder + "/" + version_key(url, size, etag) + ".tar";
}

}  // namespace

std::string shard_copy_path(const std::string& root, const std::string& url, std::uint64_t size,
                            const std::string& etag) {
  return copy_in(shard_store_folder(root), url, size, etag);
}

std::string ShardStore::copy_path(const std::string& url, std::uint64_t size,
                                  const std::string& etag) const {
  return copy_in(folder_, url, size, etag);
}

// The folder's lock, held for as long as this lives. A symbolic link (or anything but a regular
// file of a trusted owner) at the lock's name is a ShardCacheFolderError, never followed.
class ShardStore::FolderLock {
 public:
  // Waits at most `wait_s` seconds (at most kFolderLockWaitS) for another holder. Held for
  // milliseconds by a running process: one that holds it for long is stopped, and is not waited
  // for (the shard is read from the server instead).
  FolderLock(const ShardStore& store, double wait_s)
      : lock_(
            store.folder_ + "/" + kLockName, cache_file_mode(store.shared_),
            [&store](const struct stat& st) { return store.trusted(st); },
            std::chrono::duration<double>(std::min<double>(wait_s, kFolderLockWaitS)),
            std::chrono::milliseconds(1)) {
    if (!lock_.held()) throw ShardCacheFolderError(lock_.why());
  }

 private:
  CacheFolderLock lock_;
};

ShardStore::Reservation::Reservation(Reservation&& o) noexcept
    : copy_(std::move(o.copy_)), partial_(std::move(o.partial_)), size_(o.size_), fd_(o.fd_) {
  o.fd_ = -1;
}

ShardStore::Reservation& ShardStore::Reservation::operator=(Reservation&& o) noexcept {
  if (this != &o) {
    drop();
    copy_ = std::move(o.copy_);
    partial_ = std::move(o.partial_);
    size_ = o.size_;
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

ShardStore::Reservation::~Reservation() {
  drop();
}

void ShardStore::Reservation::drop() {
  if (fd_ < 0) return;
  ::unlink(partial_.c_str());  // while still locked: no sweeper takes it for a dead one's
  ::close(fd_);
  fd_ = -1;
}

ShardStore::ShardStore(const std::string& root, std::uint64_t limit)
    : folder_(shard_store_folder(root)), limit_(limit), shared_(cache_shared()) {
  errno = 0;
  if (!prepare_cache_folder(root, false) || !prepare_cache_folder(folder_, true))
    throw ConfigError("cannot use the shard cache folder " + folder_ + ": " + errno_text() + " (" +
                      kCacheFolderAdvice + ")");
  struct stat st {};
  if (::stat(folder_.c_str(), &st) == 0) group_ = st.st_gid;
}

bool ShardStore::trusted(const struct stat& st) const {
  return trusted_owner(st, shared_, group_);
}

ShardStore::Ledger ShardStore::read_ledger() const {
  Ledger ledger;
  const std::optional<std::string> text =
      read_cache_file(folder_ + "/" + kLedgerName, kMaxLedgerBytes);
  if (!text) return ledger;
  std::string_view rest(*text);
  const auto line = [&rest]() {
    const auto end = rest.find('\n');
    const std::string_view l = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    return l;
  };
  if (line() != kLedgerHeader) return ledger;  // another version's: trusted for nothing
  while (!rest.empty()) {
    const std::string_view l = line();
    // "<key> <bytes> <inode>"
    if (l.size() < 20 || !is_key(l.substr(0, 16)) || l[16] != ' ') continue;
    Copy c;
    const char* end = l.data() + l.size();
    auto [p, ec] = std::from_chars(l.data() + 17, end, c.bytes);
    if (ec != std::errc() || p == end || *p != ' ') continue;
    auto [q, ec2] = std::from_chars(p + 1, end, c.inode);
    if (ec2 != std::errc() || q != end) continue;
    ledger[std::string(l.substr(0, 16))] = c;
  }
  return ledger;
}

void ShardStore::write_ledger(const Ledger& ledger) const {
  std::string text = std::string(kLedgerHeader) + "\n";
  for (const auto& [key, c] : ledger)
    text += key + " " + std::to_string(c.bytes) + " " + std::to_string(c.inode) + "\n";
  if (!write_cache_file(folder_ + "/" + kLedgerName, text))
    throw ShardCacheFolderError("cannot write " + folder_ + "/" + kLedgerName + ": " +
                                errno_text());
}

bool ShardStore::is_recorded(const struct stat& st, const Copy& c) const {
  return S_ISREG(st.st_mode) && st.st_nlink == 1 && trusted(st) &&
         static_cast<std::uint64_t>(st.st_size) == c.bytes &&
         static_cast<std::uint64_t>(st.st_ino) == c.inode;
}

int ShardStore::open_recorded(const std::string& name, const Ledger& ledger) const {
  const auto it = ledger.find(name.substr(0, 16));
  if (!is_copy_name(name) || it == ledger.end()) return -1;
  const int fd = ::open((folder_ + "/" + name).c_str(), O_RDONLY | kCacheOpenFlags);
  struct stat st {};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && is_recorded(st, it->second)) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

bool ShardStore::use(const std::string& path) const {
  const fs::path p(path);
  if (p.parent_path() != fs::path(folder_)) return false;
  const int fd = open_recorded(p.filename().string(), read_ledger());
  if (fd < 0) return false;
  // Its last use, for the LRU order (a copy another user of a shared folder wrote may refuse).
  ::futimens(fd, nullptr);
  ::close(fd);
  return true;
}

bool ShardStore::foreign(const std::string& path) const {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  const int fd = open_recorded(fs::path(path).filename().string(), read_ledger());
  if (fd >= 0) ::close(fd);
  return fd < 0;
}

ShardStore::Scan ShardStore::scan(double stale_s) const {
  Scan s;
  s.ledger = read_ledger();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder_, ec)) {
    const std::string name = e.path().filename().string();
    const std::string path = e.path().string();
    std::uint64_t declared = 0;
    if (name.size() == 21 && name.ends_with(".lock") && is_key(name.substr(0, 16))) {
      ::unlink(path.c_str());  // an earlier version's lock of one copy: nothing uses it now
      continue;
    }
    if (!is_partial_name(name, declared)) continue;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | kCacheOpenFlags));
    struct stat st {};
    if (fd.get() < 0 && errno == ELOOP) {
      ::unlink(path.c_str());  // a symbolic link under a partial's name: stoke made none
      continue;
    }
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !trusted(st))
      continue;
    // A partial no download holds is a dead process's; one untouched for long a stopped one's.
    if (!download_holds(fd.get()) || age_s(st) > std::max(kStalePartialS, 2 * stale_s)) {
      ::unlink(path.c_str());
      continue;
    }
    s.partial_bytes += std::max(declared, static_cast<std::uint64_t>(st.st_size));
    if (age_s(st) <= stale_s) s.fresh_partials.insert(name.substr(0, 16));
  }
  for (auto it = s.ledger.begin(); it != s.ledger.end();) {
    const std::string name = it->first + ".tar";
    struct stat st {};
    if (::lstat((folder_ + "/" + name).c_str(), &st) != 0 || !is_recorded(st, it->second)) {
      it = s.ledger.erase(it);  // gone, or replaced by a file stoke did not write
      s.changed = true;
      continue;
    }
    s.copies.push_back(
        {folder_ + "/" + name, it->first, static_cast<std::uint64_t>(st.st_size), mtime_ns(st)});
    ++it;
  }
  return s;
}

bool ShardStore::evict(Scan& s, std::uint64_t incoming, const std::set<std::string>& keep,
                       std::vector<std::string>& evicted) const {
  std::uint64_t total = s.partial_bytes;
  for (const Found& c : s.copies) total += c.bytes;
  const auto fits = [&] { return total <= limit_ && incoming <= limit_ - total; };
  if (fits()) return true;
  std::sort(s.copies.begin(), s.copies.end(),
            [](const Found& a, const Found& b) { return a.used_ns < b.used_ns; });
  for (auto it = s.copies.begin(); it != s.copies.end() && !fits();) {
    if (keep.count(it->path) != 0) {
      ++it;
      continue;
    }
    if (::unlink(it->path.c_str()) == 0) evicted.push_back(it->path);
    s.ledger.erase(it->key);
    s.changed = true;
    total -= it->bytes;
    it = s.copies.erase(it);
  }
  return fits();
}

ShardStore::Room ShardStore::reserve(const std::string& path, std::uint64_t size,
                                     const std::set<std::string>& keep, bool past_limit,
                                     double stale_s, std::vector<std::string>& evicted,
                                     std::optional<Reservation>& reserved) const {
  const fs::path p(path);
  const std::string name = p.filename().string();
  if (p.parent_path() != fs::path(folder_) || !is_copy_name(name))
    throw ShardCacheFolderError(path + ": not a copy's name in " + folder_);
  const std::string key = name.substr(0, 16);
  const FolderLock lock(*this, stale_s);
  Scan s = scan(stale_s);
  const auto finish = [&](Room room) {
    if (s.changed) write_ledger(s.ledger);
    return room;
  };
  if (std::any_of(s.copies.begin(), s.copies.end(), [&](const Found& c) { return c.key == key; }))
    return finish(Room::kPresent);
  if (s.fresh_partials.count(key) != 0) return finish(Room::kElsewhere);
  const bool fits = evict(s, size, keep, evicted);
  if (!fits && !past_limit) return finish(s.partial_bytes > 0 ? Room::kWait : Room::kFull);
  const std::string partial = path + ".part." + std::to_string(size) + "." + cache_random_suffix();
  const int fd = ::open(partial.c_str(), O_RDWR | O_CREAT | O_EXCL | kCacheOpenFlags, 0600);
  if (fd < 0) throw ShardCacheFolderError("cannot create " + partial + ": " + errno_text());
  Reservation r(path, partial, size, fd);
  // Locked before the folder's lock is let go: no sweeper ever sees it unheld.
  if (::fchmod(fd, cache_file_mode(shared_)) != 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0)
    throw ShardCacheFolderError("cannot lock " + partial + ": " + errno_text());
  reserved.emplace(std::move(r));
  return finish(Room::kReserved);
}

bool ShardStore::wait_for_other(const std::string& path, const RemotePolicy& policy) const {
  const std::string prefix = fs::path(path).filename().string() + ".part.";
  for (;;) {
    if (use(path)) return true;
    bool running = false;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder_, ec)) {
      if (!e.path().filename().string().starts_with(prefix)) continue;
      UniqueFd fd(::open(e.path().c_str(), O_RDONLY | kCacheOpenFlags));
      struct stat st {};
      if (fd.get() >= 0 && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && trusted(st) &&
          download_holds(fd.get()) && age_s(st) <= policy.deadline_s)
        running = true;
    }
    if (!running) return use(path);
    if (policy.cancel != nullptr && policy.cancel->load())
      throw Error(path + ": cancelled (the loader is shutting down)");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::uint64_t ShardStore::fetch(const std::string& url, Reservation reserved,
                                const RemotePolicy& policy) const {
  const std::uint64_t size = reserved.size_;
  std::vector<std::uint8_t> piece(
      std::min<std::uint64_t>(kPieceBytes, std::max<std::uint64_t>(size, 1)));
  std::uint64_t done = 0;
  while (done < size) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), size - done));
    const std::size_t got = remote_read(url, done, piece.data(), want, policy);
    if (!write_fully(reserved.fd_, piece.data(), got))
      throw ShardCacheFolderError("cannot write " + reserved.partial_ + ": " + errno_text());
    done += got;
    if (got < want) break;  // the object ends here now
  }
  // On disk before its name is: a copy under its name is trusted as whole from then on.
  struct stat st {};
  if (::fdatasync(reserved.fd_) != 0 || ::fstat(reserved.fd_, &st) != 0)
    throw ShardCacheFolderError("cannot write " + reserved.partial_ + ": " + errno_text());
  const FolderLock lock(*this, policy.deadline_s);
  // Recorded first (a rename keeps the inode): a copy is never in place unrecorded, so never
  // left uncounted; an entry whose rename fails is dropped by the next scan.
  Ledger ledger = read_ledger();
  ledger[fs::path(reserved.copy_).filename().string().substr(0, 16)] = {
      done, static_cast<std::uint64_t>(st.st_ino)};
  write_ledger(ledger);
  // (A rename over a symbolic link planted at the copy's name replaces the link itself.)
  if (::rename(reserved.partial_.c_str(), reserved.copy_.c_str()) != 0)
    throw ShardCacheFolderError("cannot move " + reserved.partial_ +
                                " into place: " + errno_text());
  ::close(reserved.fd_);
  reserved.fd_ = -1;
  return done;
}

std::uint64_t ShardStore::fetch(const std::string& url, std::uint64_t size, const std::string& path,
                                const RemotePolicy& policy) const {
  const auto start = std::chrono::steady_clock::now();
  bool past_limit = false;
  for (;;) {
    if (policy.cancel != nullptr && policy.cancel->load())
      throw Error(redact_url(url) + ": cancelled (the loader is shutting down)");
    std::optional<Reservation> reserved;
    std::vector<std::string> evicted;
    switch (reserve(path, size, {}, past_limit, policy.deadline_s, evicted, reserved)) {
      case Room::kPresent:
        return 0;
      case Room::kReserved:
        return fetch(url, std::move(*reserved), policy);
      case Room::kElsewhere:
        if (wait_for_other(path, policy)) return 0;
        break;
      case Room::kWait:
        if (std::chrono::steady_clock::now() - start >
            std::chrono::duration<double>(policy.deadline_s))
          throw ShardCacheFolderError("no room in " + folder_ + " (cache_limit " +
                                      std::to_string(limit_) + " bytes) for " + redact_url(url) +
                                      ": other downloads held it past the deadline");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        break;
      case Room::kFull:
        past_limit = true;  // it alone is larger than the limit: fetched past it
        break;
    }
  }
}

bool ShardStore::make_room(std::uint64_t incoming, const std::set<std::string>& keep,
                           std::vector<std::string>& evicted) const {
  const FolderLock lock(*this, kFolderLockWaitS);
  Scan s = scan(RemotePolicy{}.deadline_s);
  const bool fits = evict(s, incoming, keep, evicted);
  if (s.changed) write_ledger(s.ledger);
  return fits;
}

std::uint64_t ShardStore::used() const {
  const FolderLock lock(*this, kFolderLockWaitS);
  Scan s = scan(RemotePolicy{}.deadline_s);
  if (s.changed) write_ledger(s.ledger);
  std::uint64_t total = s.partial_bytes;
  for (const Found& c : s.copies) total += c.bytes;
  return total;
}

}  // namespace stoke::detail
