#include "data/dataset_view.hpp"

#include <algorithm>

#include "common/align.hpp"

namespace stoke::detail {

DatasetView::DatasetView(const IndexRegion& region)
    : kind_(region.kind), size_(region.size), copies_(region.copies) {
  const std::uint8_t* base = region.bytes;
  if (base == nullptr) return;  // (an arena without an index: tests of its other parts)
  const auto n = static_cast<std::size_t>(size_);
  if (kind_ == DatasetKind::kShards) {
    lazy_options_ = reinterpret_cast<const LazyShardOptions*>(base);
    base += align_up(sizeof(LazyShardOptions), kIndexAlign);
    shards_ = reinterpret_cast<const ShardRecord*>(base);
    shard_total_ = region.box_total;
    paths_ = reinterpret_cast<const char*>(
        base + align_up(shard_total_ * sizeof(ShardRecord), kIndexAlign));
  } else if (kind_ == DatasetKind::kRaw) {
    raw_labels_ = reinterpret_cast<const std::int32_t*>(base);
    raw_pixels_ = base + align_up(n * sizeof(std::int32_t), kIndexAlign);
    raw_bytes_ = region.raw_bytes;
  } else {
    entries_ = reinterpret_cast<const FileEntry*>(base);
    base += align_up(n * sizeof(FileEntry), kIndexAlign);
    boxes_ = reinterpret_cast<const SampleBox*>(base);
    paths_ = reinterpret_cast<const char*>(
        base + align_up(region.box_total * sizeof(SampleBox), kIndexAlign));
  }
}

std::pair<std::size_t, std::int64_t> DatasetView::shard_of(std::int64_t i) const {
  // The last shard starting at or before i: it holds i, since an empty shard starts where the
  // next one does (the region's check ensures the starts add up).
  const auto at = static_cast<std::uint64_t>(i);
  const ShardRecord* end = shards_ + shard_total_;
  const ShardRecord* r = std::upper_bound(
      shards_, end, at, [](std::uint64_t v, const ShardRecord& s) { return v < s.start; });
  --r;
  return {static_cast<std::size_t>(r - shards_), static_cast<std::int64_t>(at - r->start)};
}

}  // namespace stoke::detail
