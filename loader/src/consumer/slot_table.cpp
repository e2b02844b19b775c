#include "consumer/slot_table.hpp"

#include <algorithm>
#include <cassert>

namespace stoke::detail {

namespace {

// A slot holding a batch that has not been delivered yet.
bool in_progress(SlotInfo::State s) {
  return s == SlotInfo::kFilling || s == SlotInfo::kReady || s == SlotInfo::kStaging ||
         s == SlotInfo::kStaged;
}

}  // namespace

SlotTable::SlotTable(const PlanConfig& plan, ArenaView view, std::size_t slots, std::int64_t epoch,
                     std::int64_t batch)
    : plan_(std::in_place, plan),
      bpe_(plan_->batches_per_epoch()),
      view_(view),
      slots_(slots),
      epoch_(epoch),
      next_batch_(batch),
      assign_seq_(epoch * bpe_ + batch) {}

SlotTable::SlotTable(const MixtureConfig& mixture, ArenaView view, std::size_t slots,
                     std::int64_t epoch, std::int64_t batch)
    : mixture_(std::make_unique<MixturePlan>(mixture)),
      bpe_(mixture_->batches_per_epoch()),
      view_(view),
      slots_(slots),
      epoch_(epoch),
      next_batch_(batch),
      assign_seq_(epoch * bpe_ + batch) {}

std::int64_t SlotTable::position(std::int64_t epoch, std::int64_t index) const {
  return mixture_ ? mixture_->position(epoch, index) : plan_->position(epoch, index);
}

std::int64_t SlotTable::first_position(std::int64_t epoch, std::int64_t index) const {
  return mixture_ ? mixture_->first_position(epoch, index) : plan_->first_position(epoch, index);
}

std::vector<std::int64_t> SlotTable::consumed(std::int64_t epoch, std::int64_t index) const {
  if (!mixture_) return {};
  std::vector<std::int64_t> out(mixture_->config().sources.size());
  mixture_->consumed_before(epoch, index, out);
  return out;
}

void SlotTable::start_next_epoch() {
  ++epoch_;
  next_batch_ = 0;
}

int SlotTable::free_slot() const {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const SlotInfo& s = slots_[i];
    if (s.state == SlotInfo::kFree && !s.in_transfer) return static_cast<int>(i);
  }
  return -1;
}

int SlotTable::slot_of(std::int64_t seq) const {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const SlotInfo& s = slots_[i];
    if (s.seq == seq && in_progress(s.state)) return static_cast<int>(i);
  }
  return -1;
}

bool SlotTable::all_held() const {
  return std::all_of(slots_.begin(), slots_.end(),
                     [](const SlotInfo& s) { return s.state == SlotInfo::kHeld; });
}

int SlotTable::next_to_stage(std::int64_t horizon) const {
  int slot = -1;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const SlotInfo& s = slots_[i];
    if (s.state == SlotInfo::kReady && s.seq <= horizon &&
        (slot < 0 || s.seq < slots_[static_cast<std::size_t>(slot)].seq))
      slot = static_cast<int>(i);
  }
  return slot;
}

void SlotTable::add(std::size_t n) {
  if (n > slots_.size()) slots_.resize(n);
}

void SlotTable::rechunk(int chunk) {
  assert(chunk >= 1);
  chunk_ = chunk;
}

void SlotTable::assign(int slot) {
  assert(at(slot).state == SlotInfo::kFree && !at(slot).in_transfer);
  const auto s = static_cast<std::uint32_t>(slot);
  const int b = mixture_ ? mixture_->config().batch : plan_->config().batch;
  const std::int64_t seq = assign_seq_++;
  const std::int64_t epoch = seq / bpe_;
  const std::int64_t index = seq % bpe_;
  std::int64_t first = 0;
  if (mixture_) {
    first = mixture_->batch(epoch, index, {view_.planned_ids(s), std::size_t(b)},
                            {view_.valid(s), std::size_t(b)}, {view_.sources(s), std::size_t(b)});
  } else {
    first = plan_->batch(epoch, index, {view_.planned_ids(s), std::size_t(b)},
                         {view_.valid(s), std::size_t(b)});
    std::fill_n(view_.sources(s), b, 0);  // one dataset: every sample's source is 0
  }
  SlotInfo& info = at(slot);
  info = SlotInfo{};
  info.state = SlotInfo::kFilling;
  info.seq = seq;
  info.epoch = epoch;
  info.index = index;
  info.padded = static_cast<int>(std::count(view_.valid(s), view_.valid(s) + b, 0));
  for (int begin = 0; begin < b; begin += chunk_) {
    Task t;
    t.seq = next_task_seq_++;
    t.slot = s;
    t.epoch = epoch;
    t.global_begin = first + begin;
    t.begin = static_cast<std::uint32_t>(begin);
    t.count = static_cast<std::uint32_t>(std::min(chunk_, b - begin));
    pending_.push_back(t);
    info.pending += 1;
  }
}

void SlotTable::assign_free() {
  for (int slot = free_slot(); slot >= 0 && may_assign(); slot = free_slot()) assign(slot);
}

void SlotTable::reposition(std::int64_t epoch, std::int64_t batch) {
  ++generation_;
  const std::int64_t old_seq = next_seq();
  const std::int64_t seq = epoch * bpe_ + batch;
  epoch_ = epoch;
  next_batch_ = batch;
  // Batches prepared in [old_seq, assign_seq_) stay useful from `seq` on when seq lies inside,
  // unless they were planned with a resumed epoch's offset, which a reposition ends.
  const bool replanned = mixture_ ? mixture_->clear_resume() : plan_->clear_resume();
  const bool keep_ahead = !replanned && old_seq <= seq && seq <= assign_seq_;
  for (auto& s : slots_) {
    if (!in_progress(s.state)) continue;
    if (keep_ahead && s.seq >= seq) continue;
    s.state = s.pending > 0 ? SlotInfo::kOrphan : SlotInfo::kFree;
  }
  std::deque<Task> keep;
  for (const Task& t : pending_) {
    SlotInfo& s = slots_[t.slot];
    if (s.state != SlotInfo::kOrphan) {
      keep.push_back(t);
      continue;
    }
    if (--s.pending == 0) s.state = SlotInfo::kFree;
  }
  pending_.swap(keep);
  if (!keep_ahead) assign_seq_ = seq;
}

void SlotTable::take_task() {
  assert(!pending_.empty());
  pending_.pop_front();
}

std::vector<Task> SlotTable::take_tasks() {
  std::vector<Task> tasks(pending_.begin(), pending_.end());
  pending_.clear();
  return tasks;
}

void SlotTable::redo(const std::deque<Task>& tasks) {
  for (auto it = tasks.rbegin(); it != tasks.rend(); ++it) {
    assert(slots_[it->slot].pending > 0);
    pending_.push_front(*it);
  }
}

bool SlotTable::complete(const Task& task, std::string error) {
  SlotInfo& s = slots_[task.slot];
  assert(s.pending > 0 && (s.state == SlotInfo::kFilling || s.state == SlotInfo::kOrphan));
  if (!error.empty() && s.error.empty()) s.error = std::move(error);
  if (--s.pending > 0) return false;
  if (s.state == SlotInfo::kFilling) {
    s.state = SlotInfo::kReady;
    return true;
  }
  if (s.state == SlotInfo::kOrphan) s.state = SlotInfo::kFree;
  return false;
}

void SlotTable::begin_staging(int slot, bool transfer) {
  SlotInfo& s = at(slot);
  assert(s.state == SlotInfo::kReady);
  s.state = SlotInfo::kStaging;
  if (transfer) s.in_transfer = true;
}

bool SlotTable::end_staging(int slot, std::int64_t seq) {
  SlotInfo& s = at(slot);
  if (s.state != SlotInfo::kStaging || s.seq != seq) return false;
  s.state = SlotInfo::kStaged;
  return true;
}

void SlotTable::hold(int slot) {
  assert(at(slot).state == SlotInfo::kHeld);
  at(slot).in_transfer = true;
}

void SlotTable::transfer_done(int slot) {
  assert(at(slot).in_transfer);
  at(slot).in_transfer = false;
}

const SlotInfo& SlotTable::deliver(int slot) {
  SlotInfo& s = at(slot);
  assert(s.seq == next_seq());
  s.state = SlotInfo::kHeld;
  ++next_batch_;
  return s;
}

void SlotTable::release(int slot) {
  // Exactly once per delivery: only a BatchLease releases, and only the slot it holds.
  assert(at(slot).state == SlotInfo::kHeld);
  at(slot).state = SlotInfo::kFree;
}

}  // namespace stoke::detail
