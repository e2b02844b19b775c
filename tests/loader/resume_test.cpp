// Elastic resume end to end: a state saved by ranks of one shape continues the same epoch on
// loaders of another (ranks, devices, global batch), for folders, IDX data and tar shards, with
// every sample of the epoch delivered once and with the pixels the uninterrupted run gives it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace stoke {
namespace {

// The valid samples delivered so far: id -> its pixels.
using Taken = std::map<std::int64_t, std::vector<std::uint8_t>>;

// Takes the next `batches` batches (-1: the rest of the epoch) into `into`; a sample delivered
// again is a failure.
void take(Loader& loader, int batches, Taken& into) {
  for (int i = 0; batches < 0 || i < batches; ++i) {
    auto b = loader.next();
    if (!b) {
      EXPECT_LT(batches, 0) << "the epoch ended early";
      return;
    }
    const std::size_t bytes = b->pixels().size() / static_cast<std::size_t>(b->size());
    for (int j = 0; j < b->size(); ++j) {
      if (!b->valid()[j]) continue;
      const auto* p = b->pixels().data() + static_cast<std::size_t>(j) * bytes;
      const bool fresh =
          into.emplace(b->sample_ids()[j], std::vector<std::uint8_t>(p, p + bytes)).second;
      EXPECT_TRUE(fresh) << "sample " << b->sample_ids()[j] << " delivered twice (batch "
                         << b->epoch() << "." << b->index() << ")";
    }
  }
}

// One leg of a job: its shape and how many batches each rank takes (-1: to the epoch's end).
struct Leg {
  int world;
  int batch;  // per rank
  const char* devices;
  int batches;
};

constexpr std::int64_t kEpoch = 1;

Options shaped(Options o, const Leg& leg, int rank) {
  o.world = leg.world;
  o.rank = rank;
  o.batch = leg.batch;
  o.devices = DeviceSet::parse(leg.devices);
  return o;
}

// Runs the legs one after the other, each resuming from the state the previous one saved (the
// first starts at batch 0 of kEpoch), and returns what they delivered of kEpoch. Every rank of a
// leg must save the same state.
Taken run_legs(const Options& base, const std::vector<Leg>& legs) {
  Taken taken;
  std::optional<LoaderState> saved;
  for (std::size_t l = 0; l < legs.size(); ++l) {
    const Leg& leg = legs[l];
    SCOPED_TRACE(testing::Message() << "leg " << l << ": " << leg.world << " rank(s) x "
                                    << leg.devices << ", batch " << leg.batch);
    std::optional<LoaderState> leg_state;
    for (int r = 0; r < leg.world; ++r) {
      Options o = shaped(base, leg, r);
      o.resume = saved;
      Loader loader(o);
      if (!saved) loader.set_epoch(kEpoch);
      take(loader, leg.batches, taken);
      const LoaderState s = loader.state();
      if (leg_state) {
        EXPECT_EQ(s.serialize(), leg_state->serialize()) << "rank " << r;
      }
      leg_state = s;
    }
    // A leg that drained the epoch was told it ended, and so stands at the next one's start.
    EXPECT_EQ(leg_state->epoch, leg.batches < 0 ? kEpoch + 1 : kEpoch);
    if (leg.batches < 0) {
      EXPECT_EQ(leg_state->position, 0);
    }
    saved = leg_state;
  }
  return taken;
}

// What one uninterrupted loader delivers of kEpoch.
Taken uninterrupted(const Options& base, const Leg& leg) {
  Taken taken;
  Loader loader(shaped(base, leg, 0));
  loader.set_epoch(kEpoch);
  take(loader, -1, taken);
  return taken;
}

// Saved at 2 ranks x 1 device after 3 batches, then 1 rank x 2 devices with the same global
// batch, or 1 rank x 4 devices with another one, saved again, and 2 ranks x 2 devices with a
// third: every sample of the epoch exactly once, each with the pixels of the uninterrupted run
// (a sample's augmentation follows its global position, which no reshaping changes).
void expect_elastic_resume(Options base, const std::string& what) {
  SCOPED_TRACE(what);
  base.seed = 11;
  const Leg saved_at{2, 8, "cpu:1", 3};
  const Taken whole = uninterrupted(base, {1, 16, "cpu:1", -1});
  const std::int64_t samples = static_cast<std::int64_t>(whole.size());
  for (const std::vector<Leg>& legs :
       {std::vector<Leg>{saved_at, {1, 16, "cpu:2", -1}},
        std::vector<Leg>{saved_at, {1, 12, "cpu:4", 2}, {2, 10, "cpu:2", -1}}}) {
    SCOPED_TRACE(testing::Message() << legs.size() << " legs");
    const Taken taken = run_legs(base, legs);
    EXPECT_EQ(static_cast<std::int64_t>(taken.size()), samples);
    EXPECT_TRUE(taken == whole) << "other samples, or other pixels, than the uninterrupted run";
  }
}

// Under drop the resumed legs deliver their whole global batches from the saved position on:
// no sample twice, and fewer than the last leg's global batch left out at the end.
void expect_elastic_resume_with_drop(Options base, const std::string& what) {
  SCOPED_TRACE(what);
  base.seed = 11;
  base.last_batch = LastBatch::kDrop;
  const Leg saved_at{2, 8, "cpu:1", 3};
  Options pad = base;
  pad.last_batch = LastBatch::kPad;
  const Taken whole = uninterrupted(pad, {1, 16, "cpu:1", -1});
  const Taken taken = run_legs(base, {saved_at, {1, 12, "cpu:4", 2}, {1, 20, "cpu:2", -1}});
  const auto left = static_cast<std::int64_t>(whole.size() - taken.size());
  EXPECT_GE(left, 0);
  EXPECT_LT(left, 20);
  for (const auto& [id, pixels] : taken) EXPECT_EQ(pixels, whole.at(id)) << "sample " << id;
}

Options small_images(std::string data) {
  Options o = test::fashion_options(1, 8);
  o.data = std::move(data);
  o.height = o.width = 16;
  return o;
}

TEST(ElasticResume, AFolderContinuesOnOtherRanksDevicesAndBatches) {
  expect_elastic_resume(small_images(test::testdata("jpeg")), "folder");
  expect_elastic_resume_with_drop(small_images(test::testdata("jpeg")), "folder");
}

// decode=hybrid splits by global position and the devices decode what the workers drew: a
// resume onto other ranks, devices and batches delivers the uninterrupted run's pixels.
TEST(ElasticResume, HybridDecodeContinuesWithTheSamePixels) {
  Options o = small_images(test::testdata("jpeg"));
  o.decode = Decode::kHybrid;
  o.gpu_share = 0.5;
  expect_elastic_resume(o, "folder, decode=hybrid");
}

// Photometric steps and a policy draw from the sample's global position too: a resume onto
// other ranks, devices and batches delivers the pixels of the uninterrupted run.
TEST(ElasticResume, PhotometricStepsAndPoliciesContinueWithTheSamePixels) {
  Options o = small_images(test::testdata("jpeg"));
  o.pipeline = make_pipeline(
      16, 16, 3,
      parse_steps("random_resized_crop 16 16 | horizontal_flip | color_jitter 0.4 0.4 0.4 0.1 | "
                  "random_grayscale 0.2 | trivial_augment_wide | rand_augment 2 9"));
  expect_elastic_resume(o, "folder, photometric steps and policies");
}

// timm's RandAugment and AugMix alike.
TEST(ElasticResume, TimmAugmentContinuesWithTheSamePixels) {
  Options o = small_images(test::testdata("jpeg"));
  o.pipeline = make_pipeline(
      16, 16, 3,
      parse_steps("random_resized_crop 16 16 | horizontal_flip | timm_augment "
                  "rand-m9-mstd0.5-inc1 interpolation=bicubic | timm_augment augmix-m5-w3"));
  expect_elastic_resume(o, "folder, timm_augment");
}

// random_affine's warps, before the crop (on the whole image), before a flip and on the output,
// draw from the global position too.
TEST(ElasticResume, RandomAffineContinuesWithTheSamePixels) {
  Options o = small_images(test::testdata("jpeg"));
  o.pipeline = make_pipeline(
      16, 16, 3,
      parse_steps("random_affine -20 20 0.1 0.1 | random_resized_crop 16 16 | "
                  "random_affine_bilinear -10 10 0 0 0.9 1.1 -5 5 | horizontal_flip | "
                  "random_affine 30"));
  expect_elastic_resume(o, "folder, random_affine");
}

// AugMix's weights, depths and ops too.
TEST(ElasticResume, AugMixContinuesWithTheSamePixels) {
  Options o = small_images(test::testdata("jpeg"));
  o.pipeline =
      make_pipeline(16, 16, 3, parse_steps("random_resized_crop 16 16 | horizontal_flip | augmix"));
  expect_elastic_resume(o, "folder, augmix");
}

TEST(ElasticResume, IdxDataContinuesOnOtherRanksDevicesAndBatches) {
  expect_elastic_resume(test::fashion_options(1, 8), "IDX");
  expect_elastic_resume_with_drop(test::fashion_options(1, 8), "IDX");
}

TEST(ElasticResume, TarShardsContinueOnOtherRanksDevicesAndBatches) {
  test::TempDir dir;
  const std::string pack = std::string(STOKE_PACK) + " --no-progress --data " +
                           test::testdata("jpeg") + " --out " + (dir.path() / "e-%d.tar").string() +
                           " --shard-samples 30 > /dev/null";
  ASSERT_EQ(std::system(pack.c_str()), 0) << pack;
  Options o = small_images((dir.path() / "e-{0..3}.tar").string());
  o.shuffle_window = 2;
  expect_elastic_resume(o, "shards, window of 2");
  expect_elastic_resume_with_drop(o, "shards, window of 2");
}

// After a resume, set_epoch (to the resumed epoch or another) gives plain full epochs, as does
// the epoch after the resumed one: what a loader never resumed delivers.
TEST(ElasticResume, EpochsAfterAResumeAreFullAndPlain) {
  Options o = test::fashion_options(1, 12);
  o.devices = DeviceSet::parse("cpu:4");
  Options fresh_options = o;
  Loader fresh(fresh_options);
  fresh.set_epoch(2);
  const test::Delivered e2 = test::collect(fresh);
  const test::Delivered e3 = test::collect(fresh);

  o.resume = LoaderState{o.seed, 2, 1000, 62, 10000, 16};  // position 1000: batch 62.5 of 16
  {
    Loader resumed(o);
    const test::Delivered rest = test::collect(resumed);
    EXPECT_EQ(rest.indices.front(), 834 - (9000 + 11) / 12);
    EXPECT_EQ(std::count(rest.valid.begin(), rest.valid.end(), 1), 9000);
    EXPECT_TRUE(test::collect(resumed) == e3) << "the epoch after the resumed one";
  }
  {
    Loader resumed(o);
    test::collect(resumed, 5);
    resumed.set_epoch(2);
    EXPECT_TRUE(test::collect(resumed) == e2) << "set_epoch back to the resumed epoch";
  }
  {
    Loader resumed(o);
    resumed.set_epoch(3);
    EXPECT_TRUE(test::collect(resumed) == e3) << "set_epoch to another epoch";
  }
}

// A loader resumed elsewhere reports where it is, so its own state resumes in turn.
TEST(ElasticResume, AResumedLoaderReportsTheGlobalPositionOfItsNextBatch) {
  Options o = test::fashion_options(0, 12);
  o.resume = LoaderState{o.seed, 0, 1000, 62, 10000, 16};
  Loader resumed(o);
  const std::int64_t first = 834 - (9000 + 11) / 12;
  EXPECT_EQ(resumed.state(), (LoaderState{o.seed, 0, 1000, first, 10000, 12}));
  test::collect(resumed, 4);
  EXPECT_EQ(resumed.state(), (LoaderState{o.seed, 0, 1048, first + 4, 10000, 12}));
}

}  // namespace
}  // namespace stoke
