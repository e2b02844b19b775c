#pragma once
// The shard prefetcher's download side: which wanted shards are fetched now and the room each
// gets in the shard cache's folder (schedule()), and threads that fetch them whole into their
// rooms, in the order queued, and report each fetch's end. Room for a shard is reserved before
// its fetch is queued (ShardStore::reserve, which evicts the least recently used copies that are
// not wanted), so the limit holds for the folder, every loader's copies and downloads counted;
// when other loaders' downloads hold the room, the prefetcher looks again shortly, and the batch
// the consumer waits for is fetched past the limit once that wait passes the remote deadline.
//
// Thread-safety: schedule(), withdraw() and ended() are the coordinator's (one thread; schedule()
// and withdraw() change the records it owns); the report and fail callbacks are called from the
// download threads, with none of this part's locks held.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.hpp"
#include "common/time_source.hpp"
#include "consumer/event_log.hpp"
#include "data/shard_cache.hpp"
#include "prefetch/prefetch_shard.hpp"
#include "remote/remote.hpp"

namespace stoke::detail {

class ShardDownloader {
 public:
  using Clock = TimeSource::Clock;

  // How a fetch ended.
  struct Fetched {
    std::size_t r = 0;
    std::uint64_t bytes = 0;  // downloaded
    // The shard's state now: kLocal; kAbsent (another loader's download of it, which this one
    // waited for, ended without a copy: fetch it again); kUncached (its copy cannot be written
    // here); or kFailed, with `error`.
    ShardState state = ShardState::kLocal;
    std::string error;
  };
  using Report = std::function<void(Fetched)>;
  using Fail = std::function<void(std::exception_ptr)>;

  // What a schedule() did besides queueing fetches.
  struct Scheduled {
    bool changed = false;              // a shard's state changed without a fetch: walk again
    bool room_held = false;            // other loaders' downloads held the room: look again shortly
    std::vector<std::string> evicted;  // the copies removed to make room
  };

  // Starts `threads` download threads, each transfer under `policy`, the waits for room on
  // `time`. REQUIRES: `store`, `time` and `log` outlive it.
  ShardDownloader(int threads, const ShardStore& store, const RemotePolicy& policy,
                  const TimeSource& time, EventLog& log, Report report, Fail fail);
  // Stops and joins the threads (a transfer under way ends first: the policy's cancel flag cuts
  // it short); the rooms of fetches still queued are the folder's again.
  ~ShardDownloader();
  ShardDownloader(const ShardDownloader&) = delete;
  ShardDownloader& operator=(const ShardDownloader&) = delete;

  // Fetches the wanted shards that are not on disk, in `order`, at most as many queued as there
  // are threads: reserves room for each (evicting copies of shards not in `order`) and queues
  // it (kFetching); one found on disk is kLocal, one whose copy cannot be written kUncached.
  // `waited_for`: the plan's shards of the batch the consumer waits for (empty when it waits
  // for none), which may be fetched past the limit.
  Scheduled schedule(std::vector<PrefetchShard>& shards, const std::vector<std::size_t>& order,
                     const std::vector<std::size_t>& waited_for) EXCLUDES(mutex_);
  // Withdraws the queued fetches of shards that are not `wanted` (by r): they are kAbsent, and
  // their rooms the folder's again.
  void withdraw(std::vector<PrefetchShard>& shards, const std::vector<char>& wanted)
      EXCLUDES(mutex_);
  // The coordinator heard that the fetch of a shard of `size` bytes ended.
  void ended(std::uint64_t size) { in_flight_bytes_ -= size; }

 private:
  struct Job {
    std::size_t r = 0;
    std::string url;
    std::string copy;
    std::uint64_t size = 0;
    // The room reserved for it (none: another loader is downloading it; wait for that).
    std::optional<ShardStore::Reservation> room;
  };
  void run() EXCLUDES(mutex_);
  // Tells the threads to stop taking work and joins them.
  void stop_and_join() EXCLUDES(mutex_);
  Fetched fetch(Job job) EXCLUDES(mutex_);
  std::size_t queued() const EXCLUDES(mutex_);
  // Whether the consumer waits for a batch (whose shards are `waited_for`) that reads `shard`.
  static bool needed_now(const PrefetchShard& shard, const std::vector<std::size_t>& waited_for);
  double seconds_since(Clock::time_point t) const;

  const int threads_count_;
  const ShardStore& store_;
  const RemotePolicy policy_;
  const TimeSource& time_;
  EventLog& log_;
  const Report report_;
  const Fail fail_;

  // The coordinator's alone.
  std::uint64_t in_flight_bytes_ = 0;  // queued and downloading, until ended()
  // Since when the batch the consumer waits for has found no room (other loaders' downloads).
  std::optional<Clock::time_point> no_room_since_;
  bool over_limit_said_ = false;

  mutable Mutex mutex_;
  CondVar cv_;  // a fetch was queued, or stop
  std::deque<Job> queue_ GUARDED_BY(mutex_);
  bool stop_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace stoke::detail
