#include "prefetch/batches_ahead.hpp"

#include <algorithm>

namespace stoke::detail {

namespace {

// Adds to `out` the windows of `ws` (key `key`) that order positions [q, q + len) cross, each
// once.
void add_windows(std::int64_t key, const std::vector<ShardWindow>& ws, std::int64_t q,
                 std::int64_t len, std::vector<WindowRef>& out) {
  auto w = std::upper_bound(ws.begin(), ws.end(), q,
                            [](std::int64_t v, const ShardWindow& x) { return v < x.end; });
  for (; w != ws.end() && w->begin < q + len; ++w) {
    const WindowRef ref{key, static_cast<std::size_t>(w - ws.begin())};
    if (std::find(out.begin(), out.end(), ref) == out.end()) out.push_back(ref);
  }
}

}  // namespace

std::size_t EpochPrefetchPlan::shards() const {
  const std::size_t starts = plan_.config().shard_starts.size();
  return starts == 0 ? 0 : starts - 1;
}

void EpochPrefetchPlan::batch_windows(std::int64_t epoch, std::int64_t index, Windows& windows,
                                      std::vector<WindowRef>& out) const {
  auto at = windows.find(epoch);
  if (at == windows.end()) at = windows.emplace(epoch, plan_.shard_windows(epoch)).first;
  const std::int64_t n = plan_.config().samples;
  for (const EpochPlan::OrderSpan& span : plan_.order_spans(epoch, index)) {
    const std::int64_t end = span.first + span.count;
    // Positions past N are padding: they wrap to the order's start.
    for (std::int64_t p = span.first; p < end;) {
      const std::int64_t q = p % n;
      const std::int64_t len = std::min(end - p, n - q);
      add_windows(epoch, at->second, q, len, out);
      p += len;
    }
  }
}

std::size_t MixturePrefetchPlan::shard_base(const MixtureConfig& config, std::size_t s) {
  std::size_t base = 0;
  for (std::size_t t = 0; t < s; ++t) {
    const std::size_t starts = config.sources[t].shard_starts.size();
    base += starts == 0 ? 0 : starts - 1;
  }
  return base;
}

std::size_t MixturePrefetchPlan::shards() const {
  return shard_base(plan_.config(), plan_.config().sources.size());
}

void MixturePrefetchPlan::batch_windows(std::int64_t epoch, std::int64_t index, Windows& windows,
                                        std::vector<WindowRef>& out) const {
  const MixtureConfig& c = plan_.config();
  const std::size_t sources = c.sources.size();
  std::vector<std::int64_t> begin(sources), count(sources);
  plan_.stream_ranges(epoch, index, begin, count);
  for (std::size_t s = 0; s < sources; ++s) {
    const MixSource& source = c.sources[s];
    if (source.shard_starts.empty() || count[s] == 0) continue;
    const std::size_t base = shard_base(c, s);
    // Stream entries [begin, begin + count) are samples [begin / k, ceil((begin + count) / k))
    // of the source's passes (k: the repeats); sample t is position t mod N of pass t / N.
    const std::int64_t k = c.repeats;
    for (std::int64_t t = begin[s] / k, end = (begin[s] + count[s] + k - 1) / k; t < end;) {
      const std::int64_t pass = t / source.samples, q = t % source.samples;
      const std::int64_t len = std::min(end - t, source.samples - q);
      const std::int64_t key = pass * kMaxSourceKeys + static_cast<std::int64_t>(s);
      auto at = windows.find(key);
      if (at == windows.end()) {
        std::vector<ShardWindow> ws = plan_.source_plan(s).shard_windows(pass);
        for (ShardWindow& w : ws)
          for (std::size_t& shard : w.shards) shard += base;
        at = windows.emplace(key, std::move(ws)).first;
      }
      add_windows(key, at->second, q, len, out);
      t += len;
    }
  }
}

void BatchesAhead::read(const PrefetchPlan& plan, std::uint64_t generation, std::int64_t first,
                        std::int64_t last) {
  const auto known = static_cast<std::int64_t>(refs_.size());
  if (generation != generation_ || first < first_ || first > first_ + known) {
    generation_ = generation;  // (a reposition: what was planned may have changed)
    refs_.clear();
    windows_.clear();
    last_read_.clear();
    first_ = first;
  }
  const bool dropped = first_ < first;
  for (; first_ < first; ++first_) refs_.pop_front();
  for (std::int64_t seq = first_ + static_cast<std::int64_t>(refs_.size()); seq <= last; ++seq) {
    std::vector<WindowRef>& refs = refs_.emplace_back();
    plan.batch_windows(seq / batches_per_epoch_, seq % batches_per_epoch_, windows_, refs);
    for (const WindowRef& w : refs) last_read_[w.key] = seq;
  }
  if (!dropped) return;
  // The runs no batch ahead reads any more.
  for (auto it = windows_.begin(); it != windows_.end();) {
    const auto read = last_read_.find(it->first);
    if (read != last_read_.end() && read->second >= first_) {
      ++it;
      continue;
    }
    if (read != last_read_.end()) last_read_.erase(read);
    it = windows_.erase(it);
  }
}

}  // namespace stoke::detail
