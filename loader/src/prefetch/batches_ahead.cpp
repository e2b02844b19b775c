#include "prefetch/batches_ahead.hpp"

#include <algorithm>

namespace stoke::detail {

void BatchesAhead::read(const EpochPlan& plan, std::uint64_t generation, std::int64_t first,
                        std::int64_t last) {
  const auto known = static_cast<std::int64_t>(spans_.size());
  if (generation != generation_ || first < first_ || first > first_ + known) {
    generation_ = generation;  // (a reposition: what was planned may have changed)
    spans_.clear();
    windows_.clear();
    first_ = first;
  }
  for (; first_ < first; ++first_) spans_.pop_front();
  for (std::int64_t seq = first_ + static_cast<std::int64_t>(spans_.size()); seq <= last; ++seq)
    spans_.push_back(plan.order_spans(seq / batches_per_epoch_, seq % batches_per_epoch_));
  for (auto it = windows_.begin(); it != windows_.end() && it->first < first / batches_per_epoch_;)
    it = windows_.erase(it);
  for (std::int64_t epoch = first / batches_per_epoch_; epoch <= last / batches_per_epoch_;
       ++epoch) {
    if (!windows_.contains(epoch)) windows_.emplace(epoch, plan.shard_windows(epoch));
  }
}

void BatchesAhead::windows_of(std::int64_t seq, std::vector<WindowRef>& out) const {
  out.clear();
  const std::int64_t epoch = seq / batches_per_epoch_;
  const std::vector<ShardWindow>& ws = windows_.at(epoch);
  const std::int64_t n = samples_;
  for (const EpochPlan::OrderSpan& span : spans_[static_cast<std::size_t>(seq - first_)]) {
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

}  // namespace stoke::detail
