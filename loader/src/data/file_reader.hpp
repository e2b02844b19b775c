#pragma once
// Where a sample's bytes come from: the seam between "which file" (the dataset) and "what is in
// it" (the decoders). Workers read through a FileReader, so a test can give a worker one that
// fails or crashes on chosen files, and another source of bytes (an archive, an object store)
// can stand where the file system stands today.
//
// Thread-safety: a reader may be shared by threads only if its read() is safe to call
// concurrently; PosixFileReader is (it holds no state).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/bad_input.hpp"
#include "remote/remote.hpp"

namespace stoke::detail {

// What to read of a file: all of it (size 0), or bytes [offset, offset + size) (a member of a
// tar shard).
struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

class FileReader {
 public:
  virtual ~FileReader() = default;
  // Reads `range` of `path` into `into` (resized to what was read; its contents are unspecified
  // when the read fails). kNone, or why it cannot: missing, not a file, empty, too large,
  // unreadable, or corrupt (a range that runs past the file's end: a shard cut short since it
  // was indexed). Never throws for a bad file.
  virtual BadInput read(const std::string& path, const ByteRange& range,
                        std::vector<std::uint8_t>& into) = 0;
};

// Reads up to n bytes at `offset` of file descriptor fd into dst, through short reads and
// EINTR: the bytes read (fewer only at the file's end), or -1 with errno set.
std::int64_t pread_fully(int fd, void* dst, std::size_t n, std::uint64_t offset);

// Writes n bytes to fd through short writes and EINTR. False (errno set) when it cannot.
bool write_fully(int fd, const void* src, std::size_t n);

// The whole of a small text file (a sidecar index), or nullopt when it cannot be opened, is not
// a regular file (a FIFO is not waited on) or is larger than `max_bytes` (nothing is read then).
std::optional<std::string> read_text_file(const std::string& path, std::uint64_t max_bytes);

// Reads `range` of the regular file open at `fd` (`file_size` bytes, from its fstat) into
// `into`, with FileReader::read's verdicts: the part of a read that follows the open and the
// checks on what was opened, shared by every local reader.
BadInput read_open_file(int fd, std::uint64_t file_size, const ByteRange& range,
                        std::vector<std::uint8_t>& into);

// A local file open for reading while it is indexed (a shard, a Parquet file): its size, and
// reads at offsets. Throws ConfigError naming the path when it cannot be opened or is not a
// regular file (`what`, when given, says what it must be: "a shard must be a tar file").
class LocalFile {
 public:
  explicit LocalFile(const std::string& path, const std::string& what = "");
  ~LocalFile();
  LocalFile(const LocalFile&) = delete;
  LocalFile& operator=(const LocalFile&) = delete;

  std::uint64_t size() const { return size_; }
  // Bytes [offset, offset + n) into dst: how many were read (fewer only at the file's end).
  // Throws ConfigError naming the path when the read fails.
  std::size_t read_at(std::uint64_t offset, void* dst, std::size_t n) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// Files at most this large are read; a larger one is BadInput::kTooLarge before any allocation.
inline constexpr std::int64_t kMaxFileBytes = std::int64_t{1} << 30;

// The local file system: open, fstat, read.
class PosixFileReader final : public FileReader {
 public:
  BadInput read(const std::string& path, const ByteRange& range,
                std::vector<std::uint8_t>& into) override;
};

// Sample bytes: local files (PosixFileReader) and, for http://, https:// and s3:// paths, ranged
// GETs of shard members and whole objects (a Parquet row's image file: at most kMaxFileBytes,
// kMissing for a 404) under `policy` (remote/remote.hpp); a remote read that fails past its
// deadline is kUnreadable. Thread-safe.
class SampleFiles final : public FileReader {
 public:
  explicit SampleFiles(const RemotePolicy& policy) : policy_(policy) {}
  BadInput read(const std::string& path, const ByteRange& range,
                std::vector<std::uint8_t>& into) override;

 private:
  PosixFileReader local_;
  const RemotePolicy policy_;
};

// A process-wide SampleFiles with the default RemotePolicy, for the parts that read whole local
// files unless told otherwise (ImageDecoder::decode). A loader's ChunkRunner reads through one
// of its own, with the policy the arena carries.
FileReader& local_files();

}  // namespace stoke::detail
