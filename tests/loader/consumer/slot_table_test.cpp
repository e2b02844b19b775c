// SlotTable on its own: an arena of a few slots in plain memory, no loader, no worker.
#include "consumer/slot_table.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "ipc/arena_plan.hpp"

namespace stoke::detail {
namespace {

// 10 samples, batch 4, one device, no shuffle: 3 batches an epoch (the last padded by 2).
// resume_position >= 0: `epoch` is resumed from that global position.
struct Table {
  explicit Table(std::size_t slots, int chunk = 2, std::int64_t epoch = 0, std::int64_t batch = 0,
                 std::int64_t resume_position = -1) {
    ArenaPlanInput in;
    in.batch = 4;
    in.out_height = in.out_width = in.out_channels = 1;
    in.initial_slots = slots;
    const ArenaHeader h = plan_arena(in);
    memory.assign(h.total_size + 64, 0);
    base = memory.data() + (64 - reinterpret_cast<std::uintptr_t>(memory.data()) % 64) % 64;
    *reinterpret_cast<ArenaHeader*>(base) = h;
    PlanConfig plan{10, 4, 1, 0, 1, 0, false, LastBatch::kPad, {}, 0};
    if (resume_position >= 0) {
      plan.resume_epoch = epoch;
      plan.resume_position = resume_position;
    }
    table.emplace(plan, ArenaView(base), slots, epoch, batch);
    table->rechunk(chunk);
  }
  SlotTable& operator*() { return *table; }
  const SlotInfo& operator[](int slot) const { return (*table)[slot]; }
  SlotTable* operator->() { return &*table; }
  std::vector<std::int64_t> planned(int slot) {
    const std::int64_t* p = ArenaView(base).planned_ids(static_cast<std::uint32_t>(slot));
    return {p, p + 4};
  }
  // Produces every queued chunk of `slot`; the others stay queued, in order.
  void finish(int slot) {
    std::deque<Task> others;
    for (const Task& t : table->take_tasks()) {
      if (static_cast<int>(t.slot) == slot)
        table->complete(t, "");
      else
        others.push_back(t);
    }
    table->redo(others);
  }

  std::vector<std::uint8_t> memory;
  std::uint8_t* base = nullptr;
  std::optional<SlotTable> table;
};

TEST(SlotTable, AssignsBatchesInOrderAsChunksOfTheConfiguredSize) {
  Table t(3);
  t->assign_free();
  EXPECT_EQ(t->assign_seq(), 3);
  ASSERT_EQ(t->queued().size(), 6u);  // 3 batches x 2 chunks of 2
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(t[s].state, SlotInfo::kFilling);
    EXPECT_EQ(t[s].seq, s);
    EXPECT_EQ(t[s].pending, 2);
  }
  EXPECT_EQ(t.planned(0), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(t.planned(2), (std::vector<std::int64_t>{8, 9, 0, 1}));  // padded from the start
  EXPECT_EQ(t[2].padded, 2);
  const Task& first = t->queued().front();
  EXPECT_EQ(first.begin, 0u);
  EXPECT_EQ(first.count, 2u);
  EXPECT_EQ(t->queued()[1].begin, 2u);
  EXPECT_EQ(t->free_slot(), -1);
}

TEST(SlotTable, ABatchIsReadyOnlyWhenItsLastChunkCompletes) {
  Table t(1);
  t->assign_free();
  const Task a = t->queued()[0], b = t->queued()[1];
  EXPECT_EQ(t->take_tasks().size(), 2u);
  EXPECT_FALSE(t->has_task());
  EXPECT_FALSE(t->complete(a, ""));
  EXPECT_EQ(t[0].state, SlotInfo::kFilling);
  EXPECT_TRUE(t->complete(b, "x.png (sample 3): corrupt"));
  EXPECT_EQ(t[0].state, SlotInfo::kReady);
  EXPECT_EQ(t[0].error, "x.png (sample 3): corrupt");
}

TEST(SlotTable, KeepsTheFirstDataErrorOfABatch) {
  Table t(1);
  t->assign_free();
  const Task a = t->queued()[0], b = t->queued()[1];
  t->complete(a, "first");
  t->complete(b, "second");
  EXPECT_EQ(t[0].error, "first");
}

TEST(SlotTable, DeliveryAdvancesThePositionAndReleaseFreesTheSlot) {
  Table t(2);
  t->assign_free();
  t.finish(0);
  ASSERT_EQ(t->slot_of(t->next_seq()), 0);
  t->deliver(0);
  EXPECT_EQ(t[0].state, SlotInfo::kHeld);
  EXPECT_EQ(t->next_batch(), 1);
  EXPECT_EQ(t->free_slot(), -1);
  t->release(0);
  EXPECT_EQ(t->free_slot(), 0);
  t->assign(0);
  EXPECT_EQ(t[0].seq, 2);  // the next batch in sequence, not the one it held
}

TEST(SlotTable, ASlotStillReadByADeviceIsNotReused) {
  Table t(1);
  t->assign_free();
  t.finish(0);
  t->deliver(0);
  t->hold(0);
  t->release(0);
  EXPECT_EQ(t->free_slot(), -1);
  t->transfer_done(0);
  EXPECT_EQ(t->free_slot(), 0);
}

TEST(SlotTable, EpochEndIsReportedOnceThenTheNextEpochBegins) {
  Table t(3);
  t->assign_free();
  for (int s = 0; s < 3; ++s) {
    t.finish(s);
    t->deliver(s);
  }
  EXPECT_TRUE(t->epoch_exhausted());
  t->start_next_epoch();
  EXPECT_EQ(t->epoch(), 1);
  EXPECT_EQ(t->next_batch(), 0);
  EXPECT_EQ(t->next_seq(), 3);
  t->release(0);
  t->assign(0);
  EXPECT_EQ(t[0].epoch, 1);
  EXPECT_EQ(t[0].index, 0);
}

TEST(SlotTable, RepositionInsideThePreparedRangeKeepsTheBatchesAhead) {
  Table t(3);
  t->assign_free();
  t.finish(1);
  t->reposition(0, 1);
  // Batch 0 is behind the new position: its pending chunks are withdrawn and the slot is free.
  EXPECT_EQ(t[0].state, SlotInfo::kFree);
  EXPECT_EQ(t[1].state, SlotInfo::kReady);
  EXPECT_EQ(t[2].state, SlotInfo::kFilling);
  EXPECT_EQ(t->queued().size(), 2u);
  EXPECT_EQ(t->assign_seq(), 3);
}

TEST(SlotTable, RepositionElsewhereWithdrawsPendingWorkAndOrphansWhatWorkersHold) {
  Table t(2);
  t->assign_free();
  // One chunk of slot 0 is "in a worker's hands": not pending any more.
  const Task out = t->next_task();
  t->take_task();
  t->reposition(5, 0);
  EXPECT_EQ(t[0].state, SlotInfo::kOrphan);
  EXPECT_EQ(t[1].state, SlotInfo::kFree);  // all its chunks were still pending
  EXPECT_TRUE(t->queued().empty());
  EXPECT_EQ(t->assign_seq(), 15);
  EXPECT_EQ(t->free_slot(), 1);
  EXPECT_FALSE(t->complete(out, ""));  // the orphan's last chunk returns: the slot is free
  EXPECT_EQ(t[0].state, SlotInfo::kFree);
}

TEST(SlotTable, RepositionEndsAResumedEpochAndReplansWhatWasPrepared) {
  // Resumed at position 3: 7 samples left make batches 1 (3..6) and 2 (7..9, padded by 1).
  Table t(3, 4, 0, 1, 3);
  EXPECT_EQ(t->plan().resume_first(), 1);
  t->assign_free();
  EXPECT_EQ(t.planned(0), (std::vector<std::int64_t>{3, 4, 5, 6}));
  EXPECT_EQ(t.planned(1), (std::vector<std::int64_t>{7, 8, 9, 0}));
  EXPECT_EQ(t[1].padded, 1);
  EXPECT_EQ(t.planned(2), (std::vector<std::int64_t>{0, 1, 2, 3}));  // epoch 1 is plain
  t.finish(0);
  // Even a reposition to where the consumer already is ends the resume: nothing prepared stays.
  t->reposition(0, 1);
  EXPECT_EQ(t[0].state, SlotInfo::kFree);
  EXPECT_EQ(t[1].state, SlotInfo::kFree);
  EXPECT_EQ(t[2].state, SlotInfo::kFree);
  EXPECT_TRUE(t->queued().empty());
  EXPECT_EQ(t->assign_seq(), 1);
  t->assign(0);
  EXPECT_EQ(t.planned(0), (std::vector<std::int64_t>{4, 5, 6, 7}));  // plain batch 1
  // With the resume ended, repositions keep what is prepared ahead again.
  t->assign_free();
  t->reposition(0, 2);
  EXPECT_EQ(t[1].state, SlotInfo::kFilling);
}

TEST(SlotTable, StagesTheEarliestReadyBatchWithinTheHorizon) {
  Table t(3);
  t->assign_free();
  t.finish(2);
  t.finish(1);
  EXPECT_EQ(t->next_to_stage(0), -1);
  EXPECT_EQ(t->next_to_stage(1), 1);
  EXPECT_EQ(t->next_to_stage(2), 1);
}

TEST(SlotTable, ADeadWorkersChunksAreRedoneFirstInTheirOrder) {
  Table t(2);
  t->assign_free();  // slot 0: chunks a, b; slot 1: c, d
  const Task a = t->next_task();
  t->take_task();
  const Task b = t->next_task();
  t->take_task();
  t->redo({a, b});
  ASSERT_EQ(t->queued().size(), 4u);
  EXPECT_EQ(t->queued()[0].seq, a.seq);
  EXPECT_EQ(t->queued()[1].seq, b.seq);
  EXPECT_EQ(t->queued()[2].slot, 1u);
  EXPECT_EQ(t[0].pending, 2);  // a redo is not a new chunk
}

TEST(SlotTable, StagingEndsOnlyForTheBatchItBegan) {
  Table t(2);
  t->assign_free();
  t.finish(0);
  t->begin_staging(0, true);
  EXPECT_EQ(t[0].state, SlotInfo::kStaging);
  EXPECT_TRUE(t[0].in_transfer);
  EXPECT_TRUE(t->end_staging(0, 0));
  EXPECT_EQ(t[0].state, SlotInfo::kStaged);
  // A reposition drops batch 1 while it is being staged: its end changes nothing, and the slot
  // is not reused while the devices still read it.
  t.finish(1);
  t->begin_staging(1, true);
  t->reposition(3, 0);
  EXPECT_FALSE(t->end_staging(1, 1));
  EXPECT_EQ(t[1].state, SlotInfo::kFree);
  EXPECT_EQ(t[0].state, SlotInfo::kFree);  // the staged batch 0 was dropped too
  EXPECT_EQ(t->free_slot(), -1);           // both are still read by the devices
  t->transfer_done(1);
  EXPECT_EQ(t->free_slot(), 1);
}

TEST(SlotTable, GrowsWithFreeSlots) {
  Table t(1);
  t->assign_free();
  t->add(3);
  EXPECT_EQ(t->size(), 3u);
  EXPECT_EQ(t->free_slot(), 1);
  t->add(2);  // never shrinks
  EXPECT_EQ(t->size(), 3u);
}

}  // namespace
}  // namespace stoke::detail
