#include "data/file_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fd.hpp"
#include "data/shard_list.hpp"
#include "remote/remote.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

std::int64_t pread_fully(int fd, void* dst, std::size_t n, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got =
        ::pread(fd, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return static_cast<std::int64_t>(done);
}

bool write_fully(int fd, const void* src, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd, static_cast<const char*>(src) + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<std::size_t>(w);
  }
  return true;
}

std::optional<std::string> read_text_file(const std::string& path, std::uint64_t max_bytes) {
  // O_NONBLOCK: a FIFO planted at the name must not block the open.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) return std::nullopt;
  std::string text(static_cast<std::size_t>(size), '\0');
  const std::int64_t got = pread_fully(fd.get(), text.data(), text.size(), 0);
  if (got < 0) return std::nullopt;
  text.resize(static_cast<std::size_t>(got));  // fewer: the file shrank while reading
  return text;
}

BadInput PosixFileReader::read(const std::string& path, const ByteRange& range,
                               std::vector<std::uint8_t>& into) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));  // a FIFO: no wait
  if (fd.get() < 0) {
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return BadInput::kMissing;
    return BadInput::kUnreadable;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return BadInput::kUnreadable;
  if (!S_ISREG(st.st_mode)) return BadInput::kNotAFile;
  return read_open_file(fd.get(), static_cast<std::uint64_t>(st.st_size), range, into);
}

BadInput read_open_file(int fd, std::uint64_t file_size, const ByteRange& range,
                        std::vector<std::uint8_t>& into) {
  const bool whole = range.size == 0;
  if (!whole && (range.size > file_size || range.offset > file_size - range.size))
    return BadInput::kCorrupt;
  const std::uint64_t want = whole ? file_size : range.size;
  if (want == 0) return BadInput::kEmpty;
  if (want > static_cast<std::uint64_t>(kMaxFileBytes)) return BadInput::kTooLarge;
  into.resize(static_cast<std::size_t>(want));
  const std::int64_t got = pread_fully(fd, into.data(), into.size(), range.offset);
  if (got < 0) return errno == EISDIR ? BadInput::kNotAFile : BadInput::kUnreadable;
  const auto done = static_cast<std::size_t>(got);  // fewer: the file shrank while reading
  into.resize(done);
  if (!whole && done < range.size) return BadInput::kCorrupt;
  return done == 0 ? BadInput::kEmpty : BadInput::kNone;
}

BadInput SampleFiles::read(const std::string& path, const ByteRange& range,
                           std::vector<std::uint8_t>& into) {
  if (!is_url(path)) return local_.read(path, range, into);
  if (range.size == 0) {
    // A whole object: a Parquet row's image file (shard members are ranges).
    std::string body;
    try {
      if (!remote_get_if_exists(path, body, static_cast<std::size_t>(kMaxFileBytes), policy_))
        return BadInput::kMissing;
    } catch (const Error&) {
      return BadInput::kUnreadable;
    }
    if (body.empty()) return BadInput::kEmpty;
    into.assign(body.begin(), body.end());
    return BadInput::kNone;
  }
  if (range.size > static_cast<std::uint64_t>(kMaxFileBytes)) return BadInput::kTooLarge;
  into.resize(static_cast<std::size_t>(range.size));
  try {
    const std::size_t got = remote_read(path, range.offset, into.data(), into.size(), policy_);
    into.resize(got);
    return got < range.size ? BadInput::kCorrupt : BadInput::kNone;
  } catch (const Error&) {
    // The server stayed unreachable past the deadline, or refused: this sample cannot be
    // had (the index was built from the same server moments before).
    return BadInput::kUnreadable;
  }
}

FileReader& local_files() {
  static SampleFiles reader{RemotePolicy{}};
  return reader;
}

LocalFile::LocalFile(const std::string& path, const std::string& what) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw ConfigError(path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw ConfigError(path + ": not a regular file" + (what.empty() ? "" : " (" + what + ")"));
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

LocalFile::~LocalFile() { ::close(fd_); }

std::size_t LocalFile::read_at(std::uint64_t offset, void* dst, std::size_t n) const {
  const std::int64_t got = pread_fully(fd_, dst, n, offset);
  if (got < 0) throw ConfigError(path_ + ": " + std::strerror(errno));
  return static_cast<std::size_t>(got);
}

}  // namespace stoke::detail
