#include "plan/shared_order.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>  // renameat2
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

#include "common/fd.hpp"
#include "data/cache_folder.hpp"
#include "data/file_reader.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

constexpr char kMagic[8] = {'S', 'T', 'O', 'K', 'E', 'O', 'R', 'D'};
// An order file no process has written for this long belongs to a run that is over (a restart
// within it finds its epoch's file); a temporary file this old, to a writer that died.
constexpr auto kOrderFileKeep = std::chrono::hours(24);
constexpr auto kTemporaryKeep = std::chrono::hours(1);

OrderFileHeader header_for(std::size_t count) {
  OrderFileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kOrderFileVersion;
  h.header_bytes = sizeof(OrderFileHeader);
  h.count = count;
  return h;
}

// Old order files and dead writers' temporary files: gone.
void sweep(const std::string& folder) {
  DIR* d = ::opendir(folder.c_str());
  if (d == nullptr) return;
  const auto now = std::chrono::system_clock::now();
  while (const dirent* e = ::readdir(d)) {
    const std::string_view file = e->d_name;
    const bool temporary = file.find(".tmp.") != std::string_view::npos;
    if (!temporary && !file.ends_with(kOrderFileSuffix)) continue;
    const std::string path = folder + "/" + std::string(file);
    if (stale_cache_file(path, temporary ? kTemporaryKeep : kOrderFileKeep, now))
      ::unlink(path.c_str());
  }
  ::closedir(d);
}

// Opens the machine's order file at `path` when it is a regular file of this user's, with one
// link: -1 otherwise.
int open_order_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | kCacheOpenFlags));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      st.st_nlink != 1)
    return -1;
  return fd.release();
}

}  // namespace

bool local_file_system(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return false;
  constexpr unsigned long kZfs = 0x2FC12FC1;  // (not in linux/magic.h)
  switch (static_cast<unsigned long>(fs.f_type)) {
    case EXT4_SUPER_MAGIC:  // ext2, ext3 and ext4
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case F2FS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case RAMFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case kZfs:
      return true;
    default:
      return false;
  }
}

std::string order_folder(const std::string& cache_root) {
  if (cache_root.empty()) return "";
  const std::string folder = cache_root + "/orders";
  try {
    if (!prepare_cache_folder(cache_root, false) || !prepare_cache_folder(folder, true)) return "";
  } catch (const ConfigError&) {
    return "";
  }
  if (!local_file_system(folder)) return "";
  sweep(folder);
  return folder;
}

OrderBuffer::OrderBuffer(std::size_t count) : count_(count) {
  map_bytes_ = std::max<std::size_t>(count * sizeof(std::uint32_t), 1);
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw std::bad_alloc();
  }
  entries_ = static_cast<const std::uint32_t*>(map_);
}

OrderBuffer::~OrderBuffer() {
  release();
}

OrderBuffer::OrderBuffer(OrderBuffer&& other) noexcept {
  *this = std::move(other);
}

OrderBuffer& OrderBuffer::operator=(OrderBuffer&& other) noexcept {
  if (this != &other) {
    release();
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
    entries_ = std::exchange(other.entries_, nullptr);
    count_ = std::exchange(other.count_, 0);
    shared_ = std::exchange(other.shared_, false);
  }
  return *this;
}

void OrderBuffer::release() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
  entries_ = nullptr;
  count_ = 0;
  shared_ = false;
}

bool OrderBuffer::adopt(int raw_fd) {
  UniqueFd fd(raw_fd);
  struct stat st {};
  const std::size_t bytes = sizeof(OrderFileHeader) + count_ * sizeof(std::uint32_t);
  if (!fd || ::fstat(fd.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) != bytes)
    return false;
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return false;
  const OrderFileHeader want = header_for(count_);
  const auto* file_entries = reinterpret_cast<const std::uint32_t*>(static_cast<const char*>(map) +
                                                                    sizeof(OrderFileHeader));
  if (std::memcmp(map, &want, sizeof want) != 0 ||
      std::memcmp(file_entries, entries_, count_ * sizeof(std::uint32_t)) != 0) {
    ::munmap(map, bytes);
    return false;
  }
  const std::size_t count = count_;
  release();
  map_ = map;
  map_bytes_ = bytes;
  entries_ = file_entries;
  count_ = count;
  shared_ = true;
  return true;
}

bool OrderBuffer::share(const std::string& folder, const std::string& name) {
  if (folder.empty() || shared_ || map_ == nullptr) return false;
  const std::string path = folder + "/" + name + kOrderFileSuffix;
  // Another rank's file, when it holds the same order.
  if (const int found = open_order_file(path); found >= 0 && adopt(found)) return true;
  // Ours: written whole under a temporary name, then put in place unless one appeared meanwhile.
  const std::string tmp = path + ".tmp." + cache_random_suffix();
  UniqueFd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | kCacheOpenFlags,
                     cache_file_mode(cache_shared())));
  if (!fd) return false;
  const OrderFileHeader header = header_for(count_);
  if (!write_fully(fd.get(), &header, sizeof header) ||
      !write_fully(fd.get(), entries_, count_ * sizeof(std::uint32_t))) {
    ::unlink(tmp.c_str());
    return false;
  }
  // A file there already is used when it is this order (another rank's came first); one that is
  // not (stale, planted, another user's) is removed, and ours goes in its place unless another
  // rank's came meanwhile: of ranks that write at once, one file stands.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0)
      return adopt(fd.release());
    if (errno != EEXIST) break;  // (a file system that cannot refuse to replace: not shared)
    if (const int found = open_order_file(path); found >= 0 && adopt(found)) {
      ::unlink(tmp.c_str());
      return true;
    }
    if (attempt == 0) ::unlink(path.c_str());  // (a symbolic link itself, never its target)
  }
  ::unlink(tmp.c_str());
  return false;
}

void remove_order_file(const std::string& folder, const std::string& name) {
  if (folder.empty()) return;
  const std::string path = folder + "/" + name + kOrderFileSuffix;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid())
    ::unlink(path.c_str());
}

}  // namespace stoke::detail
