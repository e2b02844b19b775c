#include "stoke/mnist.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "stoke/error.hpp"

namespace stoke {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Finds `stem` or `stem.gz` in `dir`.
std::string find_idx_file(const std::string& dir, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    std::string candidate = dir + "/" + stem + suffix;
    if (std::filesystem::is_regular_file(candidate)) return candidate;
  }
  throw Error(dir + "/" + stem + "[.gz]: No such file (expected an MNIST-style IDX file)");
}

void read_exact(gzFile f, const std::string& path, void* dst, std::size_t n) {
  auto* out = static_cast<std::uint8_t*>(dst);
  while (n > 0) {
    const unsigned step = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
    const int got = gzread(f, out, step);
    if (got <= 0) {
      int zerr = 0;
      const char* msg = gzerror(f, &zerr);
      throw Error(path + ": truncated IDX file (" +
                  (zerr != Z_OK && msg != nullptr ? std::string(msg) : "unexpected end of data") +
                  ")");
    }
    out += got;
    n -= static_cast<std::size_t>(got);
  }
}

std::uint32_t read_be32(gzFile f, const std::string& path) {
  std::uint8_t b[4];
  read_exact(f, path, b, 4);
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
         std::uint32_t{b[3]};
}

GzFile open_gz(const std::string& path) {
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) throw Error(path + ": " + std::strerror(errno));
  gzbuffer(f.get(), 1 << 20);
  return f;
}

}  // namespace

bool is_idx_folder(const std::string& dir) {
  for (const char* stem : {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte"}) {
    for (const char* suffix : {"", ".gz"}) {
      if (std::filesystem::is_regular_file(dir + "/" + stem + suffix)) return true;
    }
  }
  return false;
}

IdxImages read_idx(const std::string& dir, Split split) {
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  const std::string images_path = find_idx_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_idx_file(dir, prefix + "-labels-idx1-ubyte");

  IdxImages out;
  {
    GzFile f = open_gz(images_path);
    const std::uint32_t magic = read_be32(f.get(), images_path);
    if (magic != 0x00000803)
      throw Error(images_path + ": not an IDX image file (magic " + std::to_string(magic) +
                  ", expected 2051)");
    const std::uint32_t count = read_be32(f.get(), images_path);
    const std::uint32_t rows = read_be32(f.get(), images_path);
    const std::uint32_t cols = read_be32(f.get(), images_path);
    if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096 || count > (1u << 28))
      throw Error(images_path + ": absurd IDX dimensions " + std::to_string(count) + "x" +
                  std::to_string(rows) + "x" + std::to_string(cols));
    out.count = count;
    out.rows = static_cast<int>(rows);
    out.cols = static_cast<int>(cols);
    out.pixels.resize(std::size_t{count} * rows * cols);
    read_exact(f.get(), images_path, out.pixels.data(), out.pixels.size());
  }
  {
    GzFile f = open_gz(labels_path);
    const std::uint32_t magic = read_be32(f.get(), labels_path);
    if (magic != 0x00000801)
      throw Error(labels_path + ": not an IDX label file (magic " + std::to_string(magic) +
                  ", expected 2049)");
    const std::uint32_t count = read_be32(f.get(), labels_path);
    if (count != out.count)
      throw Error(labels_path + ": holds " + std::to_string(count) + " labels but " + images_path +
                  " holds " + std::to_string(out.count) + " images");
    out.labels.resize(count);
    read_exact(f.get(), labels_path, out.labels.data(), out.labels.size());
  }
  return out;
}

}  // namespace stoke
