#include "data/epoch_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

struct EpochIds {
  std::vector<std::int64_t> ids;  // in global position order
  std::vector<std::uint8_t> valid;
};

// Assembles the whole global epoch from every rank's batches.
EpochIds global_epoch(PlanConfig c, std::int64_t epoch) {
  EpochIds out;
  std::vector<EpochPlan> plans;
  for (int r = 0; r < c.world; ++r) {
    c.rank = r;
    plans.emplace_back(c);
  }
  const std::int64_t bpe = plans[0].batches_per_epoch();
  for (std::int64_t k = 0; k < bpe; ++k) {
    for (int r = 0; r < c.world; ++r) {
      std::vector<std::int64_t> ids(c.batch);
      std::vector<std::uint8_t> valid(c.batch);
      const std::int64_t first = plans[r].batch(epoch, k, ids, valid);
      EXPECT_EQ(first, static_cast<std::int64_t>(out.ids.size()));
      out.ids.insert(out.ids.end(), ids.begin(), ids.end());
      out.valid.insert(out.valid.end(), valid.begin(), valid.end());
    }
  }
  return out;
}

TEST(EpochPlan, EverySampleOncePerEpochAcrossRanksAndPadsByRepeatingFromEpochStart) {
  for (std::int64_t n : {1, 7, 100, 1000, 1001}) {
    for (int batch : {1, 2, 4, 8, 12, 16}) {
      for (int world : {1, 2, 3, 4}) {
        for (int devices : {1, 2, 4}) {
          if (batch % devices != 0) continue;
          PlanConfig c{n, batch, devices, 0, world, 3, true, LastBatch::kPad, {}, 0};
          SCOPED_TRACE(testing::Message()
                       << "N=" << n << " B=" << batch << " W=" << world << " G=" << devices);
          const EpochIds e = global_epoch(c, 2);
          const std::int64_t global = std::int64_t{batch} * world;
          ASSERT_EQ(static_cast<std::int64_t>(e.ids.size()), (n + global - 1) / global * global);
          std::map<std::int64_t, int> valid_count;
          for (std::size_t p = 0; p < e.ids.size(); ++p) {
            if (e.valid[p]) valid_count[e.ids[p]] += 1;
            // Valid exactly for the first N positions; repeats follow the epoch's own order.
            EXPECT_EQ(e.valid[p], p < static_cast<std::size_t>(n) ? 1 : 0);
            EXPECT_EQ(e.ids[p], e.ids[p % n]);
          }
          ASSERT_EQ(static_cast<std::int64_t>(valid_count.size()), n);
          for (const auto& [id, count] : valid_count) {
            EXPECT_GE(id, 0);
            EXPECT_LT(id, n);
            EXPECT_EQ(count, 1);
          }
        }
      }
    }
  }
}

TEST(EpochPlan, DropKeepsOnlyWholeGlobalBatchesOfDistinctSamples) {
  PlanConfig c{1001, 8, 2, 0, 3, 5, true, LastBatch::kDrop, {}, 0};
  const EpochIds e = global_epoch(c, 0);
  EXPECT_EQ(e.ids.size(), 1001u / 24 * 24);
  std::set<std::int64_t> seen(e.ids.begin(), e.ids.end());
  EXPECT_EQ(seen.size(), e.ids.size());
  EXPECT_TRUE(std::all_of(e.valid.begin(), e.valid.end(), [](auto v) { return v == 1; }));
}

TEST(EpochPlan, TwoRanksOfOneDeviceSeeWhatOneRankOfTwoDevicesSees) {
  const int b = 16;
  PlanConfig one{1000, 2 * b, 2, 0, 1, 11, true, LastBatch::kPad, {}, 0};
  EpochPlan single(one);
  PlanConfig two{1000, b, 1, 0, 2, 11, true, LastBatch::kPad, {}, 0};
  EpochPlan rank0(two);
  two.rank = 1;
  EpochPlan rank1(two);
  ASSERT_EQ(single.batches_per_epoch(), rank0.batches_per_epoch());
  for (std::int64_t k = 0; k < single.batches_per_epoch(); ++k) {
    std::vector<std::int64_t> all(2 * b), r0(b), r1(b);
    std::vector<std::uint8_t> va(2 * b), v0(b), v1(b);
    const auto first = single.batch(4, k, all, va);
    EXPECT_EQ(rank0.batch(4, k, r0, v0), first);
    EXPECT_EQ(rank1.batch(4, k, r1, v1), first + b);
    // Device g of the single rank gets sub-chunk g: exactly rank g's batch.
    EXPECT_TRUE(std::equal(r0.begin(), r0.end(), all.begin()));
    EXPECT_TRUE(std::equal(r1.begin(), r1.end(), all.begin() + b));
    EXPECT_TRUE(std::equal(v1.begin(), v1.end(), va.begin() + b));
  }
}

TEST(EpochPlan, ShufflesEachEpochDifferentlyAndReproducibly) {
  PlanConfig c{500, 10, 1, 0, 1, 42, true, LastBatch::kPad, {}, 0};
  EpochPlan a(c), b(c);
  EXPECT_EQ(a.order(0), b.order(0));
  EXPECT_NE(a.order(0), a.order(1));
  c.seed = 43;
  EpochPlan other(c);
  EXPECT_NE(other.order(0), a.order(0));
  c.shuffle = false;
  EpochPlan ordered(c);
  for (std::int64_t i = 0; i < 500; ++i) EXPECT_EQ(ordered.order(3)[i], i);
}

TEST(EpochPlan, RefusesBatchThatIsNotAMultipleOfTheDevicesWithNearestSizes) {
  PlanConfig c{1000, 250, 4, 0, 1, 0, true, LastBatch::kPad, {}, 0};
  try {
    EpochPlan p(c);
    FAIL() << "accepted batch 250 on 4 devices";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "batch 250 is not a multiple of 4 devices; use 248 or 252");
  }
  c.batch = 3;
  try {
    EpochPlan p(c);
    FAIL() << "accepted batch 3 on 4 devices";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "batch 3 is not a multiple of 4 devices; use 4 or a multiple of it");
  }
}

TEST(EpochPlan, RefusesDropWhenNoGlobalBatchFits) {
  PlanConfig c{10, 8, 1, 0, 2, 0, true, LastBatch::kDrop, {}, 0};
  EXPECT_THROW(EpochPlan p(c), ConfigError);
  c.rank = 2;
  c.last_batch = LastBatch::kPad;
  try {
    EpochPlan p(c);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "rank 2 is outside world size 2; ranks are 0..1");
  }
}

}  // namespace
}  // namespace stoke::detail
