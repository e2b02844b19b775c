#pragma once
// The shard prefetcher: follows the epoch plan ahead of the workers and fetches the remote
// shards its next batches read, whole, into the shard cache (data/shard_cache.hpp), so that
// workers read local bytes and the network's latency overlaps decoding.
//
// How it works. The plan says, for each batch, which shuffle windows (runs of shards) its
// positions fall in. A coordinator thread walks the batches from the consumer's position on,
// in order, collecting the shards they read until their bytes would pass the cache's limit
// (the shards of the ready batches and of the first batch not yet ready always count, so the
// walk never stalls); those shards are wanted and are never evicted by this loader. Wanted
// shards not on disk are fetched by kFetchThreads downloader threads, in the order they are
// needed. Room for each is reserved in the folder before it is queued (ShardStore::reserve,
// which evicts the least recently used copies that are not wanted): the limit holds for the
// folder, every loader's copies and downloads counted. When other loaders' downloads hold the
// room, the coordinator looks again shortly (and, for the batch the consumer waits for, fetches
// past the limit once that wait passes the remote deadline). A batch is ready when every shard
// it reads is on disk; the supervisor hands a batch to the workers only once it is ready (the
// gate, ready()), so a batch never waits on the network inside a worker. The time the
// consumer's next batch was held back by the gate is measured (fetch_wait_s) instead of hidden
// in decode times.
//
// Shards of a dataset-level index (RemoteShard::unresolved) come without a size or a version:
// the walk asks kResolveThreads threads to look them up (a HEAD: size and ETag, hence the copy's
// name) in the order it meets them, at most kResolveAhead at a time. The walk wants no shard past
// the first it cannot size yet, so the limit holds; once a shard is looked up it is like any
// other. A server that sends no ETag, or a look-up that fails (past the remote deadline), leaves
// that shard to the workers' ranged reads (uncached): a shard that cannot be had is then a bad
// shard, as without the cache. A failed look-up is tried again once the deadline has passed
// since, when the walk meets the shard again; a reposition drops the look-ups still queued.
//
// Failures: a fetch that fails past the remote deadline (remote/remote.hpp) marks its shard
// failed; when the consumer reaches the first batch that needs it, the loader stops with an
// Error naming the URL and the last status (a loader error, not skipped samples); a failure
// older than the deadline is retried once first (the server may be back). A shard whose copy
// cannot be written here (the folder's disk full, say) is read by the workers from the server.
//
// Time: a failure's age, the look again when other loaders' downloads hold the room, how long
// the consumer's batch waited for room and for its shards (fetch_wait_s) are read from the
// TimeSource the loader was given (common/time_source.hpp); the coordinator listens for its
// jumps, so a test that moves a ManualTime past a deadline sees the prefetcher act on it at
// once. The transfers themselves (libcurl's timeouts, the retries' backoff, another loader's
// download stalling) run on real time: they wait for servers and files.
//
// What it sees of its loader is PrefetchHost, below: the consumer's position and the slot
// table's plan (read together, under the loader's lock), a wake-up for the gate's waiters and
// the loader's error. It keeps no copy of the plan: it asks the slot table's, under that lock,
// for the positions and shuffle windows of the batches ahead, which hold for one generation.
//
// Invariant: every batch ready() says yes to reads only shards on disk that this loader wants.
// The published range [ready_lo_, ready_hi_) carries the slot table's generation, so a range
// prepared before a reposition answers no after it; the coordinator narrows the range to the
// consumer's position before it evicts anything. (Another loader sharing the folder may still
// evict a copy: its workers then read those members from the server.)
//
// Thread-safety: ready() and stats() from any thread, ready() also with the loader's lock held.
// They take only published_mutex_, held for a few instructions at a time (and the time
// source's own lock, to read it); the slow part (directory scans, file times) runs under mutex_,
// which the gate never waits for. Lock order: the loader's lock, then mutex_, then
// published_mutex_; the coordinator calls PrefetchHost::read (which takes the loader's lock)
// only while it holds neither of its own.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/mutex.hpp"
#include "common/time_source.hpp"
#include "data/dataset_index.hpp"
#include "plan/epoch_plan.hpp"
#include "remote/remote.hpp"
#include "data/shard_cache.hpp"
#include "consumer/event_log.hpp"

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
  using Look = std::function<void(const Consumer& at, const EpochPlan& plan)>;

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
  static constexpr int kResolveAhead = 16;

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
  // kUncached: its copy cannot be written here (or it can have none: no ETag); the workers read
  // it from the server. kUnresolved, kResolving: its size and copy are not known yet.
  enum class State : std::uint8_t {
    kAbsent,
    kFetching,
    kLocal,
    kFailed,
    kUncached,
    kUnresolved,
    kResolving
  };

  // A shuffle window of an epoch.
  struct WindowRef {
    std::int64_t epoch;
    std::size_t window;
    bool operator<(const WindowRef& o) const {
      return epoch != o.epoch ? epoch < o.epoch : window < o.window;
    }
  };

  using Position = PrefetchHost::Consumer;
  // The few numbers of the plan that never change: read from the host's once.
  struct PlanShape {
    std::int64_t batches_per_epoch = 0;
    std::int64_t samples = 0;  // N
    std::size_t shards = 0;
  };
  static PlanShape shape_of(PrefetchHost& host);

  void coordinate() EXCLUDES(mutex_, published_mutex_);
  // Inside PrefetchHost::read: the first positions of batches [at.next_seq, at.next_seq +
  // reach()] and the shuffle windows of their epochs, from the slot table's plan; only what the
  // last reading of this generation lacks. Coordinator only.
  void read_plan(const Position& at, const EpochPlan& plan);
  void download() EXCLUDES(mutex_, published_mutex_);
  // Looks up the unresolved shards the walk queued: their sizes and copies.
  void resolve() EXCLUDES(mutex_, published_mutex_);
  // Downloads shard r into its reservation, or waits for another loader's download of it.
  void fetch_one(std::size_t r, std::optional<ShardStore::Reservation> room)
      EXCLUDES(mutex_, published_mutex_);
  // Narrows the ready range to the consumer's position (emptied by a new generation) and
  // publishes it: before anything is evicted.
  void narrow(const Position& at) REQUIRES(mutex_) EXCLUDES(published_mutex_);
  // One pass: the wanted shards, the ready range, withdrawn and new fetches, evictions. Returns
  // the failed shard's error when the consumer has reached a batch that needs it.
  std::optional<std::string> step(std::int64_t next_seq) REQUIRES(mutex_)
      EXCLUDES(published_mutex_);
  // Fetches wanted shards that are not on disk, a few at a time, in `order`.
  void schedule(const std::vector<std::size_t>& order, std::int64_t next_seq) REQUIRES(mutex_)
      EXCLUDES(published_mutex_);
  // Whether the consumer waits for a batch (its windows `blocking`) that reads shard r.
  bool needed_now(std::size_t r, std::int64_t next_seq, const std::vector<WindowRef>& blocking)
      REQUIRES(mutex_);
  // The windows batch `seq` reads, each once. REQUIRES: seq is within read_plan()'s last range.
  void batch_windows(std::int64_t seq, std::vector<WindowRef>& out) const;
  // REQUIRES: epoch is within read_plan()'s last range.
  const std::vector<ShardWindow>& windows(std::int64_t epoch) const { return windows_.at(epoch); }
  // Every remote shard of the window is on disk or read from the server (memoized per step).
  bool window_local(const WindowRef& w) REQUIRES(mutex_);
  // A hit or a miss, the first time the consumer's epoch wants the shard.
  void count_use(std::size_t r, std::int64_t epoch) REQUIRES(mutex_) EXCLUDES(published_mutex_);
  void publish_range() REQUIRES(mutex_) EXCLUDES(published_mutex_);
  void fail_loader(std::exception_ptr error) EXCLUDES(mutex_, published_mutex_);
  double seconds_since(TimeSource::Clock::time_point t) const;

  const std::unique_ptr<PrefetchHost> host_;
  const PlanShape shape_;
  const std::int64_t bpe_;
  const std::int64_t slot_capacity_;
  // How many batches past the consumer's the plan is read and walked (the coordinator's alone):
  // grows while walks reach its end, up to two epochs.
  std::int64_t reach_;
  std::int64_t reach() const { return std::min(2 * bpe_, reach_); }
  const TimeSource& time_;
  // The remote shards with copies ("r" indexes these). An unresolved one's size and copy are
  // written once, by resolve() under mutex_, before its state leaves kResolving; only read after.
  std::vector<RemoteShard> shards_;
  const std::unique_ptr<ShardStore> store_;
  EventLog& log_;
  std::atomic<bool> stop_{false};
  RemotePolicy policy_;         // its cancel flag is stop_
  std::vector<int> remote_of_;  // by shard index: its r, or -1 (a local shard, or no copy)
  std::unordered_map<std::string, std::size_t> by_copy_ GUARDED_BY(mutex_);  // copy path -> r

  // The plan's answers for the batches ahead (read_plan()), valid for plan_generation_: the
  // coordinator's alone (it writes them under the loader's lock and reads them in its steps).
  std::uint64_t plan_generation_ = 0;
  std::int64_t firsts_from_ = 0;             // the batch firsts_[0] is of
  // The order positions each batch reads (EpochPlan::order_spans), by batch.
  std::deque<std::array<EpochPlan::OrderSpan, 2>> firsts_;
  std::map<std::int64_t, std::vector<ShardWindow>> windows_;  // by epoch

  mutable Mutex mutex_ ACQUIRED_BEFORE(published_mutex_);
  CondVar cv_;  // a fetch was queued or ended, the time jumped, or stop_
  std::vector<State> state_ GUARDED_BY(mutex_);
  std::vector<std::int64_t> counted_epoch_ GUARDED_BY(mutex_);   // hits/misses counted for
  std::vector<std::string> errors_ GUARDED_BY(mutex_);           // kFailed shards' errors
  std::vector<Clock::time_point> failed_at_ GUARDED_BY(mutex_);  // (time_'s)
  std::deque<std::size_t> queue_ GUARDED_BY(mutex_);             // r to fetch, in the order needed
  std::deque<std::size_t> lookups_ GUARDED_BY(mutex_);           // r to look up, in the order met
  int resolving_ GUARDED_BY(mutex_) = 0;                         // queued and under way
  bool no_etag_logged_ GUARDED_BY(mutex_) = false;
  int lookup_errors_logged_ GUARDED_BY(mutex_) = 0;
  // By r: kUncached because its look-up failed (at failed_at_): looked up again after the
  // deadline.
  std::vector<char> lookup_failed_ GUARDED_BY(mutex_);
  // By r: the room reserved for a queued fetch (none: another loader is downloading it).
  std::vector<std::optional<ShardStore::Reservation>> rooms_ GUARDED_BY(mutex_);
  // When to step again though nothing changed: other loaders' downloads held the room.
  std::optional<Clock::time_point> recheck_at_ GUARDED_BY(mutex_);
  // Since when the batch the consumer waits for has found no room (other loaders' downloads).
  std::optional<Clock::time_point> no_room_since_ GUARDED_BY(mutex_);
  std::uint64_t in_flight_bytes_ GUARDED_BY(mutex_) = 0;  // queued and downloading
  bool changed_ GUARDED_BY(mutex_) = false;  // a fetch ended or a copy appeared since a step
  std::int64_t lo_ GUARDED_BY(mutex_) = 0;   // the ready range and its generation, as published
  std::int64_t hi_ GUARDED_BY(mutex_) = 0;
  std::uint64_t generation_ GUARDED_BY(mutex_) = 0;
  std::map<WindowRef, bool> local_ GUARDED_BY(mutex_);
  bool over_limit_logged_ GUARDED_BY(mutex_) = false;

  mutable Mutex published_mutex_;
  std::int64_t ready_lo_ GUARDED_BY(published_mutex_) = 0;
  std::int64_t ready_hi_ GUARDED_BY(published_mutex_) = 0;
  std::uint64_t ready_generation_ GUARDED_BY(published_mutex_) = 0;
  // The fetch-wait clock: the consumer's next batch, refused since then.
  std::optional<Clock::time_point> blocked_since_ GUARDED_BY(published_mutex_);
  std::int64_t blocked_seq_ GUARDED_BY(published_mutex_) = -1;
  std::uint64_t blocked_generation_ GUARDED_BY(published_mutex_) = 0;
  ShardCacheStats stats_ GUARDED_BY(published_mutex_);

  TimeSource::Listener jumps_;        // wakes the coordinator when time_ jumps
  std::vector<std::thread> threads_;  // the coordinator, the downloaders, the look-ups
};

}  // namespace stoke::detail
