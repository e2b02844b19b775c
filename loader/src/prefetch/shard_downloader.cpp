#include "prefetch/shard_downloader.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "common/number_text.hpp"
#include "common/text.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

ShardDownloader::ShardDownloader(int threads, const ShardStore& store, const RemotePolicy& policy,
                                 const TimeSource& time, EventLog& log, Report report, Fail fail)
    : threads_count_(threads),
      store_(store),
      policy_(policy),
      time_(time),
      log_(log),
      report_(std::move(report)),
      fail_(std::move(fail)) {
  try {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  } catch (...) {
    stop_and_join();
    throw;
  }
}

ShardDownloader::~ShardDownloader() {
  stop_and_join();
}

void ShardDownloader::stop_and_join() {
  {
    MutexLock lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

double ShardDownloader::seconds_since(Clock::time_point t) const {
  return std::chrono::duration<double>(time_.now() - t).count();
}

std::size_t ShardDownloader::queued() const {
  MutexLock lock(mutex_);
  return queue_.size();
}

bool ShardDownloader::needed_now(const PrefetchShard& shard,
                                 const std::vector<std::size_t>& waited_for) {
  return std::any_of(waited_for.begin(), waited_for.end(), [&](std::size_t s) {
    return s >= shard.remote.shard && s - shard.remote.shard < shard.remote.shards;
  });
}

ShardDownloader::Scheduled ShardDownloader::schedule(std::vector<PrefetchShard>& shards,
                                                     const std::vector<std::size_t>& order,
                                                     const std::vector<std::size_t>& waited_for) {
  Scheduled out;
  std::set<std::string> keep;
  for (std::size_t r : order) keep.insert(shards[r].remote.copy);
  std::size_t queued_now = queued();  // (as the walk found it, and what this adds)
  std::vector<std::string> evicted;
  for (std::size_t r : order) {
    PrefetchShard& shard = shards[r];
    const RemoteShard& remote = shard.remote;
    if (shard.state != ShardState::kAbsent) continue;
    if (store_.use(remote.copy)) {  // another loader fetched it
      shard.state = ShardState::kLocal;
      out.changed = true;
      continue;
    }
    if (queued_now >= static_cast<std::size_t>(threads_count_)) break;
    evicted.clear();
    std::optional<ShardStore::Reservation> room;
    ShardStore::Room found = ShardStore::Room::kFull;
    try {
      found =
          store_.reserve(remote.copy, remote.size, keep, false, policy_.deadline_s, evicted, room);
      if (found == ShardStore::Room::kWait || found == ShardStore::Room::kFull) {
        // Room comes as the consumer moves on, as the fetches under way end (their copies may
        // no longer be wanted) or as other loaders' downloads end (their copies may be
        // evicted), unless none can help: the consumer waits for this very batch, nothing of
        // this loader's is being fetched, and its shards do not fit beside the copies it still
        // needs (or other loaders' downloads have held the room past the deadline).
        const bool now = needed_now(shard, waited_for) && in_flight_bytes_ == 0;
        if (now && found == ShardStore::Room::kWait && !no_room_since_)
          no_room_since_ = time_.now();
        const bool waited = no_room_since_ && seconds_since(*no_room_since_) > policy_.deadline_s;
        if (!now || (found == ShardStore::Room::kWait && !waited)) {
          if (found == ShardStore::Room::kWait) out.room_held = true;
          break;
        }
        if (!over_limit_said_) {
          over_limit_said_ = true;
          log_.post("shard cache: one batch reads more shards than cache_limit (" +
                    bytes_text(store_.limit()) + ") holds with the copies and downloads in " +
                    store_.folder() + "; fetching past the limit");
        }
        found =
            store_.reserve(remote.copy, remote.size, keep, true, policy_.deadline_s, evicted, room);
      }
    } catch (const ShardCacheFolderError& e) {
      log_.post("shard cache: " + std::string(e.what()) + "; the workers read " +
                redact_url(remote.url) + " from the server");
      shard.state = ShardState::kUncached;
      out.changed = true;
      continue;
    }
    // (No copy in `keep` is evicted: the shards of `order` keep their states.)
    out.evicted.insert(out.evicted.end(), evicted.begin(), evicted.end());
    if (needed_now(shard, waited_for)) no_room_since_.reset();
    if (found == ShardStore::Room::kPresent) {
      shard.state = ShardState::kLocal;
      out.changed = true;
      continue;
    }
    if (found == ShardStore::Room::kReserved && store_.foreign(remote.copy))
      log_.post("shard cache: " + remote.copy +
                " is not a copy stoke recorded (a planted file or symbolic link, or an earlier "
                "version's copy): not read; " +
                redact_url(remote.url) + " is fetched again over it");
    // kReserved, or kElsewhere: a download thread waits for the other loader's download.
    shard.state = ShardState::kFetching;
    in_flight_bytes_ += remote.size;
    {
      MutexLock lock(mutex_);
      queue_.push_back({r, remote.url, remote.copy, remote.size, std::move(room)});
    }
    ++queued_now;
    cv_.notify_all();
  }
  return out;
}

void ShardDownloader::withdraw(std::vector<PrefetchShard>& shards,
                               const std::vector<char>& wanted) {
  std::deque<Job> withdrawn;  // (its rooms, and their partial files, go after the lock)
  {
    MutexLock lock(mutex_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (wanted[it->r]) {
        ++it;
        continue;
      }
      withdrawn.push_back(std::move(*it));
      it = queue_.erase(it);
    }
  }
  for (const Job& job : withdrawn) {
    shards[job.r].state = ShardState::kAbsent;
    in_flight_bytes_ -= job.size;
  }
}

void ShardDownloader::run() {
  try {
    for (;;) {
      Job job;
      {
        MutexLock lock(mutex_);
        while (!stop_ && queue_.empty()) cv_.wait(lock);
        if (stop_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      report_(fetch(std::move(job)));
    }
  } catch (...) {
    fail_(std::current_exception());
  }
}

ShardDownloader::Fetched ShardDownloader::fetch(Job job) {
  Fetched out;
  out.r = job.r;
  std::string error;
  bool uncached = false;
  bool absent = false;  // another loader's download of it ended without a copy: schedule again
  try {
    if (job.room)
      out.bytes = store_.fetch(job.url, std::move(*job.room), policy_);
    else
      absent = !store_.wait_for_other(job.copy, policy_);
  } catch (const ShardCacheFolderError& e) {
    uncached = true;
    error = e.what();
  } catch (const Error& e) {
    error = e.what();
  }
  if (out.bytes > 0 && out.bytes < job.size)
    log_.post("shard cache: " + redact_url(job.url) + " is " + std::to_string(out.bytes) +
              " bytes on the server, " + std::to_string(job.size) +
              " when it was indexed; its members past that end read as corrupt");
  if (uncached)
    log_.post("shard cache: " + error + "; the workers read " + redact_url(job.url) +
              " from the server");
  if (error.empty()) {
    out.state = absent ? ShardState::kAbsent : ShardState::kLocal;
  } else if (uncached) {
    out.state = ShardState::kUncached;
  } else {
    out.state = ShardState::kFailed;
    out.error = "cannot fetch shard " + redact_url(job.url) + ": " + error;
  }
  return out;
}

}  // namespace stoke::detail
