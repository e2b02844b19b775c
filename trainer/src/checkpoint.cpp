#include "checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <type_traits>
#include <vector>

#include "stoke/error.hpp"

namespace stoke::train {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'O', 'K', 'E', 'C', 'K', 'P'};
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8 + 4;

class Writer {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void put_string(const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    bytes_.append(s);
  }
  void put_floats(const std::vector<float>& v) {
    put(static_cast<std::int64_t>(v.size()));
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
  std::string& bytes() { return bytes_; }

 private:
  // A string, not a vector<char>: GCC 12 warns falsely about vector<char>::insert of raw bytes.
  std::string bytes_;
};

class Reader {
 public:
  Reader(const char* data, std::size_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint32_t>();
    return std::string(take(n), n);
  }
  std::vector<float> get_floats() {
    const auto n = get<std::int64_t>();
    if (n < 0 || static_cast<std::uint64_t>(n) > (size_ - at_) / sizeof(float)) truncated();
    std::vector<float> v(static_cast<std::size_t>(n));
    std::memcpy(v.data(), take(v.size() * sizeof(float)), v.size() * sizeof(float));
    return v;
  }
  bool done() const { return at_ == size_; }

 private:
  const char* take(std::size_t n) {
    if (n > size_ - at_) truncated();
    const char* p = data_ + at_;
    at_ += n;
    return p;
  }
  [[noreturn]] void truncated() const {
    throw Error(path_ + ": checkpoint payload ends early (corrupt file)");
  }
  const char* data_;
  std::size_t size_;
  std::size_t at_ = 0;
  const std::string& path_;
};

std::string encode(const Checkpoint& c) {
  Writer w;
  const ModelShape& s = c.config.shape;
  for (int v : {s.channels, s.height, s.width, s.classes, s.conv1, s.conv2}) w.put<std::int32_t>(v);
  const Hyper& h = c.config.hyper;
  w.put(h.lr);
  w.put(h.momentum);
  w.put(h.weight_decay);
  w.put(static_cast<std::int32_t>(h.schedule));
  w.put(static_cast<std::int32_t>(h.warmup_steps));
  w.put(h.total_steps);
  w.put(static_cast<std::uint8_t>(h.sync_bn));
  w.put(h.bn_momentum);
  w.put(c.config.seed);
  w.put(static_cast<std::int32_t>(c.config.batch));
  w.put(static_cast<std::int32_t>(c.config.epochs));
  w.put(static_cast<std::int32_t>(c.config.pad));
  w.put(c.model.step);
  w.put_string(c.loader.serialize());
  w.put_floats(c.model.params);
  w.put_floats(c.model.buffers);
  w.put_floats(c.model.velocity);
  return std::move(w.bytes());
}

Checkpoint decode(Reader& r, const std::string& path) {
  Checkpoint c;
  ModelShape& s = c.config.shape;
  for (int* v : {&s.channels, &s.height, &s.width, &s.classes, &s.conv1, &s.conv2})
    *v = r.get<std::int32_t>();
  Hyper& h = c.config.hyper;
  h.lr = r.get<float>();
  h.momentum = r.get<float>();
  h.weight_decay = r.get<float>();
  const auto schedule = r.get<std::int32_t>();
  if (schedule != 0 && schedule != 1) throw Error(path + ": unknown learning-rate schedule");
  h.schedule = static_cast<Schedule>(schedule);
  h.warmup_steps = r.get<std::int32_t>();
  h.total_steps = r.get<std::int64_t>();
  h.sync_bn = r.get<std::uint8_t>() != 0;
  h.bn_momentum = r.get<float>();
  c.config.seed = r.get<std::uint64_t>();
  c.config.batch = r.get<std::int32_t>();
  c.config.epochs = r.get<std::int32_t>();
  c.config.pad = r.get<std::int32_t>();
  c.model.step = r.get<std::int64_t>();
  try {
    c.loader = LoaderState::parse(r.get_string());
  } catch (const ConfigError& e) {
    throw Error(path + ": " + e.what());
  }
  c.model.params = r.get_floats();
  c.model.buffers = r.get_floats();
  c.model.velocity = r.get_floats();
  if (!r.done()) throw Error(path + ": unexpected bytes after the checkpoint payload");
  try {
    s.validate();
    if (c.config.batch <= 0 || c.config.epochs <= 0 || h.total_steps < 1 || h.warmup_steps < 0 ||
        !(h.lr > 0) || !std::isfinite(h.lr) || c.model.step < 0 || c.config.pad < 0)
      throw Error("the run configuration is out of range (batch " + std::to_string(c.config.batch) +
                  ", steps " + std::to_string(h.total_steps) + ")");
    if (c.loader.seed != c.config.seed || c.loader.global_batch != c.config.batch)
      throw Error("the loader position was saved for another seed or batch");
    const ParamLayout l(s);
    if (static_cast<std::int64_t>(c.model.params.size()) != l.params ||
        static_cast<std::int64_t>(c.model.buffers.size()) != l.buffers ||
        c.model.velocity.size() != c.model.params.size())
      throw Error("array sizes do not match the model " + s.describe());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return c;
}

// crc32_z: the length is a size_t, so payloads over 4 GiB are covered whole.
std::uint32_t checksum(const char* data, std::size_t size) {
  return static_cast<std::uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(data), size));
}

[[noreturn]] void io_error(const std::string& path, const char* what) {
  throw Error(path + ": " + what + ": " + std::strerror(errno));
}

void write_all(int fd, const char* p, std::size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) io_error(path, "cannot write");
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

bool RunConfig::operator==(const RunConfig& o) const {
  const Hyper& a = hyper;
  const Hyper& b = o.hyper;
  return shape == o.shape && seed == o.seed && batch == o.batch && epochs == o.epochs && pad == o.pad &&
         a.lr == b.lr && a.momentum == b.momentum && a.weight_decay == b.weight_decay &&
         a.schedule == b.schedule && a.warmup_steps == b.warmup_steps &&
         a.total_steps == b.total_steps && a.sync_bn == b.sync_bn &&
         a.bn_momentum == b.bn_momentum;
}

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  const std::string payload = encode(checkpoint);
  Writer header;
  for (char ch : kMagic) header.put(ch);
  header.put(kCheckpointVersion);
  header.put(std::uint32_t{0});
  header.put(static_cast<std::uint64_t>(payload.size()));
  header.put(checksum(payload.data(), payload.size()));

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_error(tmp, "cannot create");
  try {
    write_all(fd, header.bytes().data(), header.bytes().size(), tmp);
    write_all(fd, payload.data(), payload.size(), tmp);
    if (::fsync(fd) != 0) io_error(tmp, "cannot flush");
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    io_error(tmp, "cannot close");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    io_error(path, "cannot rename the new checkpoint into place");
  }
  // The rename itself reaches the disk when the directory is flushed.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

Checkpoint load_checkpoint(const std::string& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open checkpoint" +
                (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string()));
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 8) != 0)
    throw Error(path + ": not a stoke checkpoint (no STOKECKP header)");
  Reader header(bytes.data() + 8, kHeaderBytes - 8, path);
  const auto version = header.get<std::uint32_t>();
  header.get<std::uint32_t>();
  const auto payload_bytes = header.get<std::uint64_t>();
  const auto crc = header.get<std::uint32_t>();
  if (version != kCheckpointVersion)
    throw Error(path + ": checkpoint format version " + std::to_string(version) +
                "; this stoke reads version " + std::to_string(kCheckpointVersion));
  const std::size_t have = bytes.size() - kHeaderBytes;
  if (payload_bytes != have)
    throw Error(path + ": truncated or padded checkpoint: the header promises " +
                std::to_string(payload_bytes) + " payload bytes, the file has " +
                std::to_string(have));
  const char* payload = bytes.data() + kHeaderBytes;
  if (checksum(payload, have) != crc)
    throw Error(path + ": corrupt checkpoint (checksum mismatch)");
  Reader r(payload, have, path);
  return decode(r, path);
}

}  // namespace stoke::train
