// The mixture plan (plan/mixture_plan.hpp): stratified global batches, per-rank and per-device
// shares, each source's stream read once per budget, sources that wrap into their next pass,
// any rank/device layout of the same global batch, and resume, exact and elastic.

#include "plan/mixture_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

// Three sources of 4,000, 1,500 and 2,500 samples with budgets 6,000 / 3,000 / 1,000 (weights
// 0.6 / 0.3 / 0.1 of a 10,000-sample epoch): the first wraps into its next pass every epoch,
// the second reads two passes an epoch, the third reads 1,000 of its 2,500 an epoch.
MixtureConfig three_sources(int batch, int devices, int world, int rank) {
  MixtureConfig c;
  c.sources = {{0, 4000, 6000, {}, 0}, {4000, 1500, 3000, {}, 0}, {5500, 2500, 1000, {}, 0}};
  c.batch = batch;
  c.devices = devices;
  c.world = world;
  c.rank = rank;
  c.seed = 11;
  return c;
}

struct Slot {
  std::int64_t id;
  std::uint8_t valid;
  std::int32_t source;
  bool operator<(const Slot& o) const {
    return std::tie(id, valid, source) < std::tie(o.id, o.valid, o.source);
  }
  bool operator==(const Slot&) const = default;
};

// Every rank's batch `index` of `epoch`, in rank order: the global batch as the ranks see it.
std::vector<Slot> global_batch(const MixtureConfig& base, std::int64_t epoch, std::int64_t index) {
  std::vector<Slot> out;
  for (int r = 0; r < base.world; ++r) {
    MixtureConfig c = base;
    c.rank = r;
    MixturePlan plan(c);
    std::vector<std::int64_t> ids(static_cast<std::size_t>(c.batch));
    std::vector<std::uint8_t> valid(ids.size());
    std::vector<std::int32_t> sources(ids.size());
    plan.batch(epoch, index, ids, valid, sources);
    for (std::size_t k = 0; k < ids.size(); ++k) out.push_back({ids[k], valid[k], sources[k]});
  }
  return out;
}

// Every full global batch of 256 holds floor or ceil of 256 x its weight of each source (154,
// 77, 25 within one), each rank of 4 floor or ceil of that over 4, each device of 2 floor or
// ceil of that over 8; over the epoch each source gives exactly its budget.
TEST(MixturePlan, EveryGlobalBatchHoldsEachSourcesShareWithinOneAndSoDoesEachRank) {
  const MixtureConfig c = three_sources(64, 2, 4, 0);
  MixturePlan plan(c);
  EXPECT_EQ(plan.epoch_samples(), 10000);
  EXPECT_EQ(plan.batches_per_epoch(), 40);  // 39 full, and 16 samples left
  const double weight[] = {0.6, 0.3, 0.1};
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<std::int64_t> total(3, 0);
    for (std::int64_t i = 0; i < plan.batches_per_epoch(); ++i) {
      const std::vector<Slot> g = global_batch(c, epoch, i);
      std::vector<std::int64_t> counts(3);
      plan.batch_counts(epoch, i, counts);
      std::vector<std::int64_t> seen(3, 0);
      for (const Slot& s : g)
        if (s.valid) ++seen[static_cast<std::size_t>(s.source)];
      EXPECT_EQ(seen, counts) << epoch << " " << i;
      for (std::size_t s = 0; s < 3; ++s) total[s] += counts[s];
      if (i == 39) {
        EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), std::int64_t{0}), 16);
        continue;
      }
      for (std::size_t s = 0; s < 3; ++s) {
        EXPECT_GE(counts[s], static_cast<std::int64_t>(std::floor(256 * weight[s])));
        EXPECT_LE(counts[s], static_cast<std::int64_t>(std::ceil(256 * weight[s])));
        // Each rank (64 slots) and each device (32 slots): floor or ceil of its share.
        for (int unit = 0; unit < 8; ++unit) {
          const auto count_in = [&](int size, int u) {
            return std::count_if(g.begin() + u * size, g.begin() + (u + 1) * size,
                                 [&](const Slot& x) { return x.source == static_cast<int>(s); });
          };
          if (unit < 4) {
            const std::int64_t r = count_in(64, unit);
            EXPECT_TRUE(r == counts[s] / 4 || r == (counts[s] + 3) / 4) << r << " " << counts[s];
          }
          const std::int64_t d = count_in(32, unit);
          EXPECT_TRUE(d == counts[s] / 8 || d == (counts[s] + 7) / 8) << d << " " << counts[s];
        }
      }
    }
    EXPECT_EQ(total, (std::vector<std::int64_t>{6000, 3000, 1000}));
  }
}

// Over an epoch each source's stream indices [e a_s, (e + 1) a_s) are delivered once each; a
// source read past its size continues with its own next epoch's order; one read less than its
// size repeats nothing until its pass is done.
TEST(MixturePlan, EachSourceReadsItsOwnStreamOnceAndWrapsIntoItsNextEpoch) {
  const MixtureConfig c = three_sources(64, 2, 4, 0);
  MixturePlan plan(c);
  std::vector<std::multiset<std::int64_t>> got(3);
  for (std::int64_t epoch = 0; epoch < 5; ++epoch) {
    std::vector<std::multiset<std::int64_t>> delivered(3), expected(3);
    for (std::int64_t i = 0; i < plan.batches_per_epoch(); ++i)
      for (const Slot& s : global_batch(c, epoch, i))
        if (s.valid) delivered[static_cast<std::size_t>(s.source)].insert(s.id);
    for (std::size_t s = 0; s < 3; ++s) {
      const std::int64_t a = c.sources[s].budget;
      for (std::int64_t t = epoch * a; t < (epoch + 1) * a; ++t)
        expected[s].insert(plan.stream_sample(s, t));
      EXPECT_EQ(delivered[s], expected[s]) << "epoch " << epoch << " source " << s;
    }
  }
  // Source 2 (1,000 of 2,500 an epoch): epochs 0 and 1 deliver 2,000 different samples, all its.
  std::set<std::int64_t> two;
  for (std::int64_t t = 0; t < 2000; ++t) two.insert(plan.stream_sample(2, t));
  EXPECT_EQ(two.size(), 2000u);
  EXPECT_GE(*two.begin(), 5500);
  EXPECT_LT(*two.rbegin(), 8000);
  // Source 0's stream is its own plan's epochs one after another: its pass 1 is its epoch 1.
  PlanConfig own;
  own.samples = 4000;
  own.batch = 1;
  own.seed = mixture_source_seed(11, 0);
  EpochPlan zero(own);
  for (std::int64_t p = 0; p < 4000; p += 97) {
    EXPECT_EQ(plan.stream_sample(0, p), zero.sample_at(0, p));
    EXPECT_EQ(plan.stream_sample(0, 4000 + p), zero.sample_at(1, p));
  }
  EXPECT_NE(plan.stream_sample(0, 4000), plan.stream_sample(0, 0));
}

// The same global batch for 4 ranks x 1 device, 2 x 2, 1 x 4 and 2 x 1 x 128, slot by slot
// where the devices are the same (4 x 1 and 1 x 4), and as a multiset always.
TEST(MixturePlan, AnyLayoutOfTheSameGlobalBatchHoldsTheSameSamples) {
  for (std::int64_t i : {0, 7, 38, 39}) {
    const std::vector<Slot> four_by_one = global_batch(three_sources(64, 1, 4, 0), 1, i);
    const std::vector<Slot> one_by_four = global_batch(three_sources(256, 4, 1, 0), 1, i);
    const std::vector<Slot> two_by_two = global_batch(three_sources(128, 2, 2, 0), 1, i);
    const std::vector<Slot> two_by_one = global_batch(three_sources(128, 1, 2, 0), 1, i);
    EXPECT_EQ(four_by_one, one_by_four) << i;
    for (const std::vector<Slot>* other : {&two_by_two, &two_by_one}) {
      std::multiset<Slot> a(four_by_one.begin(), four_by_one.end());
      std::multiset<Slot> b(other->begin(), other->end());
      EXPECT_TRUE(a == b) << i;
    }
  }
}

// Saved at a batch of epoch 2 on 2 ranks x 2 devices (batch 32 a rank) and resumed on 3 ranks x
// 1 device (batch 40): the rest of the epoch delivers each source's remaining samples exactly
// once; resumed with the saving layout, it delivers what the uninterrupted run delivers.
TEST(MixturePlan, AResumeOnOtherRanksDeliversEachSourcesRemainingSamplesExactlyOnce) {
  const MixtureConfig saving = three_sources(32, 2, 2, 0);
  MixturePlan before_save(saving);
  const std::int64_t saved_at = 23;  // the next batch to deliver
  std::vector<std::int64_t> consumed(3);
  before_save.consumed_before(2, saved_at, consumed);
  EXPECT_EQ(std::accumulate(consumed.begin(), consumed.end(), std::int64_t{0}), 23 * 64);
  std::vector<std::multiset<std::int64_t>> all(3), seen(3);
  for (std::int64_t i = 0; i < before_save.batches_per_epoch(); ++i)
    for (const Slot& s : global_batch(saving, 2, i)) {
      if (!s.valid) continue;
      all[static_cast<std::size_t>(s.source)].insert(s.id);
      if (i < saved_at) seen[static_cast<std::size_t>(s.source)].insert(s.id);
    }
  MixtureConfig resumed = three_sources(40, 1, 3, 0);
  resumed.resume_epoch = 2;
  resumed.resume_consumed = consumed;
  MixturePlan after(resumed);
  EXPECT_GT(after.resume_first(), 0);
  for (std::int64_t i = after.resume_first(); i < after.batches_per_epoch(); ++i) {
    const std::vector<Slot> g = global_batch(resumed, 2, i);
    std::vector<std::int64_t> counts(3);
    after.batch_counts(2, i, counts);
    // Each full batch of the rest: within one of each source's share of what was left.
    for (std::size_t s = 0; s < 3 && i + 1 < after.batches_per_epoch(); ++s) {
      const double share = 120.0 * static_cast<double>(saving.sources[s].budget - consumed[s]) /
                           static_cast<double>(10000 - 23 * 64);
      EXPECT_LT(std::abs(static_cast<double>(counts[s]) - share), 1.0) << i << " " << s;
    }
    for (const Slot& s : g)
      if (s.valid) seen[static_cast<std::size_t>(s.source)].insert(s.id);
  }
  for (std::size_t s = 0; s < 3; ++s) EXPECT_TRUE(seen[s] == all[s]) << "source " << s;
  // The next epoch is plain on the new layout, as if never resumed.
  MixtureConfig plain = three_sources(40, 1, 3, 0);
  EXPECT_EQ(global_batch(resumed, 3, 5), global_batch(plain, 3, 5));

  // The saving layout again: the uninterrupted batches.
  MixtureConfig exact = saving;
  exact.resume_epoch = 2;
  exact.resume_consumed = consumed;
  MixturePlan same(exact);
  EXPECT_EQ(same.resume_first(), saved_at);
  for (std::int64_t i : {saved_at, saved_at + 1, before_save.batches_per_epoch() - 1})
    EXPECT_EQ(global_batch(exact, 2, i), global_batch(saving, 2, i)) << i;
}

// A one-source mixture is its source's own plan, read one epoch after another.
TEST(MixturePlan, OneSourceReadsItsOrderInBatches) {
  MixtureConfig c;
  c.sources = {{100, 1000, 1000, {}, 0}};
  c.batch = 100;
  c.seed = 3;
  MixturePlan plan(c);
  PlanConfig own;
  own.samples = 1000;
  own.batch = 1;
  own.seed = mixture_source_seed(3, 0);
  EpochPlan order(own);
  std::vector<std::int64_t> ids(100);
  std::vector<std::uint8_t> valid(100);
  std::vector<std::int32_t> sources(100);
  for (std::int64_t i = 0; i < 10; ++i) {
    plan.batch(1, i, ids, valid, sources);
    for (std::int64_t k = 0; k < 100; ++k)
      EXPECT_EQ(ids[static_cast<std::size_t>(k)], 100 + order.sample_at(1, i * 100 + k));
  }
}

// Under kPad the last batch's padding repeats its samples with valid 0; under kDrop the last
// partial batch is not delivered; misuse is a ConfigError naming the problem.
TEST(MixturePlan, PaddingDroppingAndMisuse) {
  MixtureConfig c = three_sources(64, 1, 1, 0);
  MixturePlan pad(c);
  std::vector<std::int64_t> ids(64);
  std::vector<std::uint8_t> valid(64);
  std::vector<std::int32_t> sources(64);
  const std::int64_t last = pad.batches_per_epoch() - 1;  // 10,000 = 156 x 64 + 16
  EXPECT_EQ(last, 156);
  pad.batch(0, last, ids, valid, sources);
  EXPECT_EQ(std::count(valid.begin(), valid.end(), 1), 16);
  for (std::size_t k = 16; k < 64; ++k) EXPECT_EQ(ids[k], ids[k % 16]);
  c.last_batch = LastBatch::kDrop;
  EXPECT_EQ(MixturePlan(c).batches_per_epoch(), 156);

  const auto refused = [](MixtureConfig m, const std::string& says) {
    try {
      MixturePlan p(m);
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  MixtureConfig none = c;
  none.sources.clear();
  refused(none, "at least one source");
  MixtureConfig empty = c;
  empty.sources[1].samples = 0;
  refused(empty, "mixture source 1 has no samples");
  MixtureConfig small = three_sources(64, 1, 1, 0);
  small.sources = {{0, 10, 10, {}, 0}};
  small.last_batch = LastBatch::kDrop;
  refused(small, "less than one global batch of 64");
  MixtureConfig odd = three_sources(64, 1, 1, 0);
  odd.resume_epoch = 0;
  odd.resume_consumed = {1, 2};
  refused(odd, "counts 2 mixture sources, this mixture has 3");
  odd.resume_consumed = {1, 2, 5000};
  refused(odd, "5000 samples of mixture source 2 delivered");
}

// Budgets: weights share what the fixed budgets leave of the epoch (by default the sum of the
// sizes), by largest remainder; samples and repeat are taken as they are; misuse names the
// source.
TEST(MixturePlan, BudgetsFollowWeightsSamplesAndRepeats) {
  const std::vector<BudgetRule> weighted = {
      {4000, 0.6, 0, 0}, {1500, 0.3, 0, 0}, {2500, 0.1, 0, 0}};
  EXPECT_EQ(mixture_budgets(weighted, 0), (std::vector<std::int64_t>{4800, 2400, 800}));
  EXPECT_EQ(mixture_budgets(weighted, 10000), (std::vector<std::int64_t>{6000, 3000, 1000}));
  EXPECT_EQ(
      mixture_budgets(std::vector<BudgetRule>{{10, 1, 0, 0}, {10, 1, 0, 0}, {10, 1, 0, 0}}, 100),
      (std::vector<std::int64_t>{34, 33, 33}));
  // A curated set read twice and a part of a large one, the rest shared by weight.
  const std::vector<BudgetRule> mixed = {
      {1000, 0, 0, 2}, {1000000, 0, 5000, 0}, {20000, 3, 0, 0}, {30000, 1, 0, 0}};
  EXPECT_EQ(mixture_budgets(mixed, 47000), (std::vector<std::int64_t>{2000, 5000, 30000, 10000}));
  // Nothing given: one pass.
  EXPECT_EQ(mixture_budgets(std::vector<BudgetRule>{{7, 0, 0, 0}, {9, 0, 0, 0.5}}, 0),
            (std::vector<std::int64_t>{7, 5}));

  const auto refused = [](std::vector<BudgetRule> r, std::int64_t e, const std::string& says) {
    try {
      mixture_budgets(r, e);
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& x) {
      EXPECT_NE(std::string(x.what()).find(says), std::string::npos) << x.what();
    }
  };
  refused({{10, 1, 5, 0}}, 0, "mixture source 0: give one of weight, samples and repeat");
  refused({{10, 0, 0, -1}}, 0, "must not be negative");
  refused({{10, 0, 0, 0.01}}, 0,
          "mixture source 0: repeat 0.010000 of its 10 samples is no sample");
  refused({{10, 0, 20, 0}, {10, 1, 0, 0}}, 20, "take 20 samples of an epoch of 20");
  refused({{10, 0, 0, 0}}, 11,
          "epoch_samples 11 is not what the sources' samples and repeats make, 10");
  refused({{10, 1, 0, 0}, {10, 0.001, 0, 0}}, 0, "mixture source 1: weight 0.001000 of the 20");
}

}  // namespace
}  // namespace stoke::detail
