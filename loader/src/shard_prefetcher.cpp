#include "shard_prefetcher.hpp"

#include <algorithm>
#include <set>

#include "stoke/error.hpp"
#include "stoke/format.hpp"

namespace stoke::detail {

namespace {

// How often the coordinator looks at the consumer's position when no fetch ends meanwhile.
constexpr auto kPoll = std::chrono::milliseconds(5);

}  // namespace

ShardPrefetcher::ShardPrefetcher(std::shared_ptr<LoaderCore> core, const PlanConfig& plan,
                                 std::vector<RemoteShard> shards,
                                 std::unique_ptr<ShardStore> store, EventLog& log)
    : core_(std::move(core)),
      plan_(plan),
      bpe_(plan_.batches_per_epoch()),
      shards_(std::move(shards)),
      store_(std::move(store)),
      log_(log),
      policy_(remote_policy_from_environment()) {
  policy_.cancel = &stop_;
  remote_of_.assign(plan.shard_starts.empty() ? 0 : plan.shard_starts.size() - 1, -1);
  for (std::size_t r = 0; r < shards_.size(); ++r) {
    remote_of_[shards_[r].shard] = static_cast<int>(r);
    by_copy_[shards_[r].copy] = r;
  }
  // (Clang's thread-safety analysis does not look inside constructors: no other thread yet.)
  state_.assign(shards_.size(), State::kAbsent);
  counted_epoch_.assign(shards_.size(), -1);
  errors_.resize(shards_.size());
  threads_.emplace_back([this] { coordinate(); });
  for (int i = 0; i < kFetchThreads; ++i) threads_.emplace_back([this] { download(); });
}

ShardPrefetcher::~ShardPrefetcher() {
  {
    MutexLock lock(mutex_);
    stop_ = true;  // also cancels the transfers in progress
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool ShardPrefetcher::ready(std::int64_t seq) {
  MutexLock lock(published_mutex_);
  if (seq >= ready_lo_ && seq < ready_hi_) return true;
  if (!blocked_since_) {
    blocked_since_ = Clock::now();
    blocked_seq_ = seq;
  }
  return false;
}

ShardCacheStats ShardPrefetcher::stats() const {
  MutexLock lock(published_mutex_);
  ShardCacheStats s = stats_;
  if (blocked_since_)  // a wait still running counts up to now
    s.fetch_wait_s += std::chrono::duration<double>(Clock::now() - *blocked_since_).count();
  return s;
}

void ShardPrefetcher::publish_range(std::int64_t lo, std::int64_t hi) {
  MutexLock lock(published_mutex_);
  ready_lo_ = lo;
  ready_hi_ = hi;
  if (blocked_since_ && blocked_seq_ >= lo && blocked_seq_ < hi) {
    stats_.fetch_wait_s += std::chrono::duration<double>(Clock::now() - *blocked_since_).count();
    blocked_since_.reset();
  }
}

void ShardPrefetcher::coordinate() {
  std::int64_t last_seq = -1;
  for (;;) {
    std::int64_t next_seq = 0;
    {
      MutexLock lock(core_->mutex);
      if (core_->stop) return;
      next_seq = core_->slots.next_seq();
    }
    std::optional<std::string> failure;
    bool advanced = false;
    {
      MutexLock lock(mutex_);
      if (stop_) return;
      // A step follows the consumer's moves and the fetches' ends; nothing else changes what it
      // would find.
      if (next_seq == last_seq && !changed_) {
        cv_.wait_for(lock, kPoll);
        continue;
      }
      changed_ = false;
      last_seq = next_seq;
      const std::int64_t before = hi_;
      failure = step(next_seq);
      advanced = hi_ > before;
    }
    if (advanced) {
      // Like a transfer's end: the supervisor's eventfd, and the in-process consumer's wait.
      core_->wake();
      core_->cv.notify_all();
    }
    if (failure) {
      MutexLock lock(core_->mutex);
      core_->fail(std::make_exception_ptr(Error(*failure)));
      return;
    }
    MutexLock lock(mutex_);
    if (!stop_ && !changed_) cv_.wait_for(lock, kPoll);
  }
}

void ShardPrefetcher::download() {
  for (;;) {
    std::size_t r = 0;
    {
      MutexLock lock(mutex_);
      while (!stop_ && queue_.empty()) cv_.wait(lock);
      if (stop_) return;
      r = queue_.front();
      queue_.pop_front();
    }
    const RemoteShard& shard = shards_[r];
    std::uint64_t got = 0;
    std::string error;
    try {
      got = store_->fetch(shard.url, shard.size, shard.copy, policy_);
    } catch (const Error& e) {
      error = e.what();
    }
    if (got > 0 && got < shard.size)
      log_.post("shard cache: " + shard.url + " is " + std::to_string(got) +
                " bytes on the server, " + std::to_string(shard.size) +
                " when it was indexed; its members past that end read as corrupt");
    {
      MutexLock lock(mutex_);
      if (stop_) return;
      state_[r] = error.empty() ? State::kLocal : State::kFailed;
      if (!error.empty()) errors_[r] = "cannot fetch shard " + shard.url + ": " + error;
      changed_ = true;
      MutexLock published(published_mutex_);
      stats_.bytes_fetched += got;
    }
    cv_.notify_all();
  }
}

const std::vector<ShardWindow>& ShardPrefetcher::windows(std::int64_t epoch) {
  auto it = windows_.find(epoch);
  if (it == windows_.end()) it = windows_.emplace(epoch, plan_.shard_windows(epoch)).first;
  return it->second;
}

void ShardPrefetcher::batch_windows(std::int64_t seq, std::vector<WindowRef>& out) {
  out.clear();
  const std::int64_t epoch = seq / bpe_;
  const std::vector<ShardWindow>& ws = windows(epoch);
  const std::int64_t n = plan_.config().samples;
  const std::int64_t first = plan_.first_position(epoch, seq % bpe_);
  const std::int64_t end = first + plan_.config().batch;
  // Positions past N are padding: they wrap to the order's start.
  for (std::int64_t p = first; p < end;) {
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

bool ShardPrefetcher::window_local(const WindowRef& w) {
  if (const auto it = local_.find(w); it != local_.end()) return it->second;
  bool all = true;
  for (std::size_t s : windows(w.epoch)[w.window].shards) {
    const int r = remote_of_[s];
    if (r >= 0 && state_[static_cast<std::size_t>(r)] != State::kLocal) {
      all = false;
      break;
    }
  }
  local_[w] = all;
  return all;
}

void ShardPrefetcher::count_use(std::size_t r, std::int64_t epoch) {
  if (counted_epoch_[r] >= epoch) return;
  counted_epoch_[r] = epoch;
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

std::optional<std::string> ShardPrefetcher::step(std::int64_t next_seq) {
  local_.clear();
  for (auto it = windows_.begin(); it != windows_.end() && it->first < next_seq / bpe_;)
    it = windows_.erase(it);
  // The range narrows first: from here on nothing below next_seq counts as ready.
  if (next_seq < lo_ || next_seq > hi_) hi_ = next_seq;
  lo_ = next_seq;
  publish_range(lo_, hi_);

  // One walk over the batches from next_seq on, up to two epochs ahead: the shards they read,
  // in that order, are wanted up to the cache's limit; the ready batches and the first one not
  // ready are always wanted whole. The ready range grows over batches whose shards are all on
  // disk, within the walk, so every ready batch's shards are wanted (kept from eviction).
  const std::int64_t horizon = next_seq + 2 * bpe_;
  // Batches ready past what the arena's slots can hold ahead are of no use yet.
  const std::int64_t ready_horizon =
      std::min<std::int64_t>(horizon, next_seq + core_->view.header().slot_capacity + 1);
  std::vector<WindowRef> refs;
  std::vector<char> wanted(shards_.size(), 0);
  std::vector<std::size_t> order;
  std::set<WindowRef> seen;
  std::uint64_t bytes = 0;
  std::int64_t hi = hi_;
  for (std::int64_t seq = next_seq; seq < horizon; ++seq) {
    if (seq > hi && order.size() == shards_.size()) break;
    batch_windows(seq, refs);
    const bool must = seq <= hi;
    bool full = false;
    for (const WindowRef& w : refs) {
      if (!seen.insert(w).second) continue;
      for (std::size_t s : windows(w.epoch)[w.window].shards) {
        const int ri = remote_of_[s];
        if (ri < 0 || wanted[static_cast<std::size_t>(ri)]) continue;
        const auto r = static_cast<std::size_t>(ri);
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
    publish_range(lo_, hi_);
  }
  // The consumer waits for a batch that cannot be had: the loader stops with the fetch's error.
  if (hi_ == next_seq) {
    batch_windows(next_seq, refs);
    for (const WindowRef& w : refs) {
      for (std::size_t s : windows(w.epoch)[w.window].shards) {
        const int r = remote_of_[s];
        if (r >= 0 && state_[static_cast<std::size_t>(r)] == State::kFailed)
          return errors_[static_cast<std::size_t>(r)];
      }
    }
  }

  // Fetches, in the order the shards are needed, a few at a time.
  std::set<std::string> keep;
  for (std::size_t r : order) keep.insert(shards_[r].copy);
  std::vector<WindowRef> blocking;
  batch_windows(hi_, blocking);
  std::vector<std::string> evicted;
  for (std::size_t r : order) {
    if (state_[r] != State::kAbsent) continue;
    if (store_->use(shards_[r].copy)) {
      state_[r] = State::kLocal;
      changed_ = true;
      continue;
    }
    if (queue_.size() >= static_cast<std::size_t>(kFetchThreads)) break;
    evicted.clear();
    const bool room = store_->make_room(shards_[r].size, keep, evicted);
    for (const std::string& path : evicted) {
      if (const auto it = by_copy_.find(path); it != by_copy_.end())
        state_[it->second] = State::kAbsent;
    }
    if (!evicted.empty()) {
      MutexLock published(published_mutex_);
      stats_.evictions += static_cast<std::int64_t>(evicted.size());
    }
    if (!room) {
      // Room comes as the consumer moves on, unless it waits for this very batch: the shards of
      // the one batch it needs next do not fit beside the copies it still needs.
      bool needed_now = false;
      for (std::size_t k = 0; hi_ == next_seq && !needed_now && k < blocking.size(); ++k) {
        const auto& in = windows(blocking[k].epoch)[blocking[k].window].shards;
        needed_now = std::find(in.begin(), in.end(), shards_[r].shard) != in.end();
      }
      if (!needed_now) break;
      if (!over_limit_logged_) {
        over_limit_logged_ = true;
        log_.post("shard cache: one batch reads more shards than cache_limit (" +
                  bytes_text(store_->limit()) + ") holds with the copies in " + store_->folder() +
                  "; fetching past the limit");
      }
    }
    state_[r] = State::kFetching;
    queue_.push_back(r);
    cv_.notify_all();
  }
  return std::nullopt;
}

}  // namespace stoke::detail
