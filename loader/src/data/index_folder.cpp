#include "data/index_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include "common/fd.hpp"
#include "data/cache_folder.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

constexpr const char* kSuffix = ".stoke-index";
constexpr const char* kPixelsSuffix = ".stoke-pixels";

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

}  // namespace

std::string index_folder(const std::string& root) {
  if (root.empty()) return "";
  const std::string folder = root + "/datasets";
  try {
    return prepare_cache_folder(root, false) && prepare_cache_folder(folder, true) ? folder : "";
  } catch (const ConfigError&) {
    return "";
  }
}

std::string index_file_name(const std::string& identity) {
  return cache_key(identity) + kSuffix;
}

std::string pixels_file_path(const std::string& index_path) {
  return index_path.substr(0, index_path.size() - std::strlen(kSuffix)) + kPixelsSuffix;
}

namespace {

// The file at `path` in the shared folder opened for reading when it is one stoke may read: a
// regular file of a trusted owner with one link, never through a link; another member of a
// shared cache's group's file copied into private memory first. -1 otherwise.
int open_shared_file(const std::string& path) {
  int fd = try_raise_fd(::open(path.c_str(), O_RDONLY | kCacheOpenFlags));
  struct stat st {};
  if (fd < 0) return -1;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      !trusted_cache_file(path, st)) {
    ::close(fd);
    return -1;
  }
  if (st.st_uid != ::geteuid()) fd = private_copy(fd, static_cast<std::uint64_t>(st.st_size));
  return fd;
}

}  // namespace

std::unique_ptr<MappedIndex> open_shared_index(const std::string& path, const std::string& identity,
                                               const IndexOptions& options,
                                               MappedIndex::Origin origin) {
  const int fd = open_shared_file(path);
  if (fd < 0) return nullptr;
  std::unique_ptr<MappedIndex> m =
      map_index_file(fd, identity, options.max_classes, static_cast<int>(origin), path);
  if (m && (!empty_files_still_empty(m->info()) || !lazy_options_hold(*m, options))) return nullptr;
  if (m && m->info().kind == DatasetKind::kRaw) {  // (IDX: its pixels, in the file beside it)
    const std::string pixels = pixels_file_path(path);
    const int pixels_fd = open_shared_file(pixels);
    if (pixels_fd < 0 || !attach_pixels(*m, pixels_fd, identity, options.max_classes))
      return nullptr;
    ::utimensat(AT_FDCWD, pixels.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
  }
  if (m) ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // still in use
  return m;
}

void remove_temporaries(const std::string& folder, const std::string& name) {
  DIR* d = ::opendir(folder.c_str());
  if (d == nullptr) return;
  const std::string prefix = name + ".tmp.";
  while (const dirent* e = ::readdir(d))
    if (std::string_view(e->d_name).starts_with(prefix))
      ::unlink((folder + "/" + e->d_name).c_str());
  ::closedir(d);
}

void expire_index_files(const std::string& folder) {
  const auto now = std::chrono::system_clock::now();
  // Looked at most every 10 minutes by a process: the workers of a dataset-level index's loader
  // index its shards one by one, each through index_dataset, with thousands of files here.
  static std::mutex expiry_mutex;
  static std::map<std::string, std::int64_t> last_expiry;  // by folder: minutes since the epoch
  const std::int64_t minute =
      std::chrono::duration_cast<std::chrono::minutes>(now.time_since_epoch()).count();
  {
    const std::lock_guard lock(expiry_mutex);
    std::int64_t& last = last_expiry[folder];
    if (minute - last < 10) return;
    last = minute;
  }
  // Nor by the machine's processes together: the stamp's time is the last look (each worker of
  // such a loader is a process of its own). One from the future is not believed.
  const std::string stamp = folder + "/.swept";
  struct stat stamp_st {};
  if (::lstat(stamp.c_str(), &stamp_st) == 0 && S_ISREG(stamp_st.st_mode)) {
    const auto swept =
        std::chrono::system_clock::time_point(std::chrono::seconds(stamp_st.st_mtim.tv_sec));
    if (swept <= now && now - swept < std::chrono::minutes(10)) return;
  }
  {
    const UniqueFd touched(::open(stamp.c_str(), O_WRONLY | O_CREAT | kCacheOpenFlags,
                                  cache_file_mode(cache_shared())));
    if (touched) ::futimens(touched.get(), nullptr);
  }
  DIR* d = ::opendir(folder.c_str());
  if (d == nullptr) return;
  const auto keep = std::chrono::hours(24 * kIndexFileKeepDays);
  std::vector<std::string> locks;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view file = e->d_name;
    const std::string path = folder + "/" + std::string(file);
    if (file.ends_with(".lock")) {
      locks.push_back(path);
    } else if (file.find(".tmp.") != std::string_view::npos) {
      if (stale_cache_file(path, kIndexTemporaryKeep, now))
        ::unlink(path.c_str());  // a dead writer's
    } else if ((file.ends_with(kSuffix) || file.ends_with(kPixelsSuffix)) &&
               stale_cache_file(path, keep, now)) {
      ::unlink(path.c_str());
    }
  }
  ::closedir(d);
  // A lock file whose index is gone and that no loader holds, not made in the last hour; removed
  // while this sweep holds it, so a loader that opened it and takes it next finds it gone and
  // takes the file made since (IndexFileLock), as every other loader does.
  for (const std::string& lock : locks) {
    struct stat st {};
    const std::string index = lock.substr(0, lock.size() - 5);
    if (::lstat(index.c_str(), &st) == 0 || !stale_cache_file(lock, kIndexTemporaryKeep, now))
      continue;
    const UniqueFd fd(::open(lock.c_str(), O_RDONLY | kCacheOpenFlags));
    if (fd && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) ::unlink(lock.c_str());
  }
}

IndexFileLock::IndexFileLock(const std::string& folder, const std::string& name)
    : path_(folder + "/" + name + ".lock"), fd_(-1) {
  open_lock_file();
}

IndexFileLock::~IndexFileLock() {
  if (taken_) ::flock(fd_.get(), LOCK_UN);
}

void IndexFileLock::open_lock_file() {
  // (Read-only: flock needs no more, and another member of a shared cache's group may open it.)
  fd_.reset(try_raise_fd(::open(path_.c_str(), O_RDONLY | O_CREAT | kCacheOpenFlags,
                                cache_file_mode(cache_shared()))));
  struct stat st {};
  usable_ = fd_.get() >= 0 && ::fstat(fd_.get(), &st) == 0 && S_ISREG(st.st_mode) &&
            trusted_cache_file(path_, st);
}

bool IndexFileLock::held_file_is_named() const {
  struct stat held {
  }, named{};
  return ::fstat(fd_.get(), &held) == 0 && ::lstat(path_.c_str(), &named) == 0 &&
         held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

IndexFileLock::Attempt IndexFileLock::try_take() {
  for (;;) {
    if (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0)
      return errno == EWOULDBLOCK ? Attempt::kBusy : Attempt::kUnavailable;
    if (held_file_is_named()) {
      taken_ = true;
      return Attempt::kTaken;
    }
    // A sweep removed the lock file this one opened (expire_index_files): another loader may
    // lock the one made since, so this lock excludes no one. Take that one instead.
    ::flock(fd_.get(), LOCK_UN);
    open_lock_file();
    if (!usable_) return Attempt::kUnavailable;
  }
}

bool IndexFileLock::wait() {
  for (;;) {
    int locked = 0;
    while ((locked = ::flock(fd_.get(), LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (locked != 0) return false;
    if (held_file_is_named()) return taken_ = true;
    ::flock(fd_.get(), LOCK_UN);  // (as in try_take)
    open_lock_file();
    if (!usable_) return false;
  }
}
}  // namespace stoke::detail
