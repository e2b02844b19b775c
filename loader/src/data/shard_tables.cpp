#include "data/shard_tables.hpp"

#include <algorithm>
#include <string>

#include "stoke/error.hpp"

namespace stoke::detail {

ShardTables::ShardTables(const DatasetView& dataset, const RemotePolicy& remote, bool copies,
                         std::size_t keep)
    : dataset_(dataset), copies_(copies), keep_(std::max<std::size_t>(keep, 1)) {
  const LazyShardOptions& o = dataset_.lazy_options();
  options_.label_field = o.label_field;
  options_.mask_field = o.mask_field;
  options_.bytes_field = o.bytes_field;
  options_.box_field = o.box_field;
  options_.on_error = static_cast<OnError>(o.on_error);
  options_.max_classes = o.max_classes;
  options_.caches.root = o.cache_root;
  options_.caches.shard_copies = o.shard_copies != 0;
  options_.remote = remote;
}

ShardTables::Located ShardTables::locate(std::int64_t i) {
  const auto [shard, row] = dataset_.shard_of(i);
  if (failed_.contains(shard)) return {nullptr, 0, BadInput::kBadShard};
  auto it = tables_.find(shard);
  if (it == tables_.end()) {
    if (tables_.size() >= keep_) {
      tables_.erase(std::min_element(tables_.begin(), tables_.end(), [](const auto& a,
                                                                         const auto& b) {
        return a.second.used < b.second.used;
      }));
    }
    std::shared_ptr<const MappedIndex> index;
    try {
      index = index_dataset(std::string(dataset_.shard_path(shard)), options_);
    } catch (const Error&) {  // (a missing or damaged shard, a label over max_classes)
      failed_.insert(shard);
      return {nullptr, 0, BadInput::kBadShard};
    }
    ++opened_;
    const DatasetView view = index->view(copies_);
    it = tables_.emplace(shard, Table{std::move(index), view, 0}).first;
  }
  it->second.used = ++clock_;
  if (row >= it->second.view.size()) return {nullptr, 0, BadInput::kBadShard};
  return {&it->second.view, row, BadInput::kNone};
}

}  // namespace stoke::detail
