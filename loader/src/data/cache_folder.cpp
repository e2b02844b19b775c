#include "data/cache_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "common/fd.hpp"
#include "common/text.hpp"
#include "data/file_reader.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

std::string cache_key(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char name[17];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(h));
  return name;
}

mode_t cache_folder_mode(bool shared) {
  return shared ? 02770 : 0700;
}
mode_t cache_file_mode(bool shared) {
  return shared ? 0640 : 0600;
}

// The trust check for a file by path alone: its folder's group, when shared.
bool trusted_cache_file(const std::string& path, const struct stat& st) {
  if (st.st_uid == ::geteuid()) return true;
  if (!cache_shared()) return false;
  struct stat dir {};
  return ::stat(fs::path(path).parent_path().c_str(), &dir) == 0 && st.st_gid == dir.st_gid;
}

std::string cache_random_suffix() {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<std::uint64_t>(::getpid())
                                                                << 32);
  std::string s(10, 'x');
  for (char& c : s) c = kChars[rng() % (sizeof kChars - 1)];
  return s;
}

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

bool cache_shared() {
  const char* v = std::getenv("STOKE_CACHE_SHARED");
  return v != nullptr && std::string(v) == "1";
}

namespace {

// Makes the missing folders of `folder`, from the top: `folder` with the cache's mode, those
// above it private (or traversable by all, when shared). False (errno set) when it cannot.
bool make_missing_folders(const std::string& folder, bool shared) {
  const fs::path target = fs::path(folder).lexically_normal();
  fs::path prefix;
  for (auto it = target.begin(); it != target.end(); ++it) {
    prefix /= *it;
    const bool last = std::next(it) == target.end();
    const mode_t mode = last ? cache_folder_mode(shared) : (shared ? 0755 : 0700);
    struct stat st {};
    if (::lstat(prefix.c_str(), &st) == 0) continue;  // (the caller checks `folder` itself)
    if (errno != ENOENT) return false;
    if (::mkdir(prefix.c_str(), mode) == 0) {
      ::chmod(prefix.c_str(), mode);  // the umask's bits back, and the setgid bit
    } else if (errno != EEXIST) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool prepare_cache_folder(const std::string& folder, bool own) {
  const bool shared = cache_shared();
  if (!make_missing_folders(folder, shared)) return false;
  // The cache root may be a link the user made (to a bigger disk, say), checked where it leads;
  // stoke's own folders in it are never followed.
  UniqueFd fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (own ? O_NOFOLLOW : 0)));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    const int error = errno;
    struct stat link {};
    const bool is_link = own && ::lstat(folder.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
    const std::string reason = is_link || error == ELOOP
                                   ? "a symbolic link, which stoke does not follow"
                               : error == ENOTDIR ? "not a folder"
                                                  : std::strerror(error);
    throw ConfigError("cannot use the cache folder " + folder + ": " + reason + " (" +
                      kCacheFolderAdvice + ")");
  }
  const mode_t mode = st.st_mode & 07777;
  const bool mine = st.st_uid == ::geteuid();
  if (!shared && !mine)
    throw ConfigError(
        "cannot use the cache folder " + folder + ": it is owned by user " +
        std::to_string(st.st_uid) + ", not by this user (" + std::to_string(::geteuid()) +
        "), so stoke would trust files another user can plant there (" + kCacheFolderAdvice + ")");
  // stoke's own folders are put back to their mode; a folder above them may not be writable by
  // others (by its group, when not shared), but only its group's write bit is taken away.
  const mode_t others = shared ? S_IWOTH : (S_IWGRP | S_IWOTH);
  if (own && mine) {
    if (mode != cache_folder_mode(shared) && ::fchmod(fd.get(), cache_folder_mode(shared)) != 0)
      throw ConfigError("cannot make the cache folder " + folder + " private: " + errno_text() +
                        " (" + kCacheFolderAdvice + ")");
  } else if (mine && !shared && (mode & S_IWOTH) == 0 && (mode & S_IWGRP) != 0) {
    if (::fchmod(fd.get(), mode & ~S_IWGRP) != 0)
      throw ConfigError("cannot make the cache folder " + folder + " writable by this user only: " +
                        errno_text() + " (" + kCacheFolderAdvice + ")");
  } else if ((mode & others) != 0) {
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
    throw ConfigError("cannot use the cache folder " + folder + ": it is writable by other users " +
                      "(mode " + octal + "), who could plant files stoke would read (chmod go-w " +
                      folder + ", or " + kCacheFolderAdvice + ")");
  }
  return true;
}

std::optional<std::string> read_cache_file(const std::string& path, std::uint64_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | kCacheOpenFlags));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      !trusted_cache_file(path, st) || static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return std::nullopt;
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  const std::int64_t got = pread_fully(fd.get(), text.data(), text.size(), 0);
  if (got < 0) return std::nullopt;
  text.resize(static_cast<std::size_t>(got));
  return text;
}

bool write_cache_file(const std::string& path, const std::function<bool(int fd)>& write) {
  const std::string tmp = path + ".tmp." + cache_random_suffix();
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | kCacheOpenFlags, 0600));
  if (fd.get() < 0) return false;
  const bool ok = ::fchmod(fd.get(), cache_file_mode(cache_shared())) == 0 && write(fd.get()) &&
                  ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

bool write_cache_file(const std::string& path, const std::string& text) {
  return write_cache_file(path, [&](int fd) { return write_fully(fd, text.data(), text.size()); });
}

bool is_key_text(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

CacheFolderLock::CacheFolderLock(const std::string& path, mode_t mode,
                                 const std::function<bool(const struct stat&)>& trusted,
                                 std::chrono::duration<double> wait,
                                 std::chrono::microseconds poll) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CREAT | kCacheOpenFlags, mode);
  if (fd_ < 0) {
    why_ = "cannot open " + path + ": " +
           (errno == ELOOP ? std::string("a symbolic link where stoke keeps the folder's lock "
                                         "(stoke never follows one; remove it)")
                           : std::string(std::strerror(errno)));
    return;
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || !trusted(st)) {
    why_ = "cannot use " + path +
           " as the folder's lock: not a regular file of this user's (remove it)";
    return;
  }
  const auto until = std::chrono::steady_clock::now() + wait;
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const bool busy = errno == EWOULDBLOCK || errno == EINTR;
    if (!busy || std::chrono::steady_clock::now() > until) {
      why_ = "cannot lock " + path + ": " +
             (busy ? "another process has held it for " +
                         std::to_string(static_cast<int>(std::ceil(wait.count()))) +
                         " s (a stopped process?)"
                   : std::string(std::strerror(errno)));
      return;
    }
    std::this_thread::sleep_for(poll);
  }
  held_ = true;
}

CacheFolderLock::~CacheFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // (closing releases the flock)
}

std::string version_key(const std::string& url, std::uint64_t size, const std::string& etag) {
  // By the URL as shown: nothing derived from a password names a file.
  return cache_key(redact_url(url) + "\n" + std::to_string(size) + "\n" + etag);
}

bool stale_cache_file(const std::string& path, std::chrono::system_clock::duration keep,
                      std::chrono::system_clock::time_point now) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    return false;
  return now - std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec)) >
         keep;
}

CacheUsage cache_usage(const std::string& root) {
  CacheUsage usage;
  std::error_code ec;
  std::map<std::string, CacheUsage::Part> parts;
  for (auto it = fs::recursive_directory_iterator(
           root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const fs::path relative = it->path().lexically_relative(root);
    const std::string part = std::distance(relative.begin(), relative.end()) > 1
                                 ? relative.begin()->string()
                                 : std::string(".");
    CacheUsage::Part& p = parts[part];
    p.name = part;
    p.bytes += static_cast<std::uint64_t>(st.st_size);
    ++p.files;
    usage.bytes += static_cast<std::uint64_t>(st.st_size);
    ++usage.files;
  }
  for (auto& [name, p] : parts) usage.parts.push_back(std::move(p));
  return usage;
}

}  // namespace stoke::detail
