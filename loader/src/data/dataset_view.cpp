#include "data/dataset_view.hpp"

#include <cstring>
#include <vector>

#include "common/align.hpp"
#include "data/shard_cache.hpp"
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
  // (The region's check ensures the starts add up, from 0.)
  return record_holding(shards_, shard_total_, i, [](const ShardRecord& s) { return s.start; });
}

std::string DatasetView::parquet_row_place(std::int64_t i) const {
  const ParquetPlace at = parquet_place(i);
  return "row group " + std::to_string(parquet_chunk(at.source).row_group) + ", row " +
         std::to_string(at.group_row);
}

DatasetView::ParquetPlace DatasetView::parquet_place(std::int64_t i, std::uint32_t column) const {
  ParquetPlace p;
  const auto [source, row] = files_.source_of(i);
  p.source = source;
  p.group_row = row;
  const ParquetChunkRecord& chunk = files_.parquet_chunk(source, column);
  const ParquetPageRecord* pages = files_.parquet_pages();
  const std::uint64_t end = files_.parquet_pages_end(source, column);
  // (The region's check ensures a row group with rows has pages from its row 0, in order.)
  const auto [k, in_page] =
      record_holding(pages + chunk.first_page, end - chunk.first_page, row,
                     [](const ParquetPageRecord& r) { return std::uint64_t{r.first_row}; });
  p.page = chunk.first_page + k;
  p.row = static_cast<std::uint32_t>(in_page);
  const std::uint64_t group_end = source + 1 < files_.source_total()
                                      ? files_.source(source + 1).first
                                      : static_cast<std::uint64_t>(size_);
  const std::uint64_t next_row =
      p.page + 1 < end ? pages[p.page + 1].first_row : group_end - files_.source(source).first;
  p.rows = static_cast<std::uint32_t>(next_row - pages[p.page].first_row);
  return p;
}

std::string member_name(const DatasetView& view, std::int64_t i) {
  if (view.parquet()) return "";
  // Read as a worker reads the sample: a local copy by the shard cache's rules, else the shard
  // when it is a local file (a FIFO at its name is not waited on), never its server.
  const std::string copy(view.copy(i));
  const std::string shard = view.path(i);
  if (copy.empty() && is_url(shard)) return "";
  const ReadAt read_at = [&](std::uint64_t offset, void* dst, std::size_t n) {
    std::vector<std::uint8_t> bytes;
    const ByteRange range{offset, n};
    const BadInput read = copy.empty() ? local_files().read(shard, range, bytes)
                                       : read_shard_copy(copy, range, bytes);
    if (read != BadInput::kNone) return std::size_t{0};
    std::memcpy(dst, bytes.data(), bytes.size());
    return bytes.size();
  };
  return member_name_before(read_at, view.range(i).offset);
}

}  // namespace stoke::detail
