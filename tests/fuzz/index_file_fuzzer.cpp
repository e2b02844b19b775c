// libFuzzer target: the input is a dataset index file (data/index_format.hpp), as a loader finds it
// under the cache folder's datasets/ (where anyone allowed to write there may have put it) ->
// map_index_file, for the identity "fuzz" (the seeds carry it).
//
// Checks beyond the sanitizers:
//   * map_index_file returns a mapped index or nullptr, nothing else;
//   * every accessor of every sample of an accepted index reads inside the mapping (the
//     sanitizers see an out-of-bounds read: the view reads the mapping through plain pointers,
//     so the input is copied into a heap buffer-sized memfd and every byte read is touched);
//   * its shard starts rise from 0 to its size, and its labels are below max_classes.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "data/index_format.hpp"
#include "data/parquet_page.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr int kMaxClasses = 1000;
  const int fd = ::memfd_create("fuzz-index", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (size > 0 && ::write(fd, data, size) != static_cast<ssize_t>(size)) {
    ::close(fd);
    return 0;
  }
  const std::unique_ptr<stoke::detail::MappedIndex> index =
      stoke::detail::map_index_file(fd, "fuzz", kMaxClasses, 0, "");  // takes fd
  if (!index) return 0;
  const stoke::detail::DatasetView view = index->view();
  const std::int64_t n = view.size();
  STOKE_FUZZ_CHECK(n == index->info().size && n > 0);
  const std::uint8_t* begin = index->bytes() + index->region_offset();
  const std::uint8_t* end = begin + index->region_size();
  // (ASan sees no over-read inside the mapping's last page: every span is checked by hand.)
  const auto inside = [&](const void* p, std::size_t bytes) {
    const auto* q = static_cast<const std::uint8_t*>(p);
    return bytes == 0 || (q >= begin && q <= end && bytes <= static_cast<std::size_t>(end - q));
  };
  std::uint64_t sum = 0;
  if (view.lazy()) {  // (a dataset-level index's shards: up to 2^40 samples, checked by shard)
    const auto& starts = index->info().shard_starts;
    STOKE_FUZZ_CHECK(starts.size() == view.shard_total() + 1);
    for (std::size_t s = 0; s < view.shard_total(); ++s) {
      STOKE_FUZZ_CHECK(inside(view.shard_path(s).data(), view.shard_path(s).size()));
      for (char c : view.shard_path(s)) sum += static_cast<unsigned char>(c);
      const std::uint64_t k = view.shard_samples(s);
      STOKE_FUZZ_CHECK(starts[s + 1] - starts[s] == static_cast<std::int64_t>(k));
      if (k == 0) continue;
      for (const std::int64_t i : {starts[s], starts[s + 1] - 1}) {
        const auto [shard, row] = view.shard_of(i);
        STOKE_FUZZ_CHECK(shard == s && row == i - starts[s], "sample " + std::to_string(i));
      }
    }
    return sum == 0xdeadbeef ? 1 : 0;
  }
  // (A Parquet region's rows are up to 2^20 a page of 16 bytes: its first and last 2^16 are read.)
  const std::int64_t kEnds = std::int64_t{1} << 16;
  for (std::int64_t i = 0; i < n; ++i) {
    if (view.parquet() && i == kEnds && n > 2 * kEnds) i = n - kEnds;
    if (view.raw()) break;  // (IDX: pixels and labels are in a file of their own, attach_pixels)
    const std::int32_t label = view.label(i);
    STOKE_FUZZ_CHECK(label >= -1 && label < kMaxClasses, "label " + std::to_string(label));
    STOKE_FUZZ_CHECK(inside(view.copy(i).data(), view.copy(i).size()) &&
                         inside(view.boxes(i).data(), view.boxes(i).size_bytes()),
                     "sample " + std::to_string(i));
    if (view.in_shards()) {
      const auto [shard, row] = view.shard_of(i);
      STOKE_FUZZ_CHECK(shard < view.shard_total() && row >= 0 &&
                           inside(view.shard_path(shard).data(), view.shard_path(shard).size()),
                       "sample " + std::to_string(i));
    }
    if (view.parquet()) {
      const auto at = view.parquet_place(i);
      const auto& chunk = view.parquet_chunk(at.source);
      STOKE_FUZZ_CHECK(at.source == view.shard_of(i).first && at.page >= chunk.first_page &&
                           at.page < view.parquet_pages_end(at.source) && at.row < at.rows &&
                           at.rows <= stoke::detail::kMaxPageRows &&
                           inside(&view.parquet_page(at.page), sizeof(view.parquet_page(at.page))),
                       "sample " + std::to_string(i));
      sum += view.parquet_page(at.page).offset + chunk.dictionary_size;
      for (char c : view.parquet_image_file(i)) sum += static_cast<unsigned char>(c);
      for (std::uint32_t column = 1; column < view.parquet_columns(); ++column) {
        const auto value = view.parquet_place(i, column);
        STOKE_FUZZ_CHECK(value.source == at.source &&
                             value.page >= view.parquet_chunk(at.source, column).first_page &&
                             value.page < view.parquet_pages_end(at.source, column) &&
                             value.row < value.rows,
                         "sample " + std::to_string(i) + " column " + std::to_string(column));
        sum += view.parquet_page(value.page).offset + view.bytes_range(i).size;
      }
    }
    for (char c : view.path(i)) sum += static_cast<unsigned char>(c);
    for (char c : view.copy(i)) sum += static_cast<unsigned char>(c);
    for (const auto& b : view.boxes(i)) sum += static_cast<std::uint64_t>(b.label);
    if (view.mask_kind(i) == stoke::detail::kMaskFile)
      for (char c : view.mask_path(i)) sum += static_cast<unsigned char>(c);
  }
  const auto& starts = index->info().shard_starts;
  if (!starts.empty()) {
    STOKE_FUZZ_CHECK(starts.front() == 0 && starts.back() == n);
    for (std::size_t s = 1; s < starts.size(); ++s) STOKE_FUZZ_CHECK(starts[s] >= starts[s - 1]);
  }
  return sum == 0xdeadbeef ? 1 : 0;  // (keeps the reads)
}
