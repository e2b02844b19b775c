#include "common/fd.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "stoke/error.hpp"

namespace stoke::detail {

int try_raise_fd(int fd) noexcept {
  if (fd < 0) return fd;
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, kFirstRaisedFd);
  const int err = errno;
  ::close(fd);
  errno = err;
  return high;
}

int raise_fd(int fd, const char* what) {
  if (fd < 0) throw Error(std::string("cannot create ") + what + ": " + std::strerror(errno));
  const int high = try_raise_fd(fd);
  if (high < 0) {
    const int err = errno;
    throw Error(std::string("cannot create ") + what + ": " + std::strerror(err) +
                (err == EMFILE || err == EINVAL
                     ? " (raise the open-file limit: ulimit -n; descriptors are numbered from " +
                           std::to_string(kFirstRaisedFd) + ")"
                     : ""));
  }
  return high;
}

}  // namespace stoke::detail
