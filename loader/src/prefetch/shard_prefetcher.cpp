#include "prefetch/shard_prefetcher.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "prefetch/shard_walk.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

// How often the coordinator looks at the consumer's position when nothing is reported
// meanwhile. (A poll of the loader's state, not a deadline: real time.)
constexpr auto kPoll = std::chrono::milliseconds(5);
// When other loaders' downloads hold the room, how soon the coordinator looks again.
constexpr auto kRecheck = 4 * kPoll;
// How many batches ahead the walk first plans: it doubles (up to two epochs) while walks reach
// its end, so huge epochs cost memory for the batches the cache's limit can reach, not all.
constexpr std::int64_t kFirstReach = 1024;

RemotePolicy cancelled_by(RemotePolicy policy, const std::atomic<bool>* stop) {
  policy.cancel = stop;
  return policy;
}

}  // namespace

ShardPrefetcher::PlanShape ShardPrefetcher::shape_of(PrefetchHost& host) {
  PlanShape shape;
  host.read([&](const Position&, const PrefetchPlan& plan) {
    shape.batches_per_epoch = plan.batches_per_epoch();
    shape.shards = plan.shards();
  });
  return shape;
}

ShardPrefetcher::ShardPrefetcher(std::unique_ptr<PrefetchHost> host,
                                 std::vector<RemoteShard> shards, std::unique_ptr<ShardStore> store,
                                 const RemotePolicy& policy, const TimeSource& time,
                                 std::int64_t slot_capacity, EventLog& log)
    : host_(std::move(host)),
      shape_(shape_of(*host_)),
      slot_capacity_(slot_capacity),
      time_(time),
      store_(std::move(store)),
      log_(log),
      policy_(cancelled_by(policy, &stop_)),
      ahead_(shape_.batches_per_epoch),
      reach_(std::max<std::int64_t>(kFirstReach, slot_capacity + 2)) {
  remote_of_.assign(shape_.shards, -1);
  bool lookups = false;  // (look-up threads are started only for unresolved shards)
  for (std::size_t r = 0; r < shards.size(); ++r) {
    PrefetchShard& shard = shards_.emplace_back();
    shard.remote = std::move(shards[r]);
    // (A Parquet file holds several of the plan's shards, its row groups: one download.)
    for (std::size_t k = 0; k < shard.remote.shards; ++k)
      remote_of_[shard.remote.shard + k] = static_cast<int>(r);
    if (shard.remote.unresolved) {
      shard.state = ShardState::kUnresolved;
      lookups = true;
    } else {
      by_copy_[shard.remote.copy] = r;
    }
  }
  const auto fail = [this](std::exception_ptr error) { fail_loader(std::move(error)); };
  downloader_ = std::make_unique<ShardDownloader>(
      kFetchThreads, *store_, policy_, time_, log_,
      [this](ShardDownloader::Fetched f) { fetched(std::move(f)); }, fail);
  if (lookups) {
    resolver_ = std::make_unique<ShardResolver>(
        kResolveThreads, policy_, log_,
        [this](ShardResolver::Answer a) { return answered(std::move(a)); }, fail);
  }
  // A jump may pass a deadline the coordinator sleeps towards: it looks at the time again. (A
  // listener only signals; a wake-up lost to the race with its wait costs one kPoll.)
  jumps_ = time_.listen([this] { cv_.notify_all(); });
  coordinator_ = std::thread([this] { coordinate(); });
}

ShardPrefetcher::~ShardPrefetcher() {
  jumps_ = TimeSource::Listener();
  {
    MutexLock lock(mutex_);
    stop_ = true;  // also cancels the transfers in progress
  }
  cv_.notify_all();
  coordinator_.join();
  // (Then the look-up and download threads, as the members go.)
}

double ShardPrefetcher::seconds_since(Clock::time_point t) const {
  return std::chrono::duration<double>(time_.now() - t).count();
}

bool ShardPrefetcher::ready(std::int64_t seq, std::uint64_t generation, bool consumer_next) {
  MutexLock lock(published_mutex_);
  if (generation == published_.generation && seq >= published_.begin && seq < published_.end)
    return true;
  if (consumer_next && !blocked_since_) {
    blocked_since_ = time_.now();
    blocked_seq_ = seq;
    blocked_generation_ = generation;
  }
  return false;
}

ShardCacheStats ShardPrefetcher::stats() const {
  MutexLock lock(published_mutex_);
  ShardCacheStats s = stats_;
  if (blocked_since_) s.fetch_wait_s += seconds_since(*blocked_since_);  // a wait still running
  return s;
}

void ShardPrefetcher::publish_range() {
  MutexLock lock(published_mutex_);
  published_ = ready_;
  // The wait ends when its batch is ready, or when the consumer went elsewhere.
  if (blocked_since_ && (blocked_generation_ != ready_.generation ||
                         (blocked_seq_ >= ready_.begin && blocked_seq_ < ready_.end) ||
                         blocked_seq_ < ready_.begin)) {
    stats_.fetch_wait_s += seconds_since(*blocked_since_);
    blocked_since_.reset();
  }
}

void ShardPrefetcher::fail_loader(std::exception_ptr error) {
  host_->fail(std::move(error));
}

bool ShardPrefetcher::answered(ShardResolver::Answer answer) {
  // The time is taken before the failure is counted: whoever sees the count and then moves the
  // clock finds the failure that old.
  const Clock::time_point at = time_.now();
  {
    MutexLock lock(mutex_);
    if (stop_) return false;
    // (A failed look-up is counted before any pass can publish what follows from it.)
    if (!answer.error.empty()) {
      MutexLock published(published_mutex_);
      stats_.fetch_failures += 1;
    }
    reports_.answers.push_back({std::move(answer), at});
    changed_ = true;
  }
  cv_.notify_all();
  return true;
}

void ShardPrefetcher::fetched(ShardDownloader::Fetched fetch) {
  const Clock::time_point at = time_.now();  // before the count, as in answered()
  {
    MutexLock lock(mutex_);
    if (stop_) return;
    {
      MutexLock published(published_mutex_);
      stats_.bytes_fetched += fetch.bytes;
      if (fetch.state == ShardState::kFailed) stats_.fetch_failures += 1;
    }
    reports_.fetches.push_back({std::move(fetch), at});
    changed_ = true;
  }
  cv_.notify_all();
}

void ShardPrefetcher::coordinate() {
  try {
    std::optional<Position> last;
    for (;;) {
      Position at;
      host_->read([&](const Position& consumer, const PrefetchPlan& plan) {
        at = consumer;
        // The first positions of batches [next_seq, next_seq + reach()] and the shuffle windows
        // of their epochs: only what the last reading of this generation lacks.
        if (!consumer.stopped)
          ahead_.read(plan, consumer.generation, consumer.next_seq, consumer.next_seq + reach());
      });
      if (at.stopped) return;
      Reports reports;
      {
        MutexLock lock(mutex_);
        if (stop_) return;
        // A pass follows the consumer's moves and the threads' reports; nothing else changes
        // what it would find.
        const bool recheck = recheck_at_ && time_.now() >= *recheck_at_;
        if (last && last->next_seq == at.next_seq && last->generation == at.generation &&
            !changed_ && !again_ && !recheck) {
          cv_.wait_for(lock, kPoll);
          continue;
        }
        changed_ = false;
        std::swap(reports, reports_);
      }
      again_ = false;
      recheck_at_.reset();
      last = at;
      apply(reports);
      narrow(at);
      const std::int64_t before = ready_.end;
      const std::optional<std::string> failure = walk_and_fetch(at.next_seq);
      if (ready_.end > before) host_->ready_changed();  // like a transfer's end
      if (failure) {
        fail_loader(std::make_exception_ptr(Error(*failure)));
        return;
      }
    }
  } catch (...) {
    fail_loader(std::current_exception());
  }
}

void ShardPrefetcher::apply(Reports& reports) {
  for (const Heard<ShardResolver::Answer>& heard : reports.answers) {
    const ShardResolver::Answer& answer = heard.report;
    PrefetchShard& shard = shards_[answer.r];
    --resolving_;
    if (!answer.error.empty()) {
      // As without the cache: the workers read it from the server, and a shard that cannot be
      // had is a bad shard there (its samples skipped and named), not the loader's end.
      shard.state = ShardState::kUncached;
      shard.lookup_failed = true;
      shard.failed_at = heard.at;
    } else if (answer.object.etag.empty()) {
      shard.state = ShardState::kUncached;  // no version to name a copy by
    } else {
      shard.remote.size = answer.object.size;
      shard.remote.copy =
          store_->copy_path(shard.remote.url, answer.object.size, answer.object.etag);
      by_copy_[shard.remote.copy] = answer.r;
      shard.state = ShardState::kAbsent;
    }
  }
  for (Heard<ShardDownloader::Fetched>& heard : reports.fetches) {
    ShardDownloader::Fetched& fetch = heard.report;
    PrefetchShard& shard = shards_[fetch.r];
    downloader_->ended(shard.remote.size);
    shard.state = fetch.state;
    if (fetch.state == ShardState::kFailed) {
      shard.error = std::move(fetch.error);
      shard.failed_at = heard.at;
    }
  }
}

void ShardPrefetcher::narrow(const Position& at) {
  if (at.generation != ready_.generation && resolver_) {
    // A reposition: the look-ups queued for the old position wait no more (those under way end).
    const std::vector<std::size_t> dropped = resolver_->drop_queued();
    for (std::size_t r : dropped) shards_[r].state = ShardState::kUnresolved;
    resolving_ -= static_cast<int>(dropped.size());
  }
  if (at.generation != ready_.generation || at.next_seq < ready_.begin || at.next_seq > ready_.end)
    ready_.end = at.next_seq;
  ready_.begin = at.next_seq;
  ready_.generation = at.generation;
  publish_range();
}

ShardState ShardPrefetcher::count_use(std::size_t r, std::int64_t epoch) {
  PrefetchShard& shard = shards_[r];
  shard.counted_epoch = epoch;
  if (shard.state == ShardState::kUncached) return shard.state;
  const bool fetching = shard.state == ShardState::kFetching;
  // The file's time is touched here: its last use, for the LRU order of every sharing loader.
  const bool on_disk = !fetching && store_->use(shard.remote.copy);
  if (shard.state == ShardState::kAbsent && on_disk) shard.state = ShardState::kLocal;
  if (shard.state == ShardState::kLocal && !on_disk)
    shard.state = ShardState::kAbsent;  // evicted elsewhere
  MutexLock published(published_mutex_);
  if (on_disk)
    stats_.hits += 1;
  else
    stats_.misses += 1;
  return shard.state;
}

std::optional<std::string> ShardPrefetcher::walk_and_fetch(std::int64_t next_seq) {
  const std::int64_t horizon = next_seq + reach();
  ShardWalk::Start start;
  start.next_seq = next_seq;
  start.ready_end = ready_.end;
  start.horizon = horizon;
  start.ready_horizon = std::min<std::int64_t>(horizon, next_seq + slot_capacity_ + 1);
  start.limit = store_->limit();
  start.resolving = resolving_;
  start.now = time_.now();
  start.retry_after_s = policy_.deadline_s;
  ShardWalk walk(ahead_, shards_, remote_of_, start);
  const std::int64_t epoch = next_seq / shape_.batches_per_epoch;
  while (walk.next_batch())
    for (std::size_t r : walk.first_uses()) walk.found(r, count_use(r, epoch));
  const ShardWalk::Result& result = walk.result();

  for (std::size_t r : result.retried) {
    shards_[r].lookup_failed = false;
    shards_[r].state = ShardState::kUnresolved;
  }
  for (std::size_t r : result.look_ups) {
    shards_[r].state = ShardState::kResolving;
    resolver_->look_up(r, shards_[r].remote.url);
    ++resolving_;
  }
  if (result.ready_end != ready_.end) {
    ready_.end = result.ready_end;
    publish_range();
  }
  // The walk ran out of planned batches before the limit (or the shards) stopped it, and not for
  // want of sizes: the next pass plans twice as far, up to two epochs.
  if (result.plan_further && reach_ < 2 * shape_.batches_per_epoch) {
    reach_ = std::min(2 * shape_.batches_per_epoch, 2 * reach_);
    again_ = true;
  }

  if (std::optional<std::string> failure = failure_in(next_seq)) return failure;

  // Fetches no longer wanted (the consumer went elsewhere) leave the queue.
  downloader_->withdraw(shards_, result.wanted);
  // The shards of the batch the consumer waits for may be fetched past the limit.
  std::vector<std::size_t> waited_for;
  if (ready_.end == next_seq) {
    std::vector<WindowRef> refs;
    ahead_.windows_of(next_seq, refs);
    for (const WindowRef& w : refs)
      waited_for.insert(waited_for.end(), ahead_.shards(w).begin(), ahead_.shards(w).end());
  }
  const ShardDownloader::Scheduled scheduled =
      downloader_->schedule(shards_, result.order, waited_for);
  again_ = again_ || scheduled.changed;
  if (scheduled.room_held) recheck_at_ = time_.now() + kRecheck;
  for (const std::string& path : scheduled.evicted) {
    if (const auto it = by_copy_.find(path); it != by_copy_.end())
      shards_[it->second].state = ShardState::kAbsent;
  }
  if (!scheduled.evicted.empty()) {
    MutexLock published(published_mutex_);
    stats_.evictions += static_cast<std::int64_t>(scheduled.evicted.size());
  }
  return std::nullopt;
}

std::optional<std::string> ShardPrefetcher::failure_in(std::int64_t next_seq) {
  // The consumer waits for a batch with a shard that could not be had: the loader stops with the
  // fetch's error, unless that failure is old enough for the server to be back (then it is
  // fetched once more).
  if (ready_.end != next_seq) return std::nullopt;
  std::vector<WindowRef> refs;
  ahead_.windows_of(next_seq, refs);
  for (const WindowRef& w : refs) {
    for (std::size_t s : ahead_.shards(w)) {
      const int ri = remote_of_[s];
      if (ri < 0 || shards_[static_cast<std::size_t>(ri)].state != ShardState::kFailed) continue;
      PrefetchShard& shard = shards_[static_cast<std::size_t>(ri)];
      if (seconds_since(shard.failed_at) < policy_.deadline_s) return shard.error;
      shard.state = ShardState::kAbsent;
    }
  }
  return std::nullopt;
}

}  // namespace stoke::detail
