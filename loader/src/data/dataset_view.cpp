#include "data/dataset_view.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/align.hpp"
#include "common/fd.hpp"
#include "data/shard_list.hpp"
#include "data/tar_index.hpp"

namespace stoke::detail {

DatasetView::DatasetView(const IndexRegion& region)
    : kind_(region.kind), size_(region.size), copies_(region.copies) {
  const std::uint8_t* base = region.bytes;
  if (base == nullptr) return;  // (an arena without an index: tests of its other parts)
  if (kind_ == DatasetKind::kShards) {
    lazy_options_ = reinterpret_cast<const LazyShardOptions*>(base);
    base += align_up(sizeof(LazyShardOptions), kIndexAlign);
    shards_ = reinterpret_cast<const ShardRecord*>(base);
    shard_total_ = region.box_total;
    paths_ = reinterpret_cast<const char*>(
        base + align_up(shard_total_ * sizeof(ShardRecord), kIndexAlign));
  } else if (kind_ == DatasetKind::kRaw) {
    raw_pixels_ = region.pixels;
    raw_bytes_ = region.raw_bytes;
    if (raw_pixels_ != nullptr)
      raw_labels_ = raw_pixels_ + static_cast<std::size_t>(size_) * raw_bytes_;
  } else {
    files_ = FilesRegion(base);
  }
}

std::pair<std::size_t, std::int64_t> DatasetView::shard_of(std::int64_t i) const {
  if (!lazy()) return files_.source_of(i);
  // The last shard starting at or before i: it holds i, since an empty shard starts where the
  // next one does (the region's check ensures the starts add up).
  const auto at = static_cast<std::uint64_t>(i);
  const ShardRecord* end = shards_ + shard_total_;
  const ShardRecord* r = std::upper_bound(
      shards_, end, at, [](std::uint64_t v, const ShardRecord& s) { return v < s.start; });
  --r;
  return {static_cast<std::size_t>(r - shards_), static_cast<std::int64_t>(at - r->start)};
}

std::string member_name(const DatasetView& view, std::int64_t i) {
  const std::string_view copy = view.copy(i);
  const std::string file = copy.empty() ? view.path(i) : std::string(copy);
  if (is_url(file)) return "";
  // Never blocking on what the name holds now (a FIFO), never through a link to a local copy.
  const UniqueFd fd(
      ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (copy.empty() ? 0 : O_NOFOLLOW)));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  const ReadAt read_at = [&](std::uint64_t offset, void* dst, std::size_t n) {
    const std::int64_t got = pread_fully(fd.get(), dst, n, offset);
    return got < 0 ? std::size_t{0} : static_cast<std::size_t>(got);
  };
  return member_name_before(read_at, view.range(i).offset);
}

}  // namespace stoke::detail
