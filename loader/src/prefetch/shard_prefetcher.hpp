#pragma once
// The shard prefetcher: follows the epoch plan ahead of the workers and fetches the remote
// shards its next batches read, whole, into the shard cache (data/shard_cache.hpp), so that
// workers read local bytes and the network's latency overlaps decoding. A batch goes to the
// workers only once every shard it reads is on disk (the gate, ready()); the time the
// consumer's next batch is held back is measured (fetch_wait_s). How it works, its failures,
// its time and its locks: docs/ARCHITECTURE.md, "The shard prefetcher".
//
// Parts: a coordinator thread (this class) owns the shards' records and walks the batches ahead
// (shard_walk.hpp: no threads, clock or I/O) on every change; the look-ups (shard_resolver.hpp) and
// the downloads (shard_downloader.hpp) run on threads of their own and report back to it.
//
// Invariant: every batch ready() says yes to reads only shards on disk that this loader wants.
//
// Thread-safety: ready() and stats() from any thread, ready() also with the loader's lock held;
// they take only published_mutex_, for a few instructions at a time (and the time source's own
// lock, to read it). Lock order: the loader's lock, then mutex_, then published_mutex_; the
// coordinator calls PrefetchHost::read (which takes the loader's lock) holding neither.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/mutex.hpp"
#include "common/time_source.hpp"
#include "consumer/event_log.hpp"
#include "data/dataset_index.hpp"
#include "data/shard_cache.hpp"
#include "plan/epoch_plan.hpp"
#include "prefetch/batches_ahead.hpp"
#include "prefetch/prefetch_shard.hpp"
#include "prefetch/shard_downloader.hpp"
#include "prefetch/shard_resolver.hpp"
#include "remote/remote.hpp"

namespace stoke::detail {

struct ShardCacheStats {
  std::uint64_t bytes_fetched = 0;
  // Each epoch, each shard counts once, when the consumer's epoch first wants it: a hit when
  // it is on disk then (kept from an earlier epoch, or fetched ahead), else a miss (fetched).
  std::int64_t hits = 0;
  std::int64_t misses = 0;
  std::int64_t evictions = 0;
  double fetch_wait_s = 0;          // time the consumer's next batch was held back for its shards
  std::int64_t fetch_failures = 0;  // fetches that failed (not a Stats field: for tests)
};

// What the prefetcher needs of its loader, and no more. loader_setup.cpp implements it over
// LoaderCore; a test implements it over a plan of its own, with no loader at all.
// Thread-safety: every method may be called from the prefetcher's threads at any time.
class PrefetchHost {
 public:
  // The consumer's position.
  struct Consumer {
    bool stopped = false;          // the loader is shutting down
    std::int64_t next_seq = 0;     // the batch it receives next (SlotTable::next_seq())
    std::uint64_t generation = 0;  // counts repositions (SlotTable::generation())
  };
  using Look = std::function<void(const Consumer& at, const PrefetchPlan& plan)>;

  virtual ~PrefetchHost() = default;
  // Calls `look` once with the consumer's position and the plan its batches follow
  // (SlotTable::plan()), both under the loader's lock: `look` copies out what it needs, and
  // takes no other lock and does not block. What the plan says of a batch holds for as long as
  // the generation stays the same.
  virtual void read(const Look& look) = 0;
  // Batches the gate refused may be ready now: wake whoever assigns them (the supervisor, or an
  // in-process consumer). Called with none of the prefetcher's locks held.
  virtual void ready_changed() = 0;
  // Stops the loader with `error` (a loader keeps the first error it meets).
  virtual void fail(std::exception_ptr error) = 0;
};

class ShardPrefetcher {
 public:
  static constexpr int kFetchThreads = 4;
  static constexpr int kResolveThreads = 2;

  // Starts fetching for the consumer's position in `host`, each fetch under `policy` (the
  // loader's RemoteConfig's), its deadlines on `time`; the ready range reaches at most
  // `slot_capacity` batches past the consumer's (what the arena's slots can hold ahead).
  // REQUIRES: `shards` is not empty, and names shards of the host's plan (RemoteShard::shard <
  // its shard count); `time` and `log` outlive the prefetcher.
  ShardPrefetcher(std::unique_ptr<PrefetchHost> host, std::vector<RemoteShard> shards,
                  std::unique_ptr<ShardStore> store, const RemotePolicy& policy,
                  const TimeSource& time, std::int64_t slot_capacity, EventLog& log);
  ~ShardPrefetcher();
  ShardPrefetcher(const ShardPrefetcher&) = delete;
  ShardPrefetcher& operator=(const ShardPrefetcher&) = delete;

  // Whether batch `seq` (epoch * batches_per_epoch + index) may go to the workers, asked with
  // the slot table's generation. A no for the consumer's next batch starts the fetch-wait clock.
  bool ready(std::int64_t seq, std::uint64_t generation, bool consumer_next)
      EXCLUDES(published_mutex_);
  ShardCacheStats stats() const EXCLUDES(published_mutex_);

 private:
  using Clock = TimeSource::Clock;
  using Position = PrefetchHost::Consumer;

  // The few numbers of the plan that never change: read from the host's once.
  struct PlanShape {
    std::int64_t batches_per_epoch = 0;
    std::size_t shards = 0;
  };
  static PlanShape shape_of(PrefetchHost& host);

  // Batches [begin, end) of a generation may go to the workers.
  struct ReadyRange {
    std::int64_t begin = 0;
    std::int64_t end = 0;
    std::uint64_t generation = 0;
  };

  // A report of a look-up or download thread, with the time it came (a failure's age counts
  // from then).
  template <class Report>
  struct Heard {
    Report report;
    Clock::time_point at;
  };
  struct Reports {
    std::vector<Heard<ShardResolver::Answer>> answers;
    std::vector<Heard<ShardDownloader::Fetched>> fetches;
  };

  // The coordinator thread, and its parts of a pass.
  void coordinate() EXCLUDES(mutex_, published_mutex_);
  // What the threads reported: the shards' new states.
  void apply(Reports& reports) EXCLUDES(mutex_, published_mutex_);
  // Narrows the ready range to the consumer's position (emptied by a new generation) and
  // publishes it: before anything is evicted. A reposition drops the look-ups still queued.
  void narrow(const Position& at) EXCLUDES(published_mutex_);
  // The walk and what follows from it: look-ups, the ready range, withdrawn and new fetches,
  // evictions. Returns the failed shard's error when the consumer has reached a batch that
  // needs it.
  std::optional<std::string> walk_and_fetch(std::int64_t next_seq) EXCLUDES(published_mutex_);
  // A hit or a miss, the first time the consumer's epoch wants shard r: its state after.
  ShardState count_use(std::size_t r, std::int64_t epoch) EXCLUDES(published_mutex_);
  // The error of a shard the consumer's batch reads whose fetch failed within the deadline;
  // older failures are fetched once more.
  std::optional<std::string> failure_in(std::int64_t next_seq);
  void publish_range() EXCLUDES(published_mutex_);

  // From the look-up and download threads.
  bool answered(ShardResolver::Answer answer) EXCLUDES(mutex_, published_mutex_);
  void fetched(ShardDownloader::Fetched fetch) EXCLUDES(mutex_, published_mutex_);
  void fail_loader(std::exception_ptr error) EXCLUDES(mutex_, published_mutex_);
  double seconds_since(Clock::time_point t) const;

  const std::unique_ptr<PrefetchHost> host_;
  const PlanShape shape_;
  const std::int64_t slot_capacity_;
  const TimeSource& time_;
  const std::unique_ptr<ShardStore> store_;
  EventLog& log_;
  std::atomic<bool> stop_{false};
  const RemotePolicy policy_;  // its cancel flag is stop_

  // The coordinator's alone.
  std::vector<PrefetchShard> shards_;                     // the remote shards with copies, by r
  std::vector<int> remote_of_;                            // by the plan's shard index: its r, or -1
  std::unordered_map<std::string, std::size_t> by_copy_;  // copy path -> r
  BatchesAhead ahead_;  // the plan's answers for the batches ahead
  // How many batches past the consumer's the plan is read and walked: grows while walks reach
  // its end, up to two epochs.
  std::int64_t reach_;
  std::int64_t reach() const { return std::min(2 * shape_.batches_per_epoch, reach_); }
  int resolving_ = 0;   // look-ups queued or under way
  ReadyRange ready_;    // as published
  bool again_ = false;  // a pass changed what the next would find: walk again at once
  std::optional<Clock::time_point> recheck_at_;  // walk again then, though nothing changed

  mutable Mutex mutex_ ACQUIRED_BEFORE(published_mutex_);
  CondVar cv_;  // a report came, the time jumped, or stop_
  Reports reports_ GUARDED_BY(mutex_);
  bool changed_ GUARDED_BY(mutex_) = false;  // a report came since the last pass

  mutable Mutex published_mutex_;
  ReadyRange published_ GUARDED_BY(published_mutex_);
  // The fetch-wait clock: the consumer's next batch, refused since then.
  std::optional<Clock::time_point> blocked_since_ GUARDED_BY(published_mutex_);
  std::int64_t blocked_seq_ GUARDED_BY(published_mutex_) = -1;
  std::uint64_t blocked_generation_ GUARDED_BY(published_mutex_) = 0;
  ShardCacheStats stats_ GUARDED_BY(published_mutex_);

  TimeSource::Listener jumps_;  // wakes the coordinator when time_ jumps
  std::thread coordinator_;
  // Last, so that their threads end first: they report to the members above.
  std::unique_ptr<ShardResolver> resolver_;  // only when some shard is unresolved
  std::unique_ptr<ShardDownloader> downloader_;
};

}  // namespace stoke::detail
