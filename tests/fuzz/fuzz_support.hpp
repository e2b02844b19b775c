#pragma once
// What the parser fuzz targets share: a failed property check that libFuzzer records as a crash,
// and an in-memory file for the parsers whose public entry point takes a path.
//
// Thread-safety: none; libFuzzer calls a target from one thread.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace stoke::fuzz {

// A property the parser's contract promises did not hold: report it and abort, which libFuzzer
// (and a plain run of the binary over a reproducer) counts as a crash.
[[noreturn]] inline void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz check failed: %s%s%s\n", what, detail.empty() ? "" : ": ",
               detail.c_str());
  std::abort();
}
#define STOKE_FUZZ_CHECK(cond, ...)                                             \
  do {                                                                          \
    if (!(cond)) ::stoke::fuzz::fail("(" #cond ")" __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)

// One memfd per process, refilled with each input: a path (/proc/self/fd/N) the code under test
// opens like any file, without touching the disk or leaving files behind.
class MemFile {
 public:
  MemFile() : fd_(::memfd_create("stoke-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) fail("memfd_create");
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  // Replaces the file's contents with `data` and returns its path.
  const std::string& fill(const void* data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0) fail("ftruncate");
    const auto* p = static_cast<const char*>(data);
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = ::pwrite(fd_, p + done, size - done, static_cast<off_t>(done));
      if (n <= 0) fail("pwrite");
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_ = "/proc/self/fd/" + std::to_string(fd_);
};

}  // namespace stoke::fuzz
