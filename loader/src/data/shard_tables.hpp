#pragma once
// The samples of a dataset-level index's shards (DatasetKind::kShards), read where they are read:
// the first time a sample of a shard is wanted, the shard is indexed (index_dataset: the
// machine's shared index file for that shard, built by the first process that needs it, under
// its lock, and found by every later one), and its index stays mapped for the next samples.
//
// Thread-safety: a ShardTables is used by one thread (a worker's chunk runner).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/mutex.hpp"
#include "data/bad_input.hpp"
#include "data/dataset_index.hpp"
#include "data/dataset_view.hpp"
#include "data/index_file.hpp"
#include "remote/remote.hpp"

namespace stoke::detail {

// Whether `info` is what indexing one tar shard gives (not an image folder, IDX files or another
// dataset-level index that a shard's name might point at).
bool is_one_shard(const DatasetIndex& info);

// How a shard of a dataset-level index is indexed: as the training process was asked to
// (`options`, as the index file carries them), reading remote shards under `remote`.
IndexOptions shard_index_options(const LazyShardOptions& options, const RemotePolicy& remote);

class ShardTables {
 public:
  // `dataset`: a kShards view; `copies`: remote shards' local copies are read (the shard cache).
  // Keeps at most `keep` shards' indexes mapped, the least recently used going first.
  ShardTables(const DatasetView& dataset, const RemotePolicy& remote, bool copies,
              std::size_t keep = 64);

  // Sample i (0 <= i < dataset.size()): its shard's index and its place there, or the reason it
  // cannot be read (kBadShard: the shard cannot be indexed, or holds fewer samples than the
  // dataset-level index says, or is not a tar shard). A shard that failed is not indexed again
  // by this object for kRetryAfter.
  struct Located {
    const DatasetView* view = nullptr;
    std::int64_t row = 0;
    BadInput error = BadInput::kNone;
  };
  Located locate(std::int64_t i);

  // A shard that could not be indexed is tried again after this long (a server may be back).
  static constexpr std::chrono::seconds kRetryAfter{30};

 private:
  struct Table {
    std::shared_ptr<const MappedIndex> index;
    DatasetView view;
    std::uint64_t used = 0;
  };

  DatasetView dataset_;
  IndexOptions options_;
  bool copies_;
  std::size_t keep_;
  // By shard: the indexes mapped, and since when each one that could not be indexed failed.
  std::unordered_map<std::size_t, Table> tables_;
  std::unordered_map<std::size_t, std::chrono::steady_clock::time_point> failed_;
  std::uint64_t clock_ = 0;
};

// Why a shard of a dataset-level index was bad: a worker reports only bad_shard, so the first
// time the consumer is handed such a sample of a shard, a thread of the training process indexes
// that shard again and posts what it finds: the error that stops indexing it (a missing file, a
// label over max_classes, ...), or how many samples it holds against the index's count. At most
// kMaxDiagnosed shards are looked at (the rest are bad for the same reasons, as a rule).
//
// Thread-safety: diagnose() from any thread, with any lock held (it starts a thread and
// returns); the destructor cancels remote transfers and joins the threads.
class ShardDiagnosis {
 public:
  static constexpr std::size_t kMaxDiagnosed = 8;

  // `dataset`: a kShards view; `post` gets each finding as one line.
  ShardDiagnosis(const DatasetView& dataset, const RemotePolicy& remote,
                 std::function<void(std::string)> post);
  ~ShardDiagnosis();
  ShardDiagnosis(const ShardDiagnosis&) = delete;
  ShardDiagnosis& operator=(const ShardDiagnosis&) = delete;

  void diagnose(std::int64_t sample) EXCLUDES(mutex_);

 private:
  void run(std::size_t shard) const;
  void finding(std::size_t shard) const;

  const DatasetView dataset_;
  IndexOptions options_;
  const std::function<void(std::string)> post_;
  std::atomic<bool> cancel_{false};
  Mutex mutex_;
  std::unordered_set<std::size_t> seen_ GUARDED_BY(mutex_);
  std::vector<std::thread> threads_ GUARDED_BY(mutex_);
};

}  // namespace stoke::detail
