#include "plan/epoch_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

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

// One sample as some rank received it: where it sits in the epoch's (padded) order.
struct Placed {
  std::int64_t position;
  std::int64_t id;
  std::uint8_t valid;
};

// Every rank's share of global batches [from, to) of `epoch`, in position order. `c.rank` is
// ignored; the returned batch() positions are checked against the plan's position().
std::vector<Placed> deliver(PlanConfig c, std::int64_t epoch, std::int64_t from, std::int64_t to) {
  std::vector<Placed> out;
  std::vector<EpochPlan> plans;
  for (int r = 0; r < c.world; ++r) {
    c.rank = r;
    plans.emplace_back(c);
  }
  for (std::int64_t k = from; k < to; ++k) {
    for (int r = 0; r < c.world; ++r) {
      std::vector<std::int64_t> ids(c.batch);
      std::vector<std::uint8_t> valid(c.batch);
      const std::int64_t first = plans[r].batch(epoch, k, ids, valid);
      EXPECT_EQ(first, plans[r].position(epoch, k) + std::int64_t{r} * c.batch);
      for (int j = 0; j < c.batch; ++j) out.push_back({first + j, ids[j], valid[j]});
    }
  }
  return out;
}

// A job's shape: per-rank batch, devices per rank, ranks.
struct Shape {
  int batch;
  int devices;
  int world;
};

Shape random_shape(std::mt19937& rng) {
  const int devices = std::uniform_int_distribution<int>(1, 4)(rng);
  const int batch = devices * std::uniform_int_distribution<int>(1, 6)(rng);
  return {batch, devices, std::uniform_int_distribution<int>(1, 4)(rng)};
}

PlanConfig with_shape(PlanConfig c, Shape s) {
  c.batch = s.batch;
  c.devices = s.devices;
  c.world = s.world;
  return c;
}

// A job saved twice mid-epoch, each time resumed with other ranks, devices and batch: what the
// three parts deliver together is the epoch's order, each position once and in order, with
// padding (valid 0) only past N, repeating the order from its start.
TEST(EpochPlan, ElasticResumeDeliversTheEpochOnceAcrossRankDeviceAndBatchChanges) {
  std::mt19937 rng(20240611);
  for (const LastBatch last : {LastBatch::kPad, LastBatch::kDrop}) {
    for (int trial = 0; trial < 400; ++trial) {
      const std::int64_t n = std::uniform_int_distribution<std::int64_t>(1, 300)(rng);
      Shape shapes[3] = {random_shape(rng), random_shape(rng), random_shape(rng)};
      if (last == LastBatch::kDrop &&
          std::any_of(std::begin(shapes), std::end(shapes),
                      [n](Shape s) { return std::int64_t{s.batch} * s.world > n; }))
        continue;
      PlanConfig base{n, 1, 1, 0, 1, 5, true, last, {}, 0};
      const std::int64_t epoch = 3;
      SCOPED_TRACE(testing::Message() << (last == LastBatch::kPad ? "pad" : "drop") << " N=" << n);
      std::vector<Placed> all;
      std::int64_t position = 0;
      std::int64_t ending_global = 0;  // the global batch of the part that reached the end
      for (int part = 0; part < 3; ++part) {
        PlanConfig c = with_shape(base, shapes[part]);
        if (part > 0) {
          c.resume_epoch = epoch;
          c.resume_position = position;
        }
        const EpochPlan plan(c);
        const std::int64_t first = plan.resume_first();
        const std::int64_t bpe = plan.batches_per_epoch();
        // The first two parts stop somewhere in their share of the epoch; the last drains it.
        const std::int64_t stop =
            part == 2 ? bpe : std::uniform_int_distribution<std::int64_t>(first, bpe)(rng);
        SCOPED_TRACE(testing::Message() << "part " << part << ": B=" << c.batch << " G="
                                        << c.devices << " W=" << c.world << " from position "
                                        << position << ", batches " << first << ".." << stop);
        if (part > 0) {
          ASSERT_GE(first, 0);
          ASSERT_LE(first, bpe);
          if (first < bpe) {
            EXPECT_EQ(plan.position(epoch, first), position);
          }
        }
        const std::vector<Placed> got = deliver(c, epoch, first, stop);
        all.insert(all.end(), got.begin(), got.end());
        position = plan.position(epoch, stop);
        if (stop == bpe && ending_global == 0) ending_global = std::int64_t{c.batch} * c.world;
      }
      EpochPlan unresumed(base);
      const std::vector<std::int64_t>& order = unresumed.order(epoch);
      std::vector<std::int64_t> valid_ids;
      for (std::size_t i = 0; i < all.size(); ++i) {
        const Placed& p = all[i];
        if (i > 0) {
          ASSERT_GT(p.position, all[i - 1].position) << "positions out of order";
        }
        EXPECT_EQ(p.id, order[static_cast<std::size_t>(p.position % n)]);
        EXPECT_EQ(p.valid, p.position < n ? 1 : 0);
        if (p.valid) valid_ids.push_back(p.id);
      }
      // The valid samples are a prefix of the order without a gap: all of it under pad; under
      // drop, all but the tail dropped by the part that reached the end (less than its global
      // batch).
      ASSERT_LE(valid_ids.size(), order.size());
      EXPECT_TRUE(std::equal(valid_ids.begin(), valid_ids.end(), order.begin()));
      const std::int64_t left = n - static_cast<std::int64_t>(valid_ids.size());
      if (last == LastBatch::kPad)
        EXPECT_EQ(left, 0);
      else
        EXPECT_LT(left, ending_global);
    }
  }
}

TEST(EpochPlan, ResumingWithTheSameGlobalBatchAtABatchBoundaryIsThePlainPlan) {
  PlanConfig c{1001, 12, 2, 1, 3, 9, true, LastBatch::kPad, {}, 0};
  EpochPlan plain(c);
  c.resume_epoch = 2;
  c.resume_position = 7 * 36;
  EpochPlan resumed(c);
  EXPECT_EQ(resumed.resume_first(), 7);
  for (std::int64_t k = 7; k < plain.batches_per_epoch(); ++k) {
    std::vector<std::int64_t> a(12), b(12);
    std::vector<std::uint8_t> va(12), vb(12);
    EXPECT_EQ(resumed.batch(2, k, a, va), plain.batch(2, k, b, vb));
    EXPECT_EQ(a, b);
    EXPECT_EQ(va, vb);
  }
}

TEST(EpochPlan, AResumeOffsetAppliesToTheResumedEpochOnlyUntilCleared) {
  // 100 samples resumed at position 30 with a global batch of 40: two batches are left (30..69
  // and 70..109, padded past 99), numbered 1 and 2 of the epoch's three.
  PlanConfig c{100, 40, 1, 0, 1, 4, false, LastBatch::kPad, {}, 0};
  c.resume_epoch = 5;
  c.resume_position = 30;
  EpochPlan plan(c);
  EXPECT_EQ(plan.batches_per_epoch(), 3);
  EXPECT_EQ(plan.resume_first(), 1);
  EXPECT_EQ(plan.position(5, 1), 30);
  EXPECT_EQ(plan.position(5, 2), 70);
  EXPECT_EQ(plan.position(5, 3), 100);  // done
  EXPECT_EQ(plan.position(6, 1), 40);   // later epochs are plain
  std::vector<std::int64_t> ids(40);
  std::vector<std::uint8_t> valid(40);
  EXPECT_EQ(plan.batch(5, 2, ids, valid), 70);
  EXPECT_EQ(ids[29], 99);
  EXPECT_EQ(valid[29], 1);
  EXPECT_EQ(ids[30], 0);  // padding wraps to the order's start
  EXPECT_EQ(valid[30], 0);
  EXPECT_EQ(std::count(valid.begin(), valid.end(), 0), 10);
  EXPECT_TRUE(plan.clear_resume());
  EXPECT_FALSE(plan.clear_resume());
  EXPECT_EQ(plan.resume_first(), 0);
  EXPECT_EQ(plan.batch(5, 1, ids, valid), 40);
}

TEST(EpochPlan, AResumedEpochWithNothingLeftStartsAtItsEnd) {
  PlanConfig c{100, 40, 1, 0, 1, 4, true, LastBatch::kPad, {}, 0};
  c.resume_epoch = 0;
  c.resume_position = 100;
  EXPECT_EQ(EpochPlan(c).resume_first(), 3);
  // Under drop, 15 samples left make no global batch of 40: they are that epoch's dropped tail.
  c.last_batch = LastBatch::kDrop;
  c.resume_position = 85;
  EXPECT_EQ(EpochPlan(c).resume_first(), 2);
  EXPECT_EQ(EpochPlan(c).batches_per_epoch(), 2);
  c.resume_position = 45;
  const EpochPlan plan(c);
  EXPECT_EQ(plan.resume_first(), 1);
  EXPECT_EQ(plan.position(0, 1), 45);
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

// torchvision's RASampler (references/classification/sampler.py) for replica `d` of `replicas`:
// the order with each entry repeated k times, padded from its start to a multiple of the
// replicas, dealt every replicas-th entry, cut to floor(floor(N / 256) * 256 / replicas).
std::vector<std::int64_t> ra_sampler(const std::vector<std::int64_t>& order, int k, int d,
                                     int replicas) {
  const auto n = static_cast<std::int64_t>(order.size());
  std::vector<std::int64_t> indices;
  for (std::int64_t id : order)
    for (int i = 0; i < k; ++i) indices.push_back(id);
  const std::int64_t per = (n * k + replicas - 1) / replicas;
  const std::int64_t total = per * replicas;
  for (std::int64_t i = 0; static_cast<std::int64_t>(indices.size()) < total; ++i)
    indices.push_back(indices[static_cast<std::size_t>(i)]);
  std::vector<std::int64_t> mine;
  for (std::int64_t i = d; i < total; i += replicas)
    mine.push_back(indices[static_cast<std::size_t>(i)]);
  mine.resize(static_cast<std::size_t>(n / 256 * 256 / replicas));
  return mine;
}

TEST(EpochPlan, RepeatedAugmentationDealsWhatTorchvisionsRASamplerDeals) {
  for (std::int64_t n : {256, 300, 1000, 1030}) {
    for (int k : {2, 3, 4}) {
      for (int world : {1, 2, 3}) {
        for (int devices : {1, 2}) {
          for (int per_device : {1, 4, 8}) {
            for (const LastBatch last : {LastBatch::kPad, LastBatch::kDrop}) {
              PlanConfig c{n, per_device * devices, devices, 0, world, 7, true, last, {}, 0};
              c.repeats = k;
              const int replicas = devices * world;
              const std::int64_t selected = n / 256 * 256 / replicas;
              if (last == LastBatch::kDrop && selected < per_device) continue;
              SCOPED_TRACE(testing::Message()
                           << "N=" << n << " k=" << k << " W=" << world << " G=" << devices
                           << " b=" << per_device << (last == LastBatch::kPad ? " pad" : " drop"));
              for (int r = 0; r < world; ++r) {
                c.rank = r;
                EpochPlan plan(c);
                const std::int64_t steps = last == LastBatch::kPad
                                               ? (selected + per_device - 1) / per_device
                                               : selected / per_device;
                ASSERT_EQ(plan.batches_per_epoch(), steps);  // torchvision's steps per epoch
                for (int g = 0; g < devices; ++g) {
                  const std::vector<std::int64_t> want =
                      ra_sampler(plan.order(2), k, r * devices + g, replicas);
                  std::vector<std::int64_t> got;
                  for (std::int64_t b = 0; b < steps; ++b) {
                    std::vector<std::int64_t> ids(static_cast<std::size_t>(c.batch));
                    std::vector<std::uint8_t> valid(static_cast<std::size_t>(c.batch));
                    plan.batch(2, b, ids, valid);
                    for (int i = 0; i < per_device; ++i)
                      if (valid[static_cast<std::size_t>(g * per_device + i)])
                        got.push_back(ids[static_cast<std::size_t>(g * per_device + i)]);
                  }
                  // Drop leaves out RASampler's short last batch; pad delivers all of it.
                  const std::size_t kept = static_cast<std::size_t>(
                      last == LastBatch::kPad ? selected : steps * per_device);
                  ASSERT_EQ(got.size(), kept);
                  EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin()));
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(EpochPlan, RepeatedAugmentationResumesOntoOtherShapesWithEveryPositionOnce) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 600; ++trial) {
    const std::int64_t n = std::uniform_int_distribution<std::int64_t>(256, 900)(rng);
    const Shape first = random_shape(rng), second = random_shape(rng);
    if (first.devices * first.world != second.devices * second.world) continue;  // the same L
    PlanConfig base{n, 1, 1, 0, 1, 5, true, LastBatch::kPad, {}, 0};
    base.repeats = 3;
    const std::int64_t epoch = 1;
    std::map<std::int64_t, int> seen;  // valid ids delivered, with their counts
    PlanConfig a = with_shape(base, first);
    a.repeats = 3;
    const EpochPlan pa(a);
    const std::int64_t stop =
        std::uniform_int_distribution<std::int64_t>(0, pa.batches_per_epoch())(rng);
    for (const Placed& p : deliver(a, epoch, 0, stop))
      if (p.valid) seen[p.id] += 1;
    PlanConfig b = with_shape(base, second);
    b.repeats = 3;
    b.resume_epoch = epoch;
    b.resume_position = pa.position(epoch, stop);
    const EpochPlan pb(b);
    for (const Placed& p : deliver(b, epoch, pb.resume_first(), pb.batches_per_epoch()))
      if (p.valid) seen[p.id] += 1;
    // R's first L positions, each once: every sample of the order k times, but the tail cut
    // off at L.
    std::map<std::int64_t, int> want;
    EpochPlan unresumed(a);
    const std::vector<std::int64_t>& order = unresumed.order(epoch);
    for (std::int64_t q = 0; q < pa.positions(); ++q)
      want[order[static_cast<std::size_t>(q / 3)]] += 1;
    EXPECT_TRUE(seen == want) << "trial " << trial << " N=" << n << " stop " << stop;
  }
}

// What the shard prefetcher asks for: every order position a batch reads lies in its spans, and
// the spans hold little more than the global batch's k-th part (the padded last batch's two
// pieces included).
TEST(EpochPlan, RepeatedAugmentationOrderSpansCoverWhatEachBatchReadsAndLittleMore) {
  for (std::int64_t n : {256, 1000, 1030}) {
    for (int k : {2, 4}) {
      for (int world : {1, 3}) {
        for (int batch : {4, 100}) {
          PlanConfig c{n, batch, 2, 0, world, 9, true, LastBatch::kPad, {}, 0};
          c.repeats = k;
          SCOPED_TRACE(testing::Message()
                       << "N=" << n << " k=" << k << " W=" << world << " B=" << batch);
          EpochPlan plan(c);
          const std::vector<std::int64_t>& order = plan.order(0);
          std::vector<std::int64_t> at(order.size());
          for (std::size_t i = 0; i < order.size(); ++i)
            at[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
          for (std::int64_t b = 0; b < plan.batches_per_epoch(); ++b) {
            const auto spans = plan.order_spans(0, b);
            const std::int64_t global = std::int64_t{batch} * world;
            EXPECT_LE(spans[0].count + spans[1].count, std::min(n, global / k + 3));
            std::vector<std::int64_t> ids(static_cast<std::size_t>(batch));
            std::vector<std::uint8_t> valid(static_cast<std::size_t>(batch));
            plan.batch(0, b, ids, valid);
            for (std::int64_t id : ids) {
              const std::int64_t p = at[static_cast<std::size_t>(id)];
              const bool inside = std::any_of(spans.begin(), spans.end(), [&](const auto& s) {
                return (p - s.first + n) % n < s.count;
              });
              ASSERT_TRUE(inside) << "batch " << b << " reads order position " << p;
            }
          }
        }
      }
    }
  }
  // A padded last batch: positions [700, 768) and, wrapped, [0, 32) of R.
  PlanConfig c{1000, 100, 1, 0, 1, 0, true, LastBatch::kPad, {}, 0};
  c.repeats = 4;
  const auto spans = EpochPlan(c).order_spans(0, 7);
  EXPECT_EQ(spans[0].first, 175);
  EXPECT_EQ(spans[0].count, 17);
  EXPECT_EQ(spans[1].first, 0);
  EXPECT_EQ(spans[1].count, 8);
}

TEST(EpochPlan, RepeatedAugmentationNeedsSamplesForRASamplersRounding) {
  PlanConfig c{200, 8, 1, 0, 1, 0, true, LastBatch::kPad, {}, 0};
  c.repeats = 4;
  try {
    EpochPlan plan(c);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "repeats 4 keeps floor(floor(N / 256) * 256 / 1 devices) samples per device per "
                 "epoch, as torchvision's RASampler does, and the dataset's 200 samples give "
                 "none; use repeats 1");
  }
}

// The permuted order (PlanConfig::permuted_from; at 2^22 samples by default, here at 1 so that
// small datasets take it): every sample once per epoch across ranks and devices, padding from
// the order's start, a new order each epoch, and, for shards, each shuffle window's positions
// holding exactly its shards' samples.
TEST(EpochPlan, APermutedOrderDealsEverySampleOnceAndKeepsShardWindowsTogether) {
  for (std::int64_t n : {1, 7, 1000, 1001}) {
    for (int world : {1, 3}) {
      for (int devices : {1, 2}) {
        PlanConfig c{n, 4 * devices, devices, 0, world, 3, true, LastBatch::kPad, {}, 0};
        c.permuted_from = 1;
        SCOPED_TRACE(testing::Message() << "N=" << n << " W=" << world << " G=" << devices);
        const EpochIds e = global_epoch(c, 2);
        std::vector<std::int64_t> valid_ids;
        for (std::size_t i = 0; i < e.ids.size(); ++i) {
          if (e.valid[i]) valid_ids.push_back(e.ids[i]);
        }
        ASSERT_EQ(valid_ids.size(), static_cast<std::size_t>(n));
        EpochPlan plan(c);
        for (std::size_t i = 0; i < valid_ids.size(); ++i) {
          ASSERT_EQ(valid_ids[i], plan.sample_at(2, static_cast<std::int64_t>(i)));
        }
        for (std::size_t i = valid_ids.size(); i < e.ids.size(); ++i) {  // padding wraps
          ASSERT_EQ(e.ids[i], valid_ids[i % valid_ids.size()]);
        }
        std::sort(valid_ids.begin(), valid_ids.end());
        for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(valid_ids[static_cast<std::size_t>(i)], i);
        if (n > 7) {
          int same = 0;
          for (std::int64_t p = 0; p < n; ++p) same += plan.sample_at(2, p) == plan.sample_at(3, p);
          EXPECT_LT(same, n / 20);  // another epoch, another order
        }
      }
    }
  }
  // Shards of uneven sizes (an empty one too), shuffled within windows of 3.
  PlanConfig c{0, 8, 1, 0, 1, 5, true, LastBatch::kPad, {0}, 3};
  for (std::int64_t size : {40, 0, 17, 64, 5, 33, 1, 90, 12, 25})
    c.shard_starts.push_back(c.shard_starts.back() + size);
  c.samples = c.shard_starts.back();
  c.permuted_from = 1;
  EpochPlan plan(c);
  for (std::int64_t epoch : {0, 1}) {
    for (const ShardWindow& w : plan.shard_windows(epoch)) {
      std::vector<std::int64_t> got, want;
      for (std::int64_t p = w.begin; p < w.end; ++p) got.push_back(plan.sample_at(epoch, p));
      for (std::size_t shard : w.shards) {
        for (std::int64_t i = c.shard_starts[shard]; i < c.shard_starts[shard + 1]; ++i)
          want.push_back(i);
      }
      EXPECT_FALSE(std::is_sorted(got.begin(), got.end()) && got.size() > 2);
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      EXPECT_EQ(got, want);
    }
  }
  // Unshuffled, the permuted order is the identity, as the array order is.
  c.shuffle = false;
  EpochPlan plain(c);
  for (std::int64_t p = 0; p < c.samples; ++p) ASSERT_EQ(plain.sample_at(0, p), p);
}

// Under the limit nothing changes: the array order, the one existing checksums were made with.
TEST(EpochPlan, BelowTheLimitTheOrderIsTheShuffledArray) {
  PlanConfig c{1000, 8, 1, 0, 1, 3, true, LastBatch::kPad, {}, 0};
  EpochPlan plan(c);
  EXPECT_FALSE(plan.permuted());
  const std::vector<std::int64_t> order = plan.order(1);
  for (std::int64_t p = 0; p < 1000; ++p)
    ASSERT_EQ(plan.sample_at(1, p), order[static_cast<std::size_t>(p)]);
  EXPECT_EQ(kPermutedOrderFrom, std::int64_t{1} << 22);
}

// 100 M samples: a batch anywhere in the epoch, without an array of them.
TEST(EpochPlan, AHundredMillionSamplesNeedNoArray) {
  PlanConfig c{100'000'000, 256, 8, 0, 4, 11, true, LastBatch::kPad, {}, 0};
  EpochPlan plan(c);
  ASSERT_TRUE(plan.permuted());
  std::vector<std::int64_t> ids(256);
  std::vector<std::uint8_t> valid(256);
  std::set<std::int64_t> seen;
  for (std::int64_t b :
       {std::int64_t{0}, plan.batches_per_epoch() / 2, plan.batches_per_epoch() - 1}) {
    plan.batch(7, b, ids, valid);
    for (std::size_t j = 0; j < ids.size(); ++j) {
      ASSERT_GE(ids[j], 0);
      ASSERT_LT(ids[j], 100'000'000);
      seen.insert(ids[j]);
    }
  }
  EXPECT_EQ(seen.size(), 3u * 256);  // distinct positions, distinct samples
}

// 100 M samples (the permuted order): a job saved mid-epoch by 4 ranks of 8 devices and resumed
// by 7 ranks of 3 continues at the saved position with the same samples, pads its last batch
// from the order's start, and plays the next epoch plainly.
TEST(EpochPlan, AHundredMillionSamplesResumeElasticallyAtTheSavedPosition) {
  const std::int64_t n = 100'000'000;
  PlanConfig saved{n, 256, 8, 0, 4, 11, true, LastBatch::kPad, {}, 0};
  EpochPlan before(saved);
  ASSERT_TRUE(before.permuted());
  const std::int64_t position = before.position(5, 50'000);  // 50,000 global batches of 1,024
  ASSERT_EQ(position, 51'200'000);
  PlanConfig c{n, 96, 3, 0, 7, 11, true, LastBatch::kPad, {}, 0};
  c.resume_epoch = 5;
  c.resume_position = position;
  std::vector<std::int64_t> ids(96);
  std::vector<std::uint8_t> valid(96);
  for (int rank : {0, 3, 6}) {
    c.rank = rank;
    EpochPlan after(c);
    const std::int64_t first = after.resume_first();
    const std::int64_t bpe = after.batches_per_epoch();
    EXPECT_EQ(after.position(5, first), position);
    EXPECT_EQ(bpe - first, (n - position + 671) / 672);  // what is left, in global batches of 672
    for (const std::int64_t k : {first, first + 1, (first + bpe) / 2, bpe - 1}) {
      const std::int64_t at = after.batch(5, k, ids, valid);
      EXPECT_EQ(at, position + (k - first) * 672 + rank * 96);
      for (int j = 0; j < 96; ++j) {
        ASSERT_EQ(ids[j], before.sample_at(5, (at + j) % n)) << "batch " << k << " sample " << j;
        ASSERT_EQ(valid[j], at + j < n ? 1 : 0);
      }
    }
    after.batch(6, 0, ids, valid);  // the next epoch: plain
    for (int j = 0; j < 96; ++j) ASSERT_EQ(ids[j], before.sample_at(6, rank * 96 + j));
  }
}

}  // namespace
}  // namespace stoke::detail
