#include "data/dataset_view.hpp"

#include "common/align.hpp"

namespace stoke::detail {

DatasetView::DatasetView(const IndexRegion& region)
    : kind_(region.kind), size_(region.size), copies_(region.copies) {
  const std::uint8_t* base = region.bytes;
  if (base == nullptr) return;  // (an arena without an index: tests of its other parts)
  const auto n = static_cast<std::size_t>(size_);
  if (kind_ == DatasetKind::kRaw) {
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

}  // namespace stoke::detail
