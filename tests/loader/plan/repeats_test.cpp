// Repeated augmentation through the loader: the epoch's length and dealing as torchvision's
// RASampler has them (epoch_plan_test checks the dealing position by position), each copy
// augmented on its own, and an exact resume in the middle of an epoch.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

Options repeat_options() {
  Options o;
  o.data = test::testdata("fashion-png");  // 1,000 images
  o.batch = 16;
  o.seed = 4;
  o.workers = 2;
  o.devices = DeviceSet::parse("cpu:2");
  o.repeats = 4;
  o.pipeline = make_pipeline(28, 28, 1, parse_steps("random_resized_crop 28 28 | horizontal_flip"));
  o.log = [](std::string_view) {};
  return o;
}

struct Sample {
  std::int64_t id;
  std::vector<std::uint8_t> pixels;
};

std::vector<Sample> take(Loader& loader, std::int64_t batches) {
  std::vector<Sample> out;
  for (std::int64_t k = 0; k < batches; ++k) {
    auto b = loader.next();
    if (!b) break;
    const std::size_t per = b->pixels().size() / static_cast<std::size_t>(b->size());
    for (int i = 0; i < b->size(); ++i) {
      if (b->valid()[static_cast<std::size_t>(i)] == 0) continue;
      const auto* p = b->pixels().data() + static_cast<std::size_t>(i) * per;
      out.push_back({b->sample_ids()[static_cast<std::size_t>(i)], {p, p + per}});
    }
  }
  return out;
}

TEST(RepeatedAugmentation, KeepsRASamplersStepsAndAugmentsEachCopyOnItsOwn) {
  Loader loader(repeat_options());
  // RASampler: floor(floor(1000 / 256) * 256 / 2 devices) = 384 samples per device, 48 steps
  // of 8.
  ASSERT_EQ(loader.batches_per_epoch(), 48);
  const std::vector<Sample> epoch = take(loader, 48);
  ASSERT_EQ(epoch.size(), 768u);
  std::map<std::int64_t, std::vector<const Sample*>> copies;
  for (const Sample& s : epoch) copies[s.id].push_back(&s);
  EXPECT_EQ(copies.size(), 192u);  // 768 positions: 192 samples, 4 copies each
  int identical = 0;
  for (const auto& [id, c] : copies) {
    ASSERT_EQ(c.size(), 4u) << "sample " << id;
    for (std::size_t i = 1; i < c.size(); ++i) identical += c[i]->pixels == c[0]->pixels;
  }
  EXPECT_LT(identical, 20);  // a crop and a flip drawn per copy rarely repeat exactly
}

TEST(RepeatedAugmentation, ResumesExactlyInTheMiddleOfAnEpoch) {
  Loader whole(repeat_options());
  const std::vector<Sample> want = take(whole, 48 + 10);  // into the second epoch
  Loader first(repeat_options());
  std::vector<Sample> got = take(first, 19);
  Options o = repeat_options();
  o.resume = first.state();
  Loader second(o);
  const std::vector<Sample> rest = take(second, 48 + 10 - 19);
  got.insert(got.end(), rest.begin(), rest.end());
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].id, want[i].id) << i;
    ASSERT_TRUE(got[i].pixels == want[i].pixels) << i;
  }
}

// The epoch's length follows the devices in all: a state saved at the end of an epoch on 2
// devices (768 positions) resumes on 5 (765) as that epoch's end; a state of other repeats is
// refused, since its position counts another order.
TEST(RepeatedAugmentation, ResumesOntoOtherDevicesAndRefusesOtherRepeats) {
  Loader first(repeat_options());
  take(first, 48);
  const LoaderState end = first.state();
  EXPECT_EQ(end.position, 768);
  EXPECT_EQ(end.repeats, 4);
  Options o = repeat_options();
  o.devices = DeviceSet::parse("cpu:5");
  o.batch = 15;
  o.resume = end;
  Loader second(o);
  EXPECT_FALSE(second.next());  // epoch 0 is over
  auto b = second.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->epoch(), 1);
  EXPECT_EQ(b->index(), 0);
  o = repeat_options();
  o.repeats = 2;
  o.resume = end;
  try {
    Loader other(o);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "cannot resume from 'stoke-state/2 seed=4 epoch=0 position=768 next_batch=48 "
                 "dataset_size=1000 global_batch=16 repeats=4': it was saved with repeats 4 (now "
                 "2): its position counts another epoch order; resume with the same repeats");
  }
}

TEST(RepeatedAugmentation, ClearErrors) {
  Options o = repeat_options();
  o.data = test::testdata("jpeg");  // 96 images: RASampler's rounding keeps none
  try {
    Loader loader(o);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "repeats 4 keeps floor(floor(N / 256) * 256 / 2 devices) samples per device per "
                 "epoch, as torchvision's RASampler does, and the dataset's 96 samples give "
                 "none; use repeats 1");
  }
  o = repeat_options();
  o.repeats = 0;
  try {
    Loader loader(o);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "repeats must be 1 (off) .. 64 (copies of each sample per epoch; 4 in "
                 "torchvision's recipe), got 0");
  }
}

}  // namespace
}  // namespace stoke
