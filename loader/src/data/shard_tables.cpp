#include "data/shard_tables.hpp"

#include <algorithm>
#include <string>

#include "common/text.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

IndexOptions shard_index_options(const LazyShardOptions& o, const RemotePolicy& remote) {
  IndexOptions options;
  options.label_field = o.label_field;
  options.mask_field = o.mask_field;
  options.bytes_field = o.bytes_field;
  options.box_field = o.box_field;
  options.on_error = static_cast<OnError>(o.on_error);
  options.max_classes = o.max_classes;
  options.caches.root = o.cache_root;
  options.caches.shard_copies = o.shard_copies != 0;
  options.remote = remote;
  return options;
}

ShardTables::ShardTables(const DatasetView& dataset, const RemotePolicy& remote, bool copies,
                         std::size_t keep)
    : dataset_(dataset),
      options_(shard_index_options(dataset.lazy_options(), remote)),
      copies_(copies),
      keep_(std::max<std::size_t>(keep, 1)) {}

bool is_one_shard(const DatasetIndex& info) {
  return info.kind == DatasetKind::kFiles && info.shard_starts.size() == 2;
}

ShardTables::Located ShardTables::locate(std::int64_t i) {
  const auto [shard, row] = dataset_.shard_of(i);
  const auto now = std::chrono::steady_clock::now();
  if (const auto failed = failed_.find(shard); failed != failed_.end()) {
    if (now - failed->second < kRetryAfter) return {nullptr, 0, BadInput::kBadShard};
    failed_.erase(failed);
  }
  auto it = tables_.find(shard);
  if (it == tables_.end()) {
    if (tables_.size() >= keep_) {
      tables_.erase(std::min_element(
          tables_.begin(), tables_.end(),
          [](const auto& a, const auto& b) { return a.second.used < b.second.used; }));
    }
    std::shared_ptr<const MappedIndex> index;
    try {
      index = index_dataset(std::string(dataset_.shard_path(shard)), options_);
    } catch (...) {  // (a missing or damaged shard, a label over max_classes, no memory)
      index = nullptr;
    }
    if (index == nullptr || !is_one_shard(index->info())) {
      failed_[shard] = now;
      return {nullptr, 0, BadInput::kBadShard};
    }
    const DatasetView view = index->view(copies_);
    it = tables_.emplace(shard, Table{std::move(index), view, 0}).first;
  }
  it->second.used = ++clock_;
  if (row >= it->second.view.size()) return {nullptr, 0, BadInput::kBadShard};
  return {&it->second.view, row, BadInput::kNone};
}

ShardDiagnosis::ShardDiagnosis(const DatasetView& dataset, const RemotePolicy& remote,
                               std::function<void(std::string)> post)
    : dataset_(dataset),
      options_(shard_index_options(dataset.lazy_options(), remote)),
      post_(std::move(post)) {
  options_.remote.cancel = &cancel_;
}

ShardDiagnosis::~ShardDiagnosis() {
  cancel_ = true;
  std::vector<std::thread> threads;
  {
    MutexLock lock(mutex_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void ShardDiagnosis::diagnose(std::int64_t sample) {
  const std::size_t shard = dataset_.shard_of(sample).first;
  MutexLock lock(mutex_);
  if (seen_.size() >= kMaxDiagnosed || !seen_.insert(shard).second) return;
  threads_.emplace_back([this, shard] { run(shard); });
}

void ShardDiagnosis::run(std::size_t shard) const {
  try {
    finding(shard);
  } catch (...) {  // (a thread of its own: nothing may escape it; the finding is only lost)
  }
}

void ShardDiagnosis::finding(std::size_t shard) const {
  const std::string path(dataset_.shard_path(shard));
  const std::string shown = redact_url(path);
  const std::uint64_t declared = dataset_.shard_samples(shard);
  try {
    const auto index = index_dataset(path, options_);
    const auto held = static_cast<std::uint64_t>(index->info().size);
    if (!is_one_shard(index->info()))
      post_("bad_shard: " + shown +
            " is not a tar shard (a dataset-level index names tar shards only)");
    else if (held < declared)
      post_("bad_shard: " + shown + " holds " + std::to_string(held) +
            " samples, the dataset-level index says " + std::to_string(declared) +
            ": its samples from number " + std::to_string(held) + " on are skipped");
    else
      post_("bad_shard: " + shown + " could not be indexed by a worker, but is now (" +
            std::to_string(held) + " samples): a passing failure");
  } catch (const std::exception& e) {
    if (!cancel_) post_("bad_shard: " + shown + " cannot be indexed: " + e.what());
  }
}

}  // namespace stoke::detail
