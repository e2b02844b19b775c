#include "data/file_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace stoke::detail {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

BadInput PosixFileReader::read(const std::string& path, std::vector<std::uint8_t>& into) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return BadInput::kMissing;
    return BadInput::kUnreadable;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return BadInput::kUnreadable;
  if (!S_ISREG(st.st_mode)) return BadInput::kNotAFile;
  if (st.st_size == 0) return BadInput::kEmpty;
  if (st.st_size > kMaxFileBytes) return BadInput::kTooLarge;
  into.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < into.size()) {
    const ssize_t got = ::read(fd.get(), into.data() + done, into.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno == EISDIR ? BadInput::kNotAFile : BadInput::kUnreadable;
    if (got == 0) break;  // shrank while reading
    done += static_cast<std::size_t>(got);
  }
  into.resize(done);
  return done == 0 ? BadInput::kEmpty : BadInput::kNone;
}

FileReader& local_files() {
  static PosixFileReader reader;
  return reader;
}

}  // namespace stoke::detail
