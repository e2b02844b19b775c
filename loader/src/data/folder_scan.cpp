#include "data/folder_scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string_view>
#include <system_error>
#include <thread>

namespace stoke::detail {
namespace {

// Folders nested deeper than this below a class folder are an error (each level holds a
// directory buffer on the walking thread's stack).
constexpr int kMaxDepth = 128;

// Append-only bytes in anonymous mappings: memory a walking thread may take without malloc.
class MappedBytes {
 public:
  MappedBytes() = default;
  MappedBytes(const MappedBytes&) = delete;
  MappedBytes& operator=(const MappedBytes&) = delete;
  ~MappedBytes() { release(); }
  // False when no memory could be mapped.
  bool append(const char* bytes, std::size_t n) {
    if (size_ + n > capacity_) {
      std::size_t grown = std::max<std::size_t>(capacity_ * 2, 64 << 10);
      while (grown < size_ + n) grown *= 2;
      void* p = data_ == nullptr ? ::mmap(nullptr, grown, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                 : ::mremap(data_, capacity_, grown, MREMAP_MAYMOVE);
      if (p == MAP_FAILED) return false;
      data_ = static_cast<char*>(p);
      capacity_ = grown;
    }
    std::memcpy(data_ + size_, bytes, n);
    size_ += n;
    return true;
  }
  std::string_view view() const { return {data_, size_}; }
  void release() {
    if (data_ != nullptr) ::munmap(data_, capacity_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// What one walking thread finds in one class folder: records "<0 or 1 (empty)><relative
// path>\0", and the first error.
struct ClassWalk {
  MappedBytes found;
  char error[1024] = {};
};

// A linux_dirent64 record (getdents64(2)): d_ino, d_off (8 bytes each), d_reclen (2), d_type (1),
// then the name and its NUL.
constexpr std::size_t kReclenAt = 16, kTypeAt = 18, kNameAt = 19;

// Calls f(name, type) for each entry of the folder open at `fd` but "." and "..", its type
// found by an lstat where the listing gives none (an entry gone meanwhile is passed over), until
// f returns false. Returns 0, or the errno of a listing that failed. Allocates nothing.
template <class F>
int for_each_entry(int fd, F&& f) {
  alignas(8) char buf[8192];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    for (long at = 0; at < n;) {
      unsigned short reclen = 0;
      std::memcpy(&reclen, buf + at + kReclenAt, sizeof reclen);
      const char* name = buf + at + kNameAt;
      unsigned type = static_cast<unsigned char>(buf[at + kTypeAt]);
      at += reclen;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      if (type == DT_UNKNOWN) {
        struct stat st {};
        if (::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        type = IFTODT(st.st_mode);
      }
      if (!f(name, type)) return 0;
    }
  }
}

class Walker {
 public:
  Walker(const char* folder, ClassWalk& out, bool (*is_image)(const char*))
      : folder_(folder), out_(out), is_image_(is_image) {}

  void run() {
    const int fd = ::open(folder_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      if (errno != EACCES) note("", errno);  // (a folder it may not read is skipped)
      return;
    }
    walk(fd, 0, 0);
    ::close(fd);
  }

 private:
  void note(const char* what, int err) {
    if (out_.error[0] != '\0') return;
    char reason[256];
    const char* text = ::strerror_r(err, reason, sizeof reason);  // (GNU: may return a constant)
    std::snprintf(out_.error, sizeof out_.error, "%s%s%.*s: %s", folder_, *what ? "/" : "",
                  static_cast<int>(std::strlen(what)), what, text);
  }

  void record(bool empty, std::size_t len) {
    const char flag = empty ? 1 : 0;
    if (!out_.found.append(&flag, 1) || !out_.found.append(rel_, len + 1)) note(rel_, ENOMEM);
  }

  // The entries of the folder open at `fd`, whose path below the class folder is rel_[0, len).
  void walk(int fd, std::size_t len, int depth) {
    const int err = for_each_entry(fd, [&](const char* name, unsigned type) {
      entry(fd, name, type, len, depth);
      return true;
    });
    if (err != 0) {
      rel_[len] = '\0';
      note(rel_, err);
    }
  }

  // `type`: never DT_UNKNOWN (for_each_entry's).
  void entry(int fd, const char* name, unsigned type, std::size_t len, int depth) {
    const std::size_t name_len = std::strlen(name);
    const std::size_t at = len == 0 ? 0 : len + 1;
    if (at + name_len + 1 > sizeof rel_) return note(name, ENAMETOOLONG);
    if (len != 0) rel_[len] = '/';
    std::memcpy(rel_ + at, name, name_len + 1);
    const std::size_t path_len = at + name_len;
    struct stat st {};
    if (type == DT_DIR) {
      if (depth + 1 > kMaxDepth) return note(rel_, ELOOP);
      const int sub = ::openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      if (sub < 0) {
        if (errno != EACCES) note(rel_, errno);
        return;
      }
      walk(sub, path_len, depth + 1);
      ::close(sub);
      return;
    }
    bool sized = false;
    if (type == DT_LNK) {  // a link to a folder is a folder (not walked); a dangling one a file
      if (::fstatat(fd, name, &st, 0) == 0) {
        if (S_ISDIR(st.st_mode)) return;
        sized = true;
      } else if (errno != ENOENT) {
        return note(rel_, errno);  // (a link loop)
      }
    }
    if (!is_image_(name)) return;
    if (!sized && type != DT_LNK) sized = ::fstatat(fd, name, &st, 0) == 0;
    record(sized && st.st_size == 0, path_len);
  }

  const char* folder_;
  ClassWalk& out_;
  bool (*is_image_)(const char*);
  char rel_[PATH_MAX] = {};
};

// std::filesystem::path's order for relative paths: component by component.
bool path_less(std::string_view a, std::string_view b) {
  while (true) {
    const std::size_t ea = std::min(a.find('/'), a.size()), eb = std::min(b.find('/'), b.size());
    const int c = a.substr(0, ea).compare(b.substr(0, eb));
    if (c != 0) return c < 0;
    if (ea == a.size() || eb == b.size()) return ea == a.size() && eb != b.size();
    a.remove_prefix(ea + 1);
    b.remove_prefix(eb + 1);
  }
}

ClassListing listing_of(const ClassWalk& walk) {
  ClassListing out;
  out.error = walk.error;
  std::vector<std::pair<std::string_view, bool>> found;
  std::string_view rest = walk.found.view();
  while (!rest.empty()) {
    const std::size_t end = rest.find('\0', 1);
    found.push_back({rest.substr(1, end - 1), rest[0] != 0});
    rest.remove_prefix(end + 1);
  }
  std::sort(found.begin(), found.end(),
            [](const auto& x, const auto& y) { return path_less(x.first, y.first); });
  out.files.reserve(found.size());
  for (const auto& [path, empty] : found) {
    out.files.emplace_back(path);
    out.empty.push_back(empty);
  }
  return out;
}

}  // namespace

void for_each_on_threads(std::size_t n, const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> next{0};
  const auto loop = [&] {  // (no malloc from here on: see the header)
    for (std::size_t i; (i = next.fetch_add(1)) < n;) work(i);
  };
  std::vector<std::thread> threads;
  const std::size_t count = std::min<std::size_t>(kScanThreads, n);
  threads.reserve(count);
  try {
    for (std::size_t t = 1; t < count; ++t) threads.emplace_back(loop);
  } catch (const std::system_error&) {  // no more threads to be had: fewer work at once
  }
  loop();
  for (std::thread& t : threads) t.join();
}

std::vector<PathStat> stat_paths(const std::vector<std::string>& paths) {
  std::vector<PathStat> out(paths.size());
  for_each_on_threads(paths.size(), [&](std::size_t i) {
    if (::stat(paths[i].c_str(), &out[i].st) != 0) out[i].error = errno;
  });
  return out;
}

std::vector<int> has_subfolders(const std::vector<std::string>& folders) {
  std::vector<int> out(folders.size(), -1);
  for_each_on_threads(folders.size(), [&](std::size_t i) {
    const int fd = ::open(folders[i].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    int found = 0;
    const int err = for_each_entry(fd, [&](const char*, unsigned type) {
      found = type == DT_DIR ? 1 : 0;
      return found == 0;
    });
    ::close(fd);
    out[i] = err != 0 ? -1 : found;
  });
  return out;
}

std::vector<ClassListing> scan_class_folders(const std::vector<std::string>& folders,
                                             bool (*is_image)(const char* name)) {
  std::vector<ClassWalk> walks(folders.size());
  for_each_on_threads(folders.size(),
                      [&](std::size_t i) { Walker(folders[i].c_str(), walks[i], is_image).run(); });
  std::vector<ClassListing> out;
  out.reserve(folders.size());
  for (ClassWalk& w : walks) {
    out.push_back(listing_of(w));
    w.found.release();  // (its pages back now, not when the vector goes)
  }
  return out;
}

}  // namespace stoke::detail
