// libFuzzer target: the input is an IDX dataset's pixels file (data/index_format.hpp's
// write_pixels_file: the IDX files unpacked, beside the index file under the cache folder's
// datasets/, where anyone allowed to write there may have put it) -> attach_pixels onto the index
// of 3 samples of 2 x 2 pixels the seeds were written for, identity "fuzz".
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
#include <memory>
#include <string>

#include "data/dataset_index.hpp"
#include "data/index_format.hpp"
#include "fuzz_support.hpp"

namespace {

constexpr int kMaxClasses = 10;

// The index the seeds' pixels file belongs to, mapped from a memfd.
std::unique_ptr<stoke::detail::MappedIndex> raw_index() {
  using namespace stoke::detail;
  DatasetIndex raw;
  raw.kind = DatasetKind::kRaw;
  raw.size = 3;
  raw.height = raw.width = 2;
  raw.channels = 1;
  raw.labels = {0, 9, 4};
  raw.pixels.assign(12, 0);
  const int fd = ::memfd_create("fuzz-index", MFD_CLOEXEC);
  if (fd < 0 || !write_index_file(fd, raw, "fuzz")) return nullptr;
  return map_index_file(fd, "fuzz", kMaxClasses, 0, "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::unique_ptr<stoke::detail::MappedIndex> index = raw_index();
  STOKE_FUZZ_CHECK(index != nullptr, "the index the pixels file belongs to does not map");
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
