// The loader end to end: determinism, order, padding, resume, held batches, real datasets.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "plan/epoch_plan.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

using test::collect;
using test::Delivered;
using test::fashion_options;

TEST(Loader, DeliversIdenticalBytesForAnyWorkerCountAndNewBytesEachEpoch) {
  std::vector<Delivered> epoch0, epoch1;
  for (int workers : {0, 1, 2, 4}) {
    Loader loader(fashion_options(workers));
    epoch0.push_back(collect(loader));  // ends by consuming the end-of-epoch nullopt
    epoch1.push_back(collect(loader));
  }
  for (std::size_t i = 1; i < epoch0.size(); ++i) {
    EXPECT_TRUE(epoch0[i] == epoch0[0]) << "workers index " << i;
    EXPECT_TRUE(epoch1[i] == epoch1[0]) << "workers index " << i;
  }
  EXPECT_EQ(epoch0[0].pixels.size(), 10000u * 28 * 28);
  EXPECT_NE(epoch0[0].pixels, epoch1[0].pixels);
  EXPECT_NE(epoch0[0].ids, epoch1[0].ids);
}

TEST(Loader, DeliversBatchesInPlanOrderWithDatasetLabels) {
  const IdxImages idx = read_idx(tools::kDefaultFashionMnistDir, Split::kTest);
  Options o = fashion_options(2, 64);
  o.chunk = 5;  // many small chunks finishing out of order across workers
  Loader loader(o);
  detail::EpochPlan plan({10000, 64, 1, 0, 1, o.seed, true, LastBatch::kPad, {}, 0});
  for (std::int64_t k = 0; k < loader.batches_per_epoch(); ++k) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    ASSERT_EQ(b->index(), k);
    ASSERT_EQ(b->epoch(), 0);
    std::vector<std::int64_t> ids(64);
    std::vector<std::uint8_t> valid(64);
    plan.batch(0, k, ids, valid);
    ASSERT_TRUE(std::equal(ids.begin(), ids.end(), b->sample_ids().begin()));
    ASSERT_TRUE(std::equal(valid.begin(), valid.end(), b->valid().begin()));
    for (int j = 0; j < 64; ++j) ASSERT_EQ(b->labels()[j], idx.labels[ids[j]]);
  }
  EXPECT_FALSE(loader.next());
}

TEST(Loader, EveryBatchHasTheConfiguredSizeAndTheLastIsPaddedWithAValidMask) {
  Options o = fashion_options(2, 384);
  o.devices = DeviceSet::parse("cpu:4");
  Loader loader(o);
  EXPECT_EQ(loader.batches_per_epoch(), 27);  // ceil(10000 / 384)
  std::int64_t batches = 0, valid = 0, padded = 0;
  while (auto b = loader.next()) {
    ++batches;
    ASSERT_EQ(b->size(), 384);
    ASSERT_EQ(b->device_count(), 4);
    for (int g = 0; g < 4; ++g) {
      const DeviceChunk c = b->chunk(g);
      EXPECT_EQ(c.samples, 96);
      EXPECT_EQ(c.first, 96 * g);
      EXPECT_EQ(c.pixels.data(), b->pixels().data() + 96 * g * 28 * 28);
      EXPECT_EQ(c.pixels.size(), 96u * 28 * 28);
    }
    valid += std::count(b->valid().begin(), b->valid().end(), 1);
    padded += b->padded();
  }
  EXPECT_EQ(batches, 27);
  EXPECT_EQ(valid, 10000);
  EXPECT_EQ(padded, 27 * 384 - 10000);
  EXPECT_EQ(loader.stats().padded, padded);
}

TEST(Loader, DropPolicyNeverEmitsAShortBatch) {
  Options o = fashion_options(1, 384);
  o.last_batch = LastBatch::kDrop;
  Loader loader(o);
  const Delivered d = collect(loader);
  EXPECT_EQ(d.indices.size(), 26u);
  EXPECT_EQ(d.padded, 0);
}

TEST(Loader, ResumesMidEpochExactly) {
  Loader full(fashion_options(2));
  const Delivered all0 = collect(full);
  const Delivered all1 = collect(full);

  Loader first(fashion_options(2));
  collect(first, 37);
  const LoaderState saved = first.state();
  EXPECT_EQ(saved.epoch, 0);
  EXPECT_EQ(saved.next_batch, 37);

  Options o = fashion_options(1);
  o.resume = LoaderState::parse(saved.serialize());
  Loader resumed(o);
  const Delivered rest = collect(resumed);
  ASSERT_EQ(rest.indices.front(), 37);
  const std::size_t skip = 37u * 100 * 28 * 28;
  ASSERT_EQ(rest.pixels.size() + skip, all0.pixels.size());
  EXPECT_TRUE(std::equal(rest.pixels.begin(), rest.pixels.end(), all0.pixels.begin() + skip));
  EXPECT_TRUE(collect(resumed) == all1);
}

TEST(Loader, SetEpochRepositionsToTheStartOfThatEpoch) {
  Loader a(fashion_options(2));
  a.set_epoch(3);
  const Delivered e3 = collect(a, 4);
  Loader b(fashion_options(2));
  collect(b, 10);
  b.set_epoch(3);
  EXPECT_TRUE(collect(b, 4) == e3);
  b.set_epoch(3);  // backwards within the epoch
  EXPECT_TRUE(collect(b, 4) == e3);
}

TEST(Loader, HeldBatchesKeepTheirBytesWhileMoreSlotsAreAdded) {
  Options o = fashion_options(2);
  o.prefetch = 2;
  Loader loader(o);
  std::vector<Batch> held;
  std::vector<std::vector<std::uint8_t>> copies;
  for (int i = 0; i < 10; ++i) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    copies.emplace_back(b->pixels().begin(), b->pixels().end());
    held.push_back(*b);
  }
  collect(loader, 20);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(held[i].index(), i);
    EXPECT_TRUE(std::equal(copies[i].begin(), copies[i].end(), held[i].pixels().begin()))
        << "batch " << i << " changed while held";
  }
  EXPECT_GE(loader.stats().slots, 11);
}

TEST(Loader, HoldingMoreThanTheMemoryBudgetIsAClearError) {
  Options o = fashion_options(1);
  o.prefetch = 2;
  o.memory_budget = 1;  // no room beyond the initial slots
  Loader loader(o);
  auto a = loader.next();
  auto b = loader.next();
  ASSERT_TRUE(a && b);
  try {
    loader.next();
    FAIL() << "a third batch appeared with every slot held";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the consumer holds all 2 batch slots"), std::string::npos)
        << e.what();
  }
  b.reset();
  auto c = loader.next();  // releasing one lets the loader continue
  ASSERT_TRUE(c);
  EXPECT_EQ(c->index(), 2);
}

TEST(Loader, BatchOutlivesItsLoader) {
  std::optional<Batch> kept;
  std::vector<std::uint8_t> copy;
  {
    Loader loader(fashion_options(2));
    kept = loader.next();
    copy.assign(kept->pixels().begin(), kept->pixels().end());
  }
  EXPECT_TRUE(std::equal(copy.begin(), copy.end(), kept->pixels().begin()));
}

TEST(Loader, ImageTreeOfPngsIsIdenticalInProcessAndWithWorkers) {
  Options o;
  o.data = test::testdata("fashion-png");
  o.batch = 50;
  o.height = 28;
  o.width = 28;
  o.log = [](std::string_view) {};
  o.workers = 0;
  Loader inline_loader(o);
  o.workers = 2;
  Loader pooled(o);
  const Delivered a = collect(inline_loader), b = collect(pooled);
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.labels.size(), 1000u);
  // Folder order gives the real labels: per-class counts equal those of the IDX file's first
  // 1000 training images, which the tree was made from.
  const IdxImages idx = read_idx(tools::kDefaultFashionMnistDir, Split::kTrain);
  std::vector<int> expected(10, 0), got(10, 0);
  for (int i = 0; i < 1000; ++i) expected[idx.labels[i]] += 1;
  for (std::size_t i = 0; i < a.labels.size(); ++i) {
    ASSERT_GE(a.labels[i], 0);
    ASSERT_LT(a.labels[i], 10);
    if (a.valid[i]) got[a.labels[i]] += 1;
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(inline_loader.pipeline().output_channels(), 3);
}

TEST(Loader, JpegCorpusIsIdenticalInProcessAndWithWorkers) {
  Options o;
  o.data = test::testdata("jpeg");
  o.batch = 16;
  o.log = [](std::string_view) {};
  o.workers = 0;
  Loader inline_loader(o);
  o.workers = 2;
  Loader pooled(o);
  const Delivered a = collect(inline_loader), b = collect(pooled);
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.pixels.size(), a.labels.size() * 224 * 224 * 3);
  EXPECT_EQ(pooled.stats().skipped, 0);
}

// The JPEG corpus at 48x48 through `steps`, batches of 16.
Options jpeg_pipeline(std::uint64_t seed, const char* steps) {
  Options o;
  o.data = test::testdata("jpeg");
  o.batch = 16;
  o.seed = seed;
  o.log = [](std::string_view) {};
  o.pipeline = make_pipeline(48, 48, 3, parse_steps(steps));
  return o;
}

// What the loader delivers of its current epoch, with every sample's applied ops, each batch
// `ops_per_sample` wide.
struct SeenWithOps {
  Delivered d;
  std::vector<AppliedOp> ops;
};
void take_epoch(Loader& loader, int ops_per_sample, SeenWithOps& seen) {
  while (auto b = loader.next()) {
    append(seen.d, *b);
    EXPECT_EQ(b->max_applied_ops(), ops_per_sample);
    seen.ops.insert(seen.ops.end(), b->applied_ops().begin(), b->applied_ops().end());
  }
}

bool same_ops(const std::vector<AppliedOp>& x, const std::vector<AppliedOp>& y) {
  return x.size() == y.size() &&
         std::equal(x.begin(), x.end(), y.begin(), [](const AppliedOp& p, const AppliedOp& q) {
           return p.op == q.op &&
                  std::equal(std::begin(p.args), std::end(p.args), std::begin(q.args));
         });
}

// Two epochs of `o` for 0, 1 and 3 workers (each sample's ops `ops_per_sample` wide): every
// worker count delivers the same pixels and ops in both epochs, and the second epoch draws anew.
// Returns the two epochs (the same for every worker count).
std::pair<SeenWithOps, SeenWithOps> two_epochs_for_any_worker_count(Options o, int ops_per_sample) {
  std::vector<SeenWithOps> first, second;
  for (int workers : {0, 1, 3}) {
    o.workers = workers;
    Loader loader(o);
    take_epoch(loader, ops_per_sample, first.emplace_back());
    take_epoch(loader, ops_per_sample, second.emplace_back());
  }
  for (std::size_t i = 1; i < first.size(); ++i) {
    EXPECT_TRUE(first[i].d == first[0].d) << "workers index " << i;
    EXPECT_TRUE(same_ops(first[i].ops, first[0].ops)) << "workers index " << i;
    EXPECT_TRUE(second[i].d == second[0].d) << "workers index " << i;
    EXPECT_TRUE(same_ops(second[i].ops, second[0].ops)) << "workers index " << i;
  }
  EXPECT_NE(first[0].d.pixels, second[0].d.pixels);
  EXPECT_FALSE(same_ops(first[0].ops, second[0].ops));
  return {first[0], second[0]};
}

// Every photometric step, after and before the last resize: the same pixels and the same applied
// ops for 0, 1 and 3 workers, and new draws the next epoch.
TEST(Loader, PhotometricStepsAreIdenticalForAnyWorkerCount) {
  Options o = jpeg_pipeline(
      5,
      "random_grayscale 0.3 | random_resized_crop 48 48 | horizontal_flip | color_jitter 0.4 0.4 "
      "0.4 0.1 | gaussian_blur 3 | random_solarize 128 | random_posterize 3 | random_equalize | "
      "random_autocontrast | random_adjust_sharpness 2 | random_invert 0.2");
  const auto [first, second] = two_epochs_for_any_worker_count(o, 12);
  // Every kind of op was drawn somewhere in the epoch.
  std::set<ImageOp> kinds;
  for (const AppliedOp& op : first.ops) kinds.insert(op.op);
  EXPECT_EQ(kinds.size(), 13u);  // the twelve ops and kNone padding
}

// The policies after the crop and flip: the same pixels and ops for 0 and 3 workers, and every
// kind of op the policies make drawn somewhere.
TEST(Loader, PoliciesAreIdenticalForAnyWorkerCount) {
  Options o = jpeg_pipeline(8,
                            "random_resized_crop 48 48 | horizontal_flip | trivial_augment_wide "
                            "31 128 | rand_augment 2 9 | auto_augment");
  std::vector<SeenWithOps> seen;
  for (int workers : {0, 3}) {
    o.workers = workers;
    Loader loader(o);
    SeenWithOps& s = seen.emplace_back();
    for (int epoch = 0; epoch < 3; ++epoch) {
      loader.set_epoch(epoch);
      take_epoch(loader, 5, s);
    }
  }
  EXPECT_TRUE(seen[0].d == seen[1].d);
  EXPECT_TRUE(same_ops(seen[0].ops, seen[1].ops));
  std::set<ImageOp> kinds;
  for (const AppliedOp& op : seen[0].ops) kinds.insert(op.op);
  for (ImageOp k :
       {ImageOp::kAffine, ImageOp::kShear, ImageOp::kRotate, ImageOp::kBrightness,
        ImageOp::kSaturation, ImageOp::kContrast, ImageOp::kSharpness, ImageOp::kPosterize,
        ImageOp::kSolarize, ImageOp::kAutocontrast, ImageOp::kEqualize, ImageOp::kInvert})
    EXPECT_TRUE(kinds.count(k)) << image_op_name(k);
}

// timm's policies (DeiT's RandAugment, then AugMix) after the crop and flip: the same pixels and
// ops for 0, 1 and 3 workers, new draws the next epoch, and every Pillow op and both AugMix
// marks drawn somewhere.
TEST(Loader, TimmAugmentIsIdenticalForAnyWorkerCount) {
  Options o = jpeg_pipeline(9,
                            "random_resized_crop 48 48 | horizontal_flip | timm_augment "
                            "rand-m9-mstd0.5-inc1 interpolation=bicubic | timm_augment "
                            "augmix-m5-w3");
  const auto [first, second] = two_epochs_for_any_worker_count(o, 2 + 13);
  std::set<ImageOp> kinds;
  for (const SeenWithOps* s : {&first, &second})
    for (const AppliedOp& op : s->ops) kinds.insert(op.op);
  for (int k = static_cast<int>(ImageOp::kPilAutocontrast);
       k <= static_cast<int>(ImageOp::kTimmAugMixBlend); ++k)
    EXPECT_TRUE(kinds.count(static_cast<ImageOp>(k))) << image_op_name(static_cast<ImageOp>(k));
}

// random_affine before the crop (on the whole image), before a flip (warped, then mirrored) and
// last (on the written output), nearest and bilinear: the same pixels and ops for 0, 1 and 3
// workers, new draws the next epoch.
TEST(Loader, RandomAffineIsIdenticalForAnyWorkerCount) {
  Options o = jpeg_pipeline(9,
                            "random_affine -10 10 0 0 0.9 1.1 | random_resized_crop 48 48 | "
                            "random_affine_bilinear -20 20 0.1 0.1 | horizontal_flip | "
                            "random_affine 30 30 0 0 1 1 -10 10 -5 5 90");
  const auto [first, second] = two_epochs_for_any_worker_count(o, 3);
  // Every sample got its three warps, in the pipeline's order.
  ASSERT_EQ(first.ops.size(), first.d.labels.size() * 3);
  for (std::size_t i = 0; i < first.ops.size(); i += 3) {
    EXPECT_EQ(first.ops[i].op, ImageOp::kAffine);
    EXPECT_EQ(first.ops[i + 1].op, ImageOp::kAffineBilinear);
    EXPECT_EQ(first.ops[i + 2].op, ImageOp::kAffine);
    EXPECT_EQ(first.ops[i + 2].args[0], 30.f);
    EXPECT_EQ(first.ops[i + 2].args[6], 90.f);
  }
}

// AugMix after the crop and flip, twice (its defaults, then nearest with a fill): the same pixels
// and records for 0, 1 and 3 workers, new draws the next epoch, and in the records every op
// of its table, the chain markers and both interpolations.
TEST(Loader, AugMixIsIdenticalForAnyWorkerCount) {
  Options o = jpeg_pipeline(12,
                            "random_resized_crop 48 48 | horizontal_flip | augmix | augmix "
                            "interpolation=nearest fill=128 width=2");
  constexpr int kOps = (1 + 3 * 4) + (1 + 2 * 4);
  const auto [first, second] = two_epochs_for_any_worker_count(o, kOps);
  std::set<ImageOp> kinds;
  std::set<float> interpolations;
  for (const AppliedOp& op : first.ops) {
    kinds.insert(op.op);
    if (op.op == ImageOp::kAugMix) interpolations.insert(op.args[2]);
  }
  for (ImageOp k : {ImageOp::kAugMix, ImageOp::kAugMixChain, ImageOp::kAffine, ImageOp::kShear,
                    ImageOp::kRotate, ImageOp::kBrightness, ImageOp::kSaturation,
                    ImageOp::kContrast, ImageOp::kSharpness, ImageOp::kPosterize,
                    ImageOp::kSolarize, ImageOp::kAutocontrast, ImageOp::kEqualize})
    EXPECT_TRUE(kinds.count(k)) << image_op_name(k);
  EXPECT_FALSE(kinds.count(ImageOp::kInvert));  // not in AugMix's table
  EXPECT_EQ(interpolations, (std::set<float>{0.f, 1.f}));
}

}  // namespace
}  // namespace stoke
