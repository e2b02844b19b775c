#include "prefetch/shard_walk.hpp"

#include <chrono>

namespace stoke::detail {

ShardWalk::ShardWalk(const BatchesAhead& ahead, std::span<const PrefetchShard> shards,
                     std::span<const int> remote_of, const Start& start)
    : ahead_(ahead),
      shards_(shards),
      remote_of_(remote_of),
      start_(start),
      seq_(start.next_seq),
      resolving_(start.resolving) {
  states_.reserve(shards.size());
  for (const PrefetchShard& s : shards) states_.push_back(s.state);
  result_.wanted.assign(shards.size(), 0);
  result_.ready_end = start.ready_end;
}

bool ShardWalk::next_batch() {
  if (open_) settle_batch();
  if (over_) return false;
  const bool ends = seq_ >= start_.horizon ||
                    (seq_ > result_.ready_end && result_.order.size() == shards_.size()) ||
                    (blind_ && (resolving_ >= kResolveAhead || blind_looked_ > kBlindLook));
  if (ends) {
    over_ = true;
    // Out of planned batches before the limit (or the shards) stopped it, and not for want of
    // sizes: the plan may be read further.
    result_.plan_further = seq_ >= start_.horizon && !blind_;
    return false;
  }
  walk_batch();
  open_ = true;
  return true;
}

bool ShardWalk::lookup_due(std::size_t r) const {
  const std::chrono::duration<double> since = start_.now - shards_[r].failed_at;
  return states_[r] == ShardState::kUncached && shards_[r].lookup_failed &&
         since.count() >= start_.retry_after_s;
}

void ShardWalk::walk_batch() {
  first_uses_.clear();
  ahead_.windows_of(seq_, refs_);
  // The ready batches, and the first one not ready, are wanted whole, past the limit.
  const bool must = seq_ <= result_.ready_end;
  const std::int64_t consumer_epoch = start_.next_seq / ahead_.batches_per_epoch();
  const std::int64_t epoch = seq_ / ahead_.batches_per_epoch();  // the batch's
  for (const WindowRef& w : refs_) {
    if (!seen_.insert(w).second) continue;
    for (std::size_t s : ahead_.shards(w)) {
      const int ri = remote_of_[s];
      if (ri < 0 || result_.wanted[static_cast<std::size_t>(ri)]) continue;
      const auto r = static_cast<std::size_t>(ri);
      // A look-up that failed is tried again once the deadline has passed (the server may be
      // back), unless a ready batch reads the shard (from the server, meanwhile).
      if (!must && lookup_due(r)) {
        states_[r] = ShardState::kUnresolved;
        result_.retried.push_back(r);
      }
      // Past the first shard not yet looked up, nothing more is wanted (its size is unknown):
      // the walk only queues look-ups, in the order it meets the shards.
      if (states_[r] == ShardState::kUnresolved || states_[r] == ShardState::kResolving) {
        blind_ = true;
        if (states_[r] == ShardState::kUnresolved && resolving_ < kResolveAhead) {
          states_[r] = ShardState::kResolving;
          result_.look_ups.push_back(r);
          ++resolving_;
        }
        continue;
      }
      if (blind_) {
        ++blind_looked_;
        continue;
      }
      const std::uint64_t size = shards_[r].remote.size;
      if (!must && (bytes_ > start_.limit || size > start_.limit - bytes_)) {  // sizes: a server's
        full_ = true;
        return;
      }
      result_.wanted[r] = 1;
      result_.order.push_back(r);
      bytes_ += size;
      // (The next epoch's uses are counted when it comes.)
      if (epoch == consumer_epoch && shards_[r].counted_epoch != epoch) first_uses_.push_back(r);
    }
  }
}

void ShardWalk::settle_batch() {
  open_ = false;
  if (full_) {
    over_ = true;
    return;
  }
  // The ready range grows over batches whose shards are all on disk, within the walk and what
  // the slots hold ahead: every ready batch's shards are wanted (kept from eviction).
  bool local = seq_ == result_.ready_end && seq_ < start_.ready_horizon;
  for (std::size_t k = 0; local && k < refs_.size(); ++k) local = window_local(refs_[k]);
  if (local) result_.ready_end = seq_ + 1;
  ++seq_;
}

bool ShardWalk::window_local(const WindowRef& w) {
  if (const auto it = local_.find(w); it != local_.end()) return it->second;
  bool all = true;
  for (std::size_t s : ahead_.shards(w)) {
    const int r = remote_of_[s];
    if (r < 0) continue;
    const ShardState state = states_[static_cast<std::size_t>(r)];
    if (state != ShardState::kLocal && state != ShardState::kUncached) {
      all = false;
      break;
    }
  }
  local_[w] = all;
  return all;
}

}  // namespace stoke::detail
