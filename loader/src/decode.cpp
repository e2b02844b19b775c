#include "decode.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <opencv2/imgcodecs.hpp>

namespace stoke::detail {
namespace {

// Larger than any real photograph; keeps a corrupt header from asking for gigabytes.
constexpr std::int64_t kMaxFileBytes = std::int64_t{1} << 30;

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

BadInput ImageDecoder::read_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    return errno == ENOENT || errno == ENOTDIR ? BadInput::kMissing : BadInput::kUnreadable;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return BadInput::kUnreadable;
  if (st.st_size == 0) return BadInput::kEmpty;
  if (st.st_size > kMaxFileBytes) return BadInput::kTooLarge;
  file_.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < file_.size()) {
    const ssize_t got = ::read(fd.get(), file_.data() + done, file_.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return BadInput::kUnreadable;
    if (got == 0) break;  // shrank while reading
    done += static_cast<std::size_t>(got);
  }
  file_.resize(done);
  return done == 0 ? BadInput::kEmpty : BadInput::kNone;
}

BadInput ImageDecoder::decode(const std::string& path, int channels, cv::Mat& out) {
  if (const BadInput r = read_file(path); r != BadInput::kNone) return r;
  try {
    const cv::Mat encoded(1, static_cast<int>(file_.size()), CV_8U, file_.data());
    out = cv::imdecode(encoded, channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
  } catch (const std::bad_alloc&) {
    return BadInput::kTooLarge;
  } catch (const cv::Exception&) {
    return BadInput::kUndecodable;
  }
  if (out.empty() || out.depth() != CV_8U) return BadInput::kUndecodable;
  return BadInput::kNone;
}

}  // namespace stoke::detail
