// libFuzzer target: the input is an IDX index's numbers and its pixels file
// (data/index_format.hpp's write_pixels_file: the IDX files unpacked, beside the index file under
// the cache folder's datasets/, where anyone allowed to write there may have put both): 8 bytes,
// the images (uint32) and their height and width (uint16 each) an index file claims, then the
// pixels file -> map_index_file of such an index, then attach_pixels onto it, identity "fuzz". (A
// pair whose numbers wrapped 2^64 was read outside the mapping: the two are fuzzed together.)
//
// Checks beyond the sanitizers:
//   * attach_pixels accepts or refuses, nothing else;
//   * of an accepted file, every sample's pixels and label read inside the mapping (the
//     sanitizers see the heap copy's bounds: every byte read is touched), and every label is
//     below max_classes.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "data/dataset_index.hpp"
#include "data/index_format.hpp"
#include "fuzz_support.hpp"

namespace {

constexpr int kMaxClasses = 10;

// The index of `images` images of height x width pixels, mapped from a memfd; null when
// map_index_file refuses those numbers.
std::unique_ptr<stoke::detail::MappedIndex> raw_index(std::uint32_t images, int height, int width) {
  using namespace stoke::detail;
  DatasetIndex raw;
  raw.kind = DatasetKind::kRaw;
  raw.size = images;
  raw.height = height;
  raw.width = width;
  raw.channels = 1;
  const int fd = ::memfd_create("fuzz-index", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  if (!write_index_file(fd, raw, "fuzz")) {
    ::close(fd);
    return nullptr;
  }
  return map_index_file(fd, "fuzz", kMaxClasses, 0, "");  // (takes fd)
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  std::uint32_t images = 0;
  std::uint16_t height = 0, width = 0;
  std::memcpy(&images, data, 4);
  std::memcpy(&height, data + 4, 2);
  std::memcpy(&width, data + 6, 2);
  data += 8;
  size -= 8;
  std::unique_ptr<stoke::detail::MappedIndex> index = raw_index(images, height, width);
  if (!index) return 0;
  const int fd = ::memfd_create("fuzz-pixels", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (size > 0 && ::write(fd, data, size) != static_cast<ssize_t>(size)) {
    ::close(fd);
    return 0;
  }
  if (!stoke::detail::attach_pixels(*index, fd, "fuzz", kMaxClasses)) return 0;  // (takes fd)
  const stoke::detail::DatasetView view = index->view();
  std::uint64_t sum = 0;
  for (std::int64_t i = 0; i < view.size(); ++i) {
    const std::int32_t label = view.label(i);
    STOKE_FUZZ_CHECK(label >= 0 && label < kMaxClasses, "label " + std::to_string(label));
    const std::uint8_t* p = view.raw_pixels(i);
    for (std::size_t k = 0; k < view.raw_bytes(); ++k) sum += p[k];
  }
  return sum == 0xdeadbeef ? 1 : 0;  // (keeps the reads)
}
