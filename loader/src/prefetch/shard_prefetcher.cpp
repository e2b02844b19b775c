#include "prefetch/shard_prefetcher.hpp"

#include <algorithm>
#include <set>

#include "common/number_text.hpp"
#include "common/text.hpp"
#include "remote/remote.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

// How often the coordinator looks at the consumer's position when no fetch ends meanwhile.
// (A poll of the loader's state, not a deadline: real time.)
constexpr auto kPoll = std::chrono::milliseconds(5);
// How many shards a walk looks at past the first one it cannot size, for more to look up.
constexpr std::size_t kBlindLook = 4096;
// How many batches ahead the walk first plans: it doubles (up to two epochs) while walks reach
// its end, so huge epochs cost memory for the batches the cache's limit can reach, not all.
constexpr std::int64_t kFirstReach = 1024;
// Failed look-ups logged (the rest are alike, as a rule: a server that is down).
constexpr int kLookupErrorsLogged = 8;

}  // namespace

ShardPrefetcher::PlanShape ShardPrefetcher::shape_of(PrefetchHost& host) {
  PlanShape shape;
  host.read([&](const Position&, const EpochPlan& plan) {
    shape.batches_per_epoch = plan.batches_per_epoch();
    shape.samples = plan.config().samples;
    const std::size_t starts = plan.config().shard_starts.size();
    shape.shards = starts == 0 ? 0 : starts - 1;
  });
  return shape;
}

ShardPrefetcher::ShardPrefetcher(std::unique_ptr<PrefetchHost> host,
                                 std::vector<RemoteShard> shards, std::unique_ptr<ShardStore> store,
                                 const RemotePolicy& policy, const TimeSource& time,
                                 std::int64_t slot_capacity, EventLog& log)
    : host_(std::move(host)),
      shape_(shape_of(*host_)),
      bpe_(shape_.batches_per_epoch),
      slot_capacity_(slot_capacity),
      reach_(std::max<std::int64_t>(kFirstReach, slot_capacity + 2)),
      time_(time),
      shards_(std::move(shards)),
      store_(std::move(store)),
      log_(log),
      policy_(policy) {
  policy_.cancel = &stop_;
  remote_of_.assign(shape_.shards, -1);
  // (Clang's thread-safety analysis does not look inside constructors: no other thread yet.)
  state_.assign(shards_.size(), State::kAbsent);
  bool lookups = false;  // (look-up threads are started only for unresolved shards)
  for (std::size_t r = 0; r < shards_.size(); ++r) {
    remote_of_[shards_[r].shard] = static_cast<int>(r);
    if (shards_[r].unresolved) {
      state_[r] = State::kUnresolved;
      lookups = true;
    } else {
      by_copy_[shards_[r].copy] = r;
    }
  }
  counted_epoch_.assign(shards_.size(), -1);
  lookup_failed_.assign(shards_.size(), 0);
  errors_.resize(shards_.size());
  failed_at_.resize(shards_.size());
  rooms_.resize(shards_.size());
  // A jump may pass a deadline the coordinator sleeps towards: it looks at the time again. (A
  // listener only signals; a wake-up lost to the race with its wait costs one kPoll.)
  jumps_ = time_.listen([this] { cv_.notify_all(); });
  try {
    threads_.emplace_back([this] { coordinate(); });
    for (int i = 0; i < kFetchThreads; ++i) threads_.emplace_back([this] { download(); });
    for (int i = 0; lookups && i < kResolveThreads; ++i)
      threads_.emplace_back([this] { resolve(); });
  } catch (...) {
    stop_ = true;
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    throw;
  }
}

ShardPrefetcher::~ShardPrefetcher() {
  jumps_ = TimeSource::Listener();
  {
    MutexLock lock(mutex_);
    stop_ = true;  // also cancels the transfers in progress
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

double ShardPrefetcher::seconds_since(Clock::time_point t) const {
  return std::chrono::duration<double>(time_.now() - t).count();
}

bool ShardPrefetcher::ready(std::int64_t seq, std::uint64_t generation, bool consumer_next) {
  MutexLock lock(published_mutex_);
  if (generation == ready_generation_ && seq >= ready_lo_ && seq < ready_hi_) return true;
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
  ready_lo_ = lo_;
  ready_hi_ = hi_;
  ready_generation_ = generation_;
  // The wait ends when its batch is ready, or when the consumer went elsewhere.
  if (blocked_since_ && (blocked_generation_ != generation_ ||
                         (blocked_seq_ >= lo_ && blocked_seq_ < hi_) || blocked_seq_ < lo_)) {
    stats_.fetch_wait_s += seconds_since(*blocked_since_);
    blocked_since_.reset();
  }
}

void ShardPrefetcher::fail_loader(std::exception_ptr error) {
  host_->fail(std::move(error));
}

void ShardPrefetcher::read_plan(const Position& at, const EpochPlan& plan) {
  const std::int64_t from = at.next_seq;
  const std::int64_t last = at.next_seq + reach();  // the walk's horizon, itself included
  const auto known = static_cast<std::int64_t>(firsts_.size());
  if (at.generation != plan_generation_ || from < firsts_from_ || from > firsts_from_ + known) {
    plan_generation_ = at.generation;  // (a reposition: what was planned may have changed)
    firsts_.clear();
    windows_.clear();
    firsts_from_ = from;
  }
  for (; firsts_from_ < from; ++firsts_from_) firsts_.pop_front();
  for (std::int64_t seq = firsts_from_ + static_cast<std::int64_t>(firsts_.size()); seq <= last;
       ++seq)
    firsts_.push_back(plan.order_spans(seq / bpe_, seq % bpe_));
  for (auto it = windows_.begin(); it != windows_.end() && it->first < from / bpe_;)
    it = windows_.erase(it);
  for (std::int64_t epoch = from / bpe_; epoch <= last / bpe_; ++epoch) {
    if (!windows_.contains(epoch)) windows_.emplace(epoch, plan.shard_windows(epoch));
  }
}

void ShardPrefetcher::coordinate() {
  try {
    std::optional<Position> last;
    for (;;) {
      Position at;
      host_->read([&](const Position& consumer, const EpochPlan& plan) {
        at = consumer;
        if (!consumer.stopped) read_plan(consumer, plan);
      });
      if (at.stopped) return;
      std::optional<std::string> failure;
      bool grew = false;
      {
        MutexLock lock(mutex_);
        if (stop_) return;
        // A step follows the consumer's moves and the fetches' ends; nothing else changes what
        // it would find.
        const bool recheck = recheck_at_ && time_.now() >= *recheck_at_;
        if (last && last->next_seq == at.next_seq && last->generation == at.generation &&
            !changed_ && !recheck) {
          cv_.wait_for(lock, kPoll);
          continue;
        }
        changed_ = false;
        recheck_at_.reset();
        last = at;
        narrow(at);
        const std::int64_t before = hi_;
        failure = step(at.next_seq);
        grew = hi_ > before;
      }
      if (grew) host_->ready_changed();  // like a transfer's end
      if (failure) {
        fail_loader(std::make_exception_ptr(Error(*failure)));
        return;
      }
    }
  } catch (...) {
    fail_loader(std::current_exception());
  }
}

void ShardPrefetcher::download() {
  try {
    for (;;) {
      std::size_t r = 0;
      std::optional<ShardStore::Reservation> room;
      {
        MutexLock lock(mutex_);
        while (!stop_ && queue_.empty()) cv_.wait(lock);
        if (stop_) return;
        r = queue_.front();
        queue_.pop_front();
        room = std::move(rooms_[r]);
        rooms_[r].reset();
      }
      fetch_one(r, std::move(room));
      cv_.notify_all();
    }
  } catch (...) {
    fail_loader(std::current_exception());
  }
}

void ShardPrefetcher::resolve() {
  try {
    for (;;) {
      std::size_t r = 0;
      std::string url;
      {
        MutexLock lock(mutex_);
        while (!stop_ && lookups_.empty()) cv_.wait(lock);
        if (stop_) return;
        r = lookups_.front();
        lookups_.pop_front();
        url = shards_[r].url;
      }
      RemoteObject object;
      std::string error;
      try {
        object = remote_stat(url, policy_);
      } catch (const Error& e) {
        error = e.what();
      }
      bool log_no_etag = false;
      bool log_error = false;
      {
        MutexLock lock(mutex_);
        --resolving_;
        if (stop_) return;
        if (!error.empty()) {
          // As without the cache: the workers read it from the server, and a shard that cannot
          // be had is a bad shard there (its samples skipped and named), not the loader's end.
          state_[r] = State::kUncached;
          lookup_failed_[r] = 1;
          failed_at_[r] = time_.now();
          log_error = lookup_errors_logged_ < kLookupErrorsLogged;
          lookup_errors_logged_ += log_error ? 1 : 0;
        } else if (object.etag.empty()) {
          state_[r] = State::kUncached;  // no version to name a copy by
          log_no_etag = !no_etag_logged_;
          no_etag_logged_ = true;
        } else {
          shards_[r].size = object.size;
          shards_[r].copy = store_->copy_path(url, object.size, object.etag);
          by_copy_[shards_[r].copy] = r;
          state_[r] = State::kAbsent;
        }
        changed_ = true;
        if (!error.empty()) {  // (counted before any step can publish what follows from it)
          MutexLock published(published_mutex_);
          stats_.fetch_failures += 1;
        }
      }
      if (log_no_etag)
        log_.post("shard cache: " + redact_url(url) +
                  " has no ETag on its server (no version to name a copy by): the workers read "
                  "such shards from the server");
      if (log_error)
        log_.post("shard cache: cannot look up " + redact_url(url) + ": " + error +
                  "; the workers read it from the server");
      cv_.notify_all();
    }
  } catch (...) {
    fail_loader(std::current_exception());
  }
}

void ShardPrefetcher::fetch_one(std::size_t r, std::optional<ShardStore::Reservation> room) {
  const RemoteShard& shard = shards_[r];
  std::uint64_t got = 0;
  std::string error;
  bool uncached = false;
  bool absent = false;  // another loader's download of it ended without a copy: schedule again
  try {
    if (room)
      got = store_->fetch(shard.url, std::move(*room), policy_);
    else
      absent = !store_->wait_for_other(shard.copy, policy_);
  } catch (const ShardCacheFolderError& e) {
    uncached = true;
    error = e.what();
  } catch (const Error& e) {
    error = e.what();
  }
  if (got > 0 && got < shard.size)
    log_.post("shard cache: " + redact_url(shard.url) + " is " + std::to_string(got) +
              " bytes on the server, " + std::to_string(shard.size) +
              " when it was indexed; its members past that end read as corrupt");
  if (uncached)
    log_.post("shard cache: " + error + "; the workers read " + redact_url(shard.url) +
              " from the server");
  MutexLock lock(mutex_);
  in_flight_bytes_ -= shard.size;
  if (stop_) return;
  if (error.empty()) {
    state_[r] = absent ? State::kAbsent : State::kLocal;
  } else if (uncached) {
    state_[r] = State::kUncached;
  } else {
    state_[r] = State::kFailed;
    errors_[r] = "cannot fetch shard " + redact_url(shard.url) + ": " + error;
    failed_at_[r] = time_.now();
  }
  changed_ = true;
  MutexLock published(published_mutex_);
  stats_.bytes_fetched += got;
  if (state_[r] == State::kFailed) stats_.fetch_failures += 1;
}

void ShardPrefetcher::batch_windows(std::int64_t seq, std::vector<WindowRef>& out) const {
  out.clear();
  const std::int64_t epoch = seq / bpe_;
  const std::vector<ShardWindow>& ws = windows(epoch);
  const std::int64_t n = shape_.samples;
  for (const EpochPlan::OrderSpan& span : firsts_[static_cast<std::size_t>(seq - firsts_from_)]) {
    const std::int64_t end = span.first + span.count;
    // Positions past N are padding: they wrap to the order's start.
    for (std::int64_t p = span.first; p < end;) {
      const std::int64_t q = p % n;
      const std::int64_t len = std::min(end - p, n - q);
      auto w = std::upper_bound(ws.begin(), ws.end(), q,
                                [](std::int64_t v, const ShardWindow& x) { return v < x.end; });
      for (; w != ws.end() && w->begin < q + len; ++w) {
        const WindowRef ref{epoch, static_cast<std::size_t>(w - ws.begin())};
        if (std::none_of(out.begin(), out.end(), [&](const WindowRef& o) {
              return o.epoch == ref.epoch && o.window == ref.window;
            }))
          out.push_back(ref);
      }
      p += len;
    }
  }
}

bool ShardPrefetcher::window_local(const WindowRef& w) {
  if (const auto it = local_.find(w); it != local_.end()) return it->second;
  bool all = true;
  for (std::size_t s : windows(w.epoch)[w.window].shards) {
    const int r = remote_of_[s];
    if (r < 0) continue;
    const State st = state_[static_cast<std::size_t>(r)];
    if (st != State::kLocal && st != State::kUncached) {
      all = false;
      break;
    }
  }
  local_[w] = all;
  return all;
}

void ShardPrefetcher::count_use(std::size_t r, std::int64_t epoch) {
  if (counted_epoch_[r] == epoch) return;
  counted_epoch_[r] = epoch;
  if (state_[r] == State::kUncached) return;
  const bool fetching = state_[r] == State::kFetching;
  // The file's time is touched here: its last use, for the LRU order of every sharing loader.
  const bool on_disk = !fetching && store_->use(shards_[r].copy);
  if (state_[r] == State::kAbsent && on_disk) state_[r] = State::kLocal;
  if (state_[r] == State::kLocal && !on_disk) state_[r] = State::kAbsent;  // evicted elsewhere
  MutexLock published(published_mutex_);
  if (on_disk)
    stats_.hits += 1;
  else
    stats_.misses += 1;
}

void ShardPrefetcher::narrow(const Position& at) {
  if (at.generation != generation_) {
    // A reposition: the look-ups queued for the old position wait no more (those under way end).
    for (std::size_t r : lookups_) state_[r] = State::kUnresolved;
    resolving_ -= static_cast<int>(lookups_.size());
    lookups_.clear();
  }
  if (at.generation != generation_ || at.next_seq < lo_ || at.next_seq > hi_) hi_ = at.next_seq;
  lo_ = at.next_seq;
  generation_ = at.generation;
  publish_range();
}

std::optional<std::string> ShardPrefetcher::step(std::int64_t next_seq) {
  local_.clear();

  // One walk over the batches from next_seq on, up to two epochs ahead: the shards they read,
  // in that order, are wanted up to the cache's limit; the ready batches and the first one not
  // ready are always wanted whole. The ready range grows over batches whose shards are all on
  // disk, within the walk (and within what the arena's slots can hold ahead), so every ready
  // batch's shards are wanted: kept from eviction.
  const std::int64_t horizon = next_seq + reach();
  const std::int64_t ready_horizon = std::min<std::int64_t>(horizon, next_seq + slot_capacity_ + 1);
  std::vector<WindowRef> refs;
  std::vector<char> wanted(shards_.size(), 0);
  std::vector<std::size_t> order;
  std::set<WindowRef> seen;
  std::uint64_t bytes = 0;
  std::int64_t hi = hi_;
  // Past the first shard not yet looked up, nothing more is wanted (its size is unknown): the
  // walk only queues look-ups, in the order it meets the shards, until kResolveAhead are queued.
  bool blind = false;
  std::size_t blind_looked = 0;  // shards looked at past that one: bounded, on huge plans
  std::int64_t seq = next_seq;
  for (; seq < horizon; ++seq) {
    if (seq > hi && order.size() == shards_.size()) break;
    if (blind && (resolving_ >= kResolveAhead || blind_looked > kBlindLook)) break;
    batch_windows(seq, refs);
    const bool must = seq <= hi;
    bool full = false;
    for (const WindowRef& w : refs) {
      if (!seen.insert(w).second) continue;
      for (std::size_t s : windows(w.epoch)[w.window].shards) {
        const int ri = remote_of_[s];
        if (ri < 0 || wanted[static_cast<std::size_t>(ri)]) continue;
        const auto r = static_cast<std::size_t>(ri);
        // A look-up that failed is tried again once the deadline has passed (the server may be
        // back), unless a ready batch reads the shard (from the server, meanwhile).
        if (!must && state_[r] == State::kUncached && lookup_failed_[r] &&
            seconds_since(failed_at_[r]) >= policy_.deadline_s) {
          lookup_failed_[r] = 0;
          state_[r] = State::kUnresolved;
        }
        if (state_[r] == State::kUnresolved || state_[r] == State::kResolving) {
          blind = true;
          if (state_[r] == State::kUnresolved && resolving_ < kResolveAhead) {
            state_[r] = State::kResolving;
            lookups_.push_back(r);
            ++resolving_;
            cv_.notify_all();
          }
          continue;
        }
        if (blind) {
          ++blind_looked;
          continue;
        }
        if (!must && bytes + shards_[r].size > store_->limit()) {
          full = true;
          break;
        }
        wanted[r] = 1;
        order.push_back(r);
        bytes += shards_[r].size;
        if (w.epoch == next_seq / bpe_) count_use(r, w.epoch);  // the next epoch's when it comes
      }
      if (full) break;
    }
    if (full) break;
    bool local = seq == hi && seq < ready_horizon;
    for (std::size_t k = 0; local && k < refs.size(); ++k) local = window_local(refs[k]);
    if (local) hi = seq + 1;
  }
  if (hi != hi_) {
    hi_ = hi;
    publish_range();
  }
  // The walk ran out of planned batches before the limit (or the shards) stopped it, and not for
  // want of sizes: the next step plans twice as far, up to two epochs.
  if (seq >= horizon && !blind && reach_ < 2 * bpe_) {
    reach_ = std::min(2 * bpe_, 2 * reach_);
    changed_ = true;
  }

  // The consumer waits for a batch with a shard that could not be had: the loader stops with
  // the fetch's error, unless that failure is old enough for the server to be back (then it is
  // fetched once more).
  if (hi_ == next_seq) {
    batch_windows(next_seq, refs);
    for (const WindowRef& w : refs) {
      for (std::size_t s : windows(w.epoch)[w.window].shards) {
        const int ri = remote_of_[s];
        if (ri < 0 || state_[static_cast<std::size_t>(ri)] != State::kFailed) continue;
        const auto r = static_cast<std::size_t>(ri);
        if (seconds_since(failed_at_[r]) < policy_.deadline_s) return errors_[r];
        state_[r] = State::kAbsent;
      }
    }
  }

  // Fetches no longer wanted (the consumer went elsewhere) leave the queue.
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (wanted[*it]) {
      ++it;
      continue;
    }
    state_[*it] = State::kAbsent;
    in_flight_bytes_ -= shards_[*it].size;
    rooms_[*it].reset();  // its partial file goes: the room is the folder's again
    it = queue_.erase(it);
  }
  schedule(order, next_seq);
  return std::nullopt;
}

bool ShardPrefetcher::needed_now(std::size_t r, std::int64_t next_seq,
                                 const std::vector<WindowRef>& blocking) {
  for (std::size_t k = 0; hi_ == next_seq && k < blocking.size(); ++k) {
    const auto& in = windows(blocking[k].epoch)[blocking[k].window].shards;
    if (std::find(in.begin(), in.end(), shards_[r].shard) != in.end()) return true;
  }
  return false;
}

void ShardPrefetcher::schedule(const std::vector<std::size_t>& order, std::int64_t next_seq) {
  std::set<std::string> keep;
  for (std::size_t r : order) keep.insert(shards_[r].copy);
  std::vector<WindowRef> blocking;
  batch_windows(hi_, blocking);
  std::vector<std::string> evicted;
  for (std::size_t r : order) {
    if (state_[r] != State::kAbsent) continue;
    if (store_->use(shards_[r].copy)) {  // another loader fetched it
      state_[r] = State::kLocal;
      changed_ = true;
      continue;
    }
    if (queue_.size() >= static_cast<std::size_t>(kFetchThreads)) break;
    evicted.clear();
    std::optional<ShardStore::Reservation> room;
    ShardStore::Room found = ShardStore::Room::kFull;
    try {
      found = store_->reserve(shards_[r].copy, shards_[r].size, keep, false, policy_.deadline_s,
                              evicted, room);
      if (found == ShardStore::Room::kWait || found == ShardStore::Room::kFull) {
        // Room comes as the consumer moves on, as the fetches under way end (their copies may
        // no longer be wanted) or as other loaders' downloads end (their copies may be
        // evicted), unless none can help: the consumer waits for this very batch, nothing of
        // this loader's is being fetched, and its shards do not fit beside the copies it still
        // needs (or other loaders' downloads have held the room past the deadline).
        const bool now = needed_now(r, next_seq, blocking) && in_flight_bytes_ == 0;
        if (now && found == ShardStore::Room::kWait && !no_room_since_)
          no_room_since_ = time_.now();
        const bool waited = no_room_since_ && seconds_since(*no_room_since_) > policy_.deadline_s;
        if (!now || (found == ShardStore::Room::kWait && !waited)) {
          if (found == ShardStore::Room::kWait) recheck_at_ = time_.now() + 4 * kPoll;
          break;
        }
        if (!over_limit_logged_) {
          over_limit_logged_ = true;
          log_.post("shard cache: one batch reads more shards than cache_limit (" +
                    bytes_text(store_->limit()) + ") holds with the copies and downloads in " +
                    store_->folder() + "; fetching past the limit");
        }
        found = store_->reserve(shards_[r].copy, shards_[r].size, keep, true, policy_.deadline_s,
                                evicted, room);
      }
    } catch (const ShardCacheFolderError& e) {
      log_.post("shard cache: " + std::string(e.what()) + "; the workers read " +
                redact_url(shards_[r].url) + " from the server");
      state_[r] = State::kUncached;
      changed_ = true;
      continue;
    }
    for (const std::string& path : evicted) {
      if (const auto it = by_copy_.find(path); it != by_copy_.end())
        state_[it->second] = State::kAbsent;
    }
    if (!evicted.empty()) {
      MutexLock published(published_mutex_);
      stats_.evictions += static_cast<std::int64_t>(evicted.size());
    }
    if (needed_now(r, next_seq, blocking)) no_room_since_.reset();
    if (found == ShardStore::Room::kPresent) {
      state_[r] = State::kLocal;
      changed_ = true;
      continue;
    }
    if (found == ShardStore::Room::kReserved && store_->foreign(shards_[r].copy))
      log_.post("shard cache: " + shards_[r].copy +
                " is not a copy stoke recorded (a planted file or symbolic link, or an earlier "
                "version's copy): not read; " +
                redact_url(shards_[r].url) + " is fetched again over it");
    // kReserved, or kElsewhere: a downloader waits for the other loader's download.
    state_[r] = State::kFetching;
    in_flight_bytes_ += shards_[r].size;
    rooms_[r] = std::move(room);
    queue_.push_back(r);
    cv_.notify_all();
  }
}

}  // namespace stoke::detail
