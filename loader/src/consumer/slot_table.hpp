#pragma once
// The loader's batch slots and the work that fills them: which batch each slot holds, the
// chunks not yet handed to a worker, and the consumer's position in the epoch plan.
//
// Thread-safety: none of its own. It lives in LoaderCore, guarded by LoaderCore::mutex (checked
// by clang's -Wthread-safety), because a Batch released after its Loader is gone still frees
// its slot here.
//
// A slot moves through
//   kFree -> kFilling (chunks pending) -> kReady -> [kStaging -> kStaged] -> kHeld -> kFree
// (the bracketed states when batches go through device buffers), or to kOrphan when a
// reposition abandons it while chunks are still out; a kOrphan slot becomes kFree when its last
// chunk completes. Invariants:
//   - a kHeld slot is never written by anyone: no task names it;
//   - a slot is assigned only from kFree and only when !in_transfer (no device still reads it);
//   - pending_ holds tasks of kFilling slots, and of kOrphan slots whose chunks came back from a
//     dead worker (they are produced and then dropped); slot.pending counts that slot's tasks
//     still pending or in a worker's hands;
//   - batch sequence numbers (epoch * batches_per_epoch + index) are assigned in increasing
//     order from next_seq() to assign_seq() - 1 with no gap, so batches are delivered in order.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ipc/arena_layout.hpp"
#include "plan/epoch_plan.hpp"
#include "plan/mixture_plan.hpp"

namespace stoke::detail {

struct SlotInfo {
  enum State { kFree, kFilling, kReady, kStaging, kStaged, kHeld, kOrphan };
  State state = kFree;
  bool in_transfer = false;  // staged and some device may still be reading the host bytes
  std::int64_t seq = -1;     // epoch * batches_per_epoch + index
  std::int64_t epoch = 0;
  std::int64_t index = 0;
  int pending = 0;  // chunks not yet completed
  int padded = 0;
  std::string error;  // first data error in this batch (OnError::kError)
};

class SlotTable {
 public:
  // `slots` slots, the consumer at (epoch, batch).
  // REQUIRES: batch >= plan.resume_first() when epoch is the plan's resumed epoch.
  SlotTable(const PlanConfig& plan, ArenaView view, std::size_t slots, std::int64_t epoch,
            std::int64_t batch);
  // A mixture's (plan/mixture_plan.hpp): its batches carry each sample's source.
  SlotTable(const MixtureConfig& mixture, ArenaView view, std::size_t slots, std::int64_t epoch,
            std::int64_t batch);

  // ---- the consumer's position: the next batch it receives is (epoch(), next_batch()).
  std::int64_t epoch() const { return epoch_; }
  std::int64_t next_batch() const { return next_batch_; }
  std::int64_t batches_per_epoch() const { return bpe_; }
  std::int64_t next_seq() const { return epoch_ * bpe_ + next_batch_; }
  std::int64_t assign_seq() const { return assign_seq_; }
  // next_batch() == batches_per_epoch(): the consumer is told the epoch ended, then moves on.
  bool epoch_exhausted() const { return next_batch_ == bpe_; }
  void start_next_epoch();
  // Moves the consumer to (epoch, batch). Batches already prepared from there on are kept;
  // others are dropped (their pending chunks withdrawn, chunks in workers' hands orphaned). It
  // also ends an elastic resume (EpochPlan::clear_resume): every epoch is plain from then on,
  // and batches prepared with the resumed epoch's offset are dropped.
  void reposition(std::int64_t epoch, std::int64_t batch);
  // The plan of one dataset. REQUIRES: !mixture().
  const EpochPlan& plan() const { return *plan_; }
  // The plan of a mixture. REQUIRES: mixture().
  const MixturePlan& mixture_plan() const { return *mixture_; }
  bool mixture() const { return mixture_ != nullptr; }
  // Either plan's: the global position of batch `index` of `epoch` (LoaderState::position), and
  // of this rank's first sample of it.
  std::int64_t position(std::int64_t epoch, std::int64_t index) const;
  std::int64_t first_position(std::int64_t epoch, std::int64_t index) const;
  // A mixture's samples of each source delivered in `epoch` before its batch `index`
  // (LoaderState::sources); empty for one dataset.
  std::vector<std::int64_t> consumed(std::int64_t epoch, std::int64_t index) const;

  // ---- slots
  std::size_t size() const { return slots_.size(); }
  const SlotInfo& operator[](int slot) const { return slots_[static_cast<std::size_t>(slot)]; }
  int free_slot() const;                // -1: none
  int slot_of(std::int64_t seq) const;  // the slot preparing or holding batch `seq`, or -1
  bool all_held() const;
  // The earliest kReady batch at or before `horizon`, or -1.
  int next_to_stage(std::int64_t horizon) const;
  // Grows to n slots. REQUIRES: the arena holds n slots' bytes.
  void add(std::size_t n);

  // ---- work
  // Chunks of `chunk` samples (the last may be shorter) from the next assignment on.
  // REQUIRES: chunk >= 1.
  void rechunk(int chunk);
  int chunk() const { return chunk_; }
  // Batches are assigned in order, each once `gate` (the shard prefetcher's: are its shards on
  // local disk?) says it may be; without a gate, whenever a slot is free. The gate is called
  // with the loader's lock held, and told the batch, the table's generation (so that an answer
  // prepared before a reposition is not taken for one after it) and whether the consumer's
  // next batch is the one asked about (it waits for it).
  using Gate = std::function<bool(std::int64_t seq, std::uint64_t generation, bool consumer_next)>;
  void install_gate(Gate gate) { gate_ = std::move(gate); }
  bool may_assign() const {
    return !gate_ || gate_(assign_seq_, generation_, assign_seq_ == next_seq());
  }
  // Counts repositions: what was planned for one generation may not hold for the next.
  std::uint64_t generation() const { return generation_; }
  // Gives `slot` the next batch (assign_seq()): writes its planned sample ids and valid flags
  // into the arena and queues its chunks. REQUIRES: (*this)[slot] is kFree and !in_transfer,
  // and may_assign().
  void assign(int slot);
  void assign_free();  // assign() every free slot while may_assign()

  // The queued chunks, in the order they are to be produced.
  const std::deque<Task>& queued() const { return pending_; }
  bool has_task() const { return !pending_.empty(); }
  // REQUIRES: has_task().
  const Task& next_task() const { return pending_.front(); }
  // next_task() went to a worker. REQUIRES: has_task().
  void take_task();
  // Every queued chunk, in order, for the caller to produce (workers = 0); none stays queued.
  std::vector<Task> take_tasks();
  // Chunks a worker held when it died (oldest first) go back to the front of the queue, to be
  // produced again before anything queued after them.
  void redo(const std::deque<Task>& tasks);
  // A chunk of `task.slot` finished; `error` (empty when none) is kept when it is the slot's
  // first. True when the batch became ready. REQUIRES: the slot is kFilling or kOrphan with
  // that chunk among its pending ones.
  bool complete(const Task& task, std::string error);

  // ---- hand-over
  // The stager took ready `slot` to copy it to the devices; `transfer`: its host bytes are
  // being read by them from now on. REQUIRES: (*this)[slot] is kReady.
  void begin_staging(int slot, bool transfer);
  // The stager finished copying batch `seq` in `slot`: it is kStaged, unless a reposition
  // dropped it meanwhile (false then; in_transfer still guards the slot).
  bool end_staging(int slot, std::int64_t seq);
  // Some device (the consumer's recorded streams) still reads `slot`'s host bytes: no batch is
  // assigned to it until transfer_done(). REQUIRES: (*this)[slot] is kHeld (the consumer is
  // giving it back).
  void hold(int slot);
  // No device reads `slot`'s host bytes any more. REQUIRES: (*this)[slot].in_transfer.
  void transfer_done(int slot);
  // Marks `slot` held by the consumer and advances the position. REQUIRES: it holds next_seq().
  const SlotInfo& deliver(int slot);
  // The consumer gave a delivered slot back. REQUIRES: (*this)[slot] is kHeld.
  void release(int slot);

 private:
  SlotInfo& at(int slot) { return slots_[static_cast<std::size_t>(slot)]; }

  std::optional<EpochPlan> plan_;         // one dataset
  std::unique_ptr<MixturePlan> mixture_;  // or a mixture
  const std::int64_t bpe_;
  ArenaView view_;
  std::vector<SlotInfo> slots_;
  std::deque<Task> pending_;  // tasks not yet handed to a worker
  std::int64_t epoch_ = 0;
  std::int64_t next_batch_ = 0;  // in [0, bpe_]
  std::int64_t assign_seq_ = 0;  // next batch sequence to give a slot
  std::uint64_t next_task_seq_ = 1;
  int chunk_ = 1;
  Gate gate_;
  std::uint64_t generation_ = 0;
};

}  // namespace stoke::detail
