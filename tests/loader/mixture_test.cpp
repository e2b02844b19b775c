// Mixtures of datasets end to end (Options::sources): every global batch holds each source's
// share to within one sample on every rank, a one-pass single source is the loader of that
// dataset, worker counts deliver the same bytes, a resume on other ranks and devices delivers
// each source's rest exactly once, a source past its size wraps into its next epoch's order,
// labels stay per source or follow the classes before them, remote shards go through the shard
// cache, repeats put a sample's copies on different devices, and sources that cannot share a
// loader are refused, naming them.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "plan/mixture_plan.hpp"
#include "servers.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

// A source of Fashion-MNIST's IDX files: raw 28x28 samples, decoded by nothing (quick).
MixtureSource idx_source(Split split, double weight) {
  MixtureSource s;
  s.data = tools::kDefaultFashionMnistDir;
  s.split = split;
  s.weight = weight;
  return s;
}

// A source of an image folder of the test data.
MixtureSource folder_source(const char* name, double weight) {
  MixtureSource s;
  s.data = test::testdata(name);
  s.weight = weight;
  return s;
}

Options mixture(std::vector<MixtureSource> sources, int batch, std::int64_t epoch_samples) {
  Options o = test::fashion_options(0, batch);
  static_cast<SourceOptions&>(o) = SourceOptions{};  // (each source has its own)
  o.sources = std::move(sources);
  o.epoch_samples = epoch_samples;
  return o;
}

// Two image folders (96 JPEGs, 1000 PNGs) at 32x32 through the default augmentation.
Options folder_mixture(int workers) {
  Options o = mixture({folder_source("jpeg", 1), folder_source("fashion-png", 2)}, 24, 144);
  o.workers = workers;
  o.height = o.width = 32;
  return o;
}

// Every batch of an epoch: its sources, ids and valid flags, and everything test::collect takes.
struct Epoch {
  test::Delivered delivered;
  std::vector<std::vector<std::int32_t>> sources;  // per batch
  std::vector<std::vector<std::int64_t>> ids;      // per batch
  std::vector<std::vector<std::uint8_t>> valid;    // per batch
};

Epoch take_epoch(Loader& loader, int batches = -1) {
  Epoch e;
  for (int i = 0; batches < 0 || i < batches; ++i) {
    auto b = loader.next();
    if (!b) break;
    test::append(e.delivered, *b);
    e.sources.emplace_back(b->sources().begin(), b->sources().end());
    e.ids.emplace_back(b->sample_ids().begin(), b->sample_ids().end());
    e.valid.emplace_back(b->valid().begin(), b->valid().end());
  }
  return e;
}

// Of each source, the samples of batch `i` of `e` (valid ones).
std::vector<std::int64_t> counts(const Epoch& e, std::size_t i, std::size_t sources) {
  std::vector<std::int64_t> c(sources);
  for (std::size_t j = 0; j < e.sources[i].size(); ++j)
    if (e.valid[i][j] != 0) c[static_cast<std::size_t>(e.sources[i][j])] += 1;
  return c;
}

TEST(Mixture, EveryGlobalBatchHoldsEachSourcesShareToWithinOneOnEveryRank) {
  const std::vector<double> weights = {0.6, 0.3, 0.1};
  const auto sources = [&] {
    return std::vector<MixtureSource>{idx_source(Split::kTest, weights[0]),
                                      idx_source(Split::kTrain, weights[1]),
                                      idx_source(Split::kTest, weights[2])};
  };
  // One rank: batches of 256, 154/77/25 of each (153.6, 76.8, 25.6) within one.
  Loader one(mixture(sources(), 256, 256 * 8));
  EXPECT_EQ(one.batches_per_epoch(), 8);
  EXPECT_EQ(one.dataset_size(), 10000 + 60000 + 10000);
  const Epoch all = take_epoch(one);
  ASSERT_EQ(all.sources.size(), 8u);
  const std::int64_t firsts[] = {0, 10000, 70000, 80000};
  std::vector<std::set<std::int64_t>> seen(3);
  std::vector<std::int64_t> totals(3);
  for (std::size_t i = 0; i < all.sources.size(); ++i) {
    const std::vector<std::int64_t> c = counts(all, i, 3);
    for (std::size_t s = 0; s < 3; ++s) {
      EXPECT_LT(std::abs(static_cast<double>(c[s]) - 256 * weights[s]), 1.0)
          << "batch " << i << " source " << s << ": " << c[s];
      totals[s] += c[s];
    }
    for (std::size_t j = 0; j < all.ids[i].size(); ++j) {
      const auto s = static_cast<std::size_t>(all.sources[i][j]);
      const std::int64_t id = all.ids[i][j];
      EXPECT_GE(id, firsts[s]);
      EXPECT_LT(id, firsts[s + 1]);
      // Each source's budget is below its size: no sample twice in the epoch.
      EXPECT_TRUE(seen[s].insert(id).second) << "sample " << id << " twice";
    }
  }
  // The budgets: 0.6/0.3/0.1 of 2048, by largest remainder.
  EXPECT_EQ(totals, (std::vector<std::int64_t>{1229, 614, 205}));
  const Stats stats = one.stats();
  EXPECT_EQ(stats.source_samples_epoch, totals);
  EXPECT_EQ(stats.source_samples, totals);
  // The labels are each source's own.
  for (std::size_t i = 0; i < all.delivered.labels.size(); ++i) {
    EXPECT_GE(all.delivered.labels[i], 0);
    EXPECT_LT(all.delivered.labels[i], 10);
  }

  // Two ranks of 128: each holds floor or ceil of half of each source's count in the global
  // batch, and together they hold the one rank's batch.
  for (int rank = 0; rank < 2; ++rank) {
    Options o = mixture(sources(), 128, 256 * 8);
    o.world = 2;
    o.rank = rank;
    Loader half(o);
    const Epoch mine = take_epoch(half);
    ASSERT_EQ(mine.sources.size(), 8u);
    for (std::size_t i = 0; i < mine.sources.size(); ++i) {
      const std::vector<std::int64_t> global = counts(all, i, 3);
      const std::vector<std::int64_t> c = counts(mine, i, 3);
      for (std::size_t s = 0; s < 3; ++s) {
        EXPECT_TRUE(c[s] == global[s] / 2 || c[s] == (global[s] + 1) / 2)
            << "rank " << rank << " batch " << i << " source " << s << ": " << c[s] << " of "
            << global[s];
      }
      const std::set<std::int64_t> whole(all.ids[i].begin(), all.ids[i].end());
      for (const std::int64_t id : mine.ids[i]) EXPECT_TRUE(whole.count(id)) << id;
    }
  }
}

TEST(Mixture, OneSourceReadOncePerEpochIsTheLoaderOfThatDataset) {
  Options plain = test::fashion_options(0, 100);
  Options one = mixture({idx_source(Split::kTest, 0)}, 100, 0);
  Loader a(plain), b(one);
  EXPECT_TRUE(test::collect(a) == test::collect(b));
  EXPECT_TRUE(b.state().sources.empty());
  EXPECT_TRUE(b.stats().source_samples.empty());
}

TEST(Mixture, ZeroOneAndThreeWorkersDeliverTheSameBytes) {
  Loader inline_loader(folder_mixture(0));
  const Epoch expected = take_epoch(inline_loader);
  ASSERT_EQ(expected.sources.size(), 6u);
  // Both sources in every batch: 1 of 3 from the JPEGs.
  for (std::size_t i = 0; i < expected.sources.size(); ++i)
    EXPECT_EQ(counts(expected, i, 2), (std::vector<std::int64_t>{8, 16}));
  for (const int workers : {1, 3}) {
    Loader pooled(folder_mixture(workers));
    const Epoch got = take_epoch(pooled);
    EXPECT_TRUE(got.delivered == expected.delivered) << workers << " workers";
    EXPECT_EQ(got.sources, expected.sources) << workers << " workers";
  }
}

// Each source's samples of the epoch (valid ones), in delivery order.
using PerSource = std::map<std::int32_t, std::vector<std::int64_t>>;

void add(PerSource& into, const Epoch& e) {
  for (std::size_t i = 0; i < e.ids.size(); ++i)
    for (std::size_t j = 0; j < e.ids[i].size(); ++j)
      if (e.valid[i][j] != 0) into[e.sources[i][j]].push_back(e.ids[i][j]);
}

TEST(Mixture, AResumeOnOtherRanksAndDevicesDeliversEachSourcesRestExactlyOnce) {
  const auto shaped = [](int world, int rank, int batch, const char* devices) {
    Options o = mixture({idx_source(Split::kTest, 3), idx_source(Split::kTrain, 1)}, batch, 400);
    o.world = world;
    o.rank = rank;
    o.devices = DeviceSet::parse(devices);
    return o;
  };
  // The uninterrupted epoch 1, on one rank.
  Loader whole(shaped(1, 0, 32, "cpu:1"));
  whole.set_epoch(1);
  PerSource expected;
  add(expected, take_epoch(whole));
  ASSERT_EQ(expected[0].size(), 300u);
  ASSERT_EQ(expected[1].size(), 100u);

  // 2 ranks x 2 devices (batch 16 each) take 3 batches of epoch 1 and save.
  PerSource got;
  LoaderState saved;
  for (int rank = 0; rank < 2; ++rank) {
    Loader first(shaped(2, rank, 16, "cpu:2"));
    first.set_epoch(1);
    add(got, take_epoch(first, 3));
    const LoaderState s = first.state();
    EXPECT_EQ(s.sources.size(), 2u);
    if (rank == 0) saved = s;
    EXPECT_EQ(s.serialize(), saved.serialize()) << "every rank saves the same state";
  }
  EXPECT_EQ(saved.position, 96);
  // 3 ranks x 1 device (batch 8 each) resume and take the rest of the epoch.
  for (int rank = 0; rank < 3; ++rank) {
    Options o = shaped(3, rank, 8, "cpu:1");
    o.resume = saved;
    Loader rest(o);
    add(got, take_epoch(rest));
  }
  for (const auto& [s, ids] : expected) {
    std::multiset<std::int64_t> want(ids.begin(), ids.end()), have(got[s].begin(), got[s].end());
    EXPECT_EQ(have, want) << "source " << s;
    EXPECT_EQ(std::set<std::int64_t>(have.begin(), have.end()).size(), have.size())
        << "source " << s << ": a sample twice";
  }
}

TEST(Mixture, ASourcePastItsSizeWrapsIntoItsNextEpochsOrder) {
  // The test split (10,000) asked for 15,000 samples an epoch beside 100 of the train split.
  MixtureSource wrapping = idx_source(Split::kTest, 0);
  wrapping.samples = 15000;
  MixtureSource other = idx_source(Split::kTrain, 0);
  other.samples = 100;
  Loader loader(mixture({wrapping, other}, 100, 0));
  PerSource got;
  add(got, take_epoch(loader));
  ASSERT_EQ(got[0].size(), 15000u);
  // The source's own orders: a loader of it alone, seeded as the mixture seeds source 0.
  Options alone = test::fashion_options(0, 100);
  alone.seed = detail::mixture_source_seed(7, 0);
  Loader reference(alone);
  std::vector<std::int64_t> orders = test::collect(reference).ids;
  reference.set_epoch(1);
  const std::vector<std::int64_t> next = test::collect(reference).ids;
  orders.insert(orders.end(), next.begin(), next.begin() + 5000);
  EXPECT_EQ(got[0], orders);
  // Its next epoch continues where this one stopped: the rest of its second pass first.
  loader.set_epoch(1);
  PerSource later;
  add(later, take_epoch(loader, 30));
  EXPECT_EQ(std::vector<std::int64_t>(later[0].begin(), later[0].begin() + 100),
            std::vector<std::int64_t>(next.begin() + 5000, next.begin() + 5100));
}

TEST(Mixture, LabelsStayPerSourceOrFollowTheClassesBeforeThem) {
  Options o = folder_mixture(0);
  o.shuffle = false;
  Loader own(o);
  EXPECT_TRUE(own.class_names().empty()) << "two tables that contradict each other";
  const Epoch per_source = take_epoch(own);

  o.sources[1].label_offset = kAutoLabelOffset;
  Loader offset(o);
  const Epoch shifted = take_epoch(offset);
  Options jpeg_only = test::fashion_options(0);
  jpeg_only.data = test::testdata("jpeg");
  const std::vector<std::string> first = Loader(jpeg_only).class_names();
  Options png_only = jpeg_only;
  png_only.data = test::testdata("fashion-png");
  const std::vector<std::string> second = Loader(png_only).class_names();
  std::vector<std::string> both = first;
  both.insert(both.end(), second.begin(), second.end());
  EXPECT_EQ(offset.class_names(), both);
  ASSERT_EQ(per_source.delivered.labels.size(), shifted.delivered.labels.size());
  std::size_t k = 0;
  for (std::size_t i = 0; i < per_source.sources.size(); ++i) {
    for (std::size_t j = 0; j < per_source.sources[i].size(); ++j, ++k) {
      const std::int32_t add_by = per_source.sources[i][j] == 1 ? first.size() : 0;
      EXPECT_EQ(shifted.delivered.labels[k], per_source.delivered.labels[k] + add_by);
    }
  }
}

// Soft labels count the labels after their offsets: the two folders' classes one after the
// other need num_classes of both, and one fewer is refused, naming the source and its offset.
TEST(Mixture, NumClassesCountsTheLabelsAfterTheirOffsets) {
  Options o = folder_mixture(0);
  o.sources[1].label_offset = kAutoLabelOffset;
  o.dtype = DType::kFloat32;
  Options first = o;
  first.sources.clear();
  first.epoch_samples = 0;
  first.data = test::testdata("jpeg");
  const auto jpeg_classes = static_cast<int>(Loader(first).class_names().size());
  o.num_classes = jpeg_classes + 10;  // fashion-png: 10 classes
  EXPECT_EQ(test::config_error(o), "accepted");
  o.num_classes = jpeg_classes + 9;
  const std::string why = test::config_error(o);
  EXPECT_NE(why.find("source 1 (" + test::testdata("fashion-png") + ") (label_offset " +
                     std::to_string(jpeg_classes) + "): num_classes is 9"),
            std::string::npos)
      << why;
  o.num_classes = jpeg_classes;
  EXPECT_NE(test::config_error(o).find("its label_offset " + std::to_string(jpeg_classes) +
                                       " is not below num_classes " + std::to_string(jpeg_classes)),
            std::string::npos);
}

TEST(Mixture, AMixtureFileNamedByDataReadsAsItsSources) {
  test::TempDir dir;
  const std::string file = (dir.path() / "mix.json").string();
  std::ofstream(file) << R"({"sources": [{"data": ")" << test::testdata("jpeg")
                      << R"(", "weight": 1}, {"data": ")" << test::testdata("fashion-png")
                      << R"(", "weight": 2}], "epoch_samples": 144})";
  Options from_file = folder_mixture(0);
  from_file.sources.clear();
  from_file.epoch_samples = 0;
  from_file.data = file;
  Loader a(from_file), b(folder_mixture(0));
  EXPECT_TRUE(test::collect(a) == test::collect(b));

  std::ofstream(file) << R"({"sources": [{"data": "x", "wieght": 1}]})";
  try {
    Loader bad(from_file);
    ADD_FAILURE() << "a misspelt key was taken";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"wieght\" is not a source's key"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(file + ", source 0"), std::string::npos) << e.what();
  }
}

#ifdef STOKE_PACK
// A mixture's remote shards go through the shard cache, as a loader of them alone does: each
// fetched once, ahead of the batches that read it, and the batches are those of the same shards
// read from local disk; without the cache (cache_limit 0), read by ranges, the same again.
TEST(Mixture, RemoteShardsOfAMixtureGoThroughTheShardCache) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const std::filesystem::path www = dir.path() / "www";
  ASSERT_NO_FATAL_FAILURE(test::pack_jpeg_shards(www, 24));  // 4 shards of 24
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  // Local shards first (the remote shards are numbered after them), the remote ones, a folder.
  const auto shards_and_folder = [&](const std::string& shards) {
    MixtureSource local_tars, tars;
    local_tars.data = (www / "train-{0..1}.tar").string();
    local_tars.weight = 1;
    tars.data = shards;
    tars.weight = 2;
    Options o = mixture({local_tars, tars, folder_source("fashion-png", 2)}, 20, 240);
    o.height = o.width = 32;
    o.shuffle_window = 2;
    o.cache_dir = (dir.path() / "cache").string();
    return o;
  };
  Loader local(shards_and_folder((www / "train-{0..3}.tar").string()));
  const Epoch expected = take_epoch(local);
  ASSERT_EQ(expected.sources.size(), 12u);
  // The shards' source follows its shuffle windows (2 shards of 24 at a time): the first
  // batches read two shards.
  std::set<std::int64_t> shards;
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < expected.ids[i].size(); ++j)
      if (expected.sources[i][j] == 1) shards.insert((expected.ids[i][j] - 48) / 24);
  EXPECT_EQ(shards.size(), 2u);
  std::uint64_t bytes = 0;
  for (int i = 0; i < 4; ++i)
    bytes += std::filesystem::file_size(www / ("train-" + std::to_string(i) + ".tar"));
  {
    Loader cached(shards_and_folder(nginx.url() + "/train-{0..3}.tar"));
    const Epoch got = take_epoch(cached);
    EXPECT_TRUE(got.delivered == expected.delivered);
    EXPECT_EQ(got.sources, expected.sources);
    const Stats s = cached.stats();
    EXPECT_EQ(s.shard_cache.rfind("on: ", 0), 0u) << s.shard_cache;
    EXPECT_EQ(s.cache_misses, 4);  // each shard fetched before the first batch reading it
    EXPECT_EQ(static_cast<std::uint64_t>(s.cache_bytes_fetched), bytes);
  }
  Options ranged = shards_and_folder(nginx.url() + "/train-{0..3}.tar");
  ranged.cache_limit = 0;
  Loader by_ranges(ranged);
  EXPECT_TRUE(take_epoch(by_ranges).delivered == expected.delivered);
  EXPECT_EQ(by_ranges.stats().shard_cache.rfind("off", 0), 0u);
}
#endif

// Boxes come through a mixture whose sources all carry them, each sample with its own source's
// boxes; their classes move with the source's label offset (after the first source's classes).
TEST(Mixture, BoxesFollowTheSamplesOfEverySourceThatHasThem) {
  MixtureSource coco;
  coco.data = test::testdata("detection/instances.json");
  coco.weight = 1;
  MixtureSource after = coco;
  after.label_offset = kAutoLabelOffset;
  Options o = mixture({coco, after}, 8, 32);
  o.height = o.width = 64;
  o.shuffle = false;
  Loader loader(o);
  Options alone = o;
  alone.sources.clear();
  alone.epoch_samples = 0;
  alone.data = coco.data;
  const std::vector<std::string> names = Loader(alone).class_names();
  ASSERT_FALSE(names.empty());
  std::vector<std::string> twice = names;
  twice.insert(twice.end(), names.begin(), names.end());
  EXPECT_EQ(loader.class_names(), twice);
  const Epoch e = take_epoch(loader);
  ASSERT_EQ(e.sources.size(), 4u);
  EXPECT_EQ(e.delivered.box_counts.size(), 32u);
  const auto classes = static_cast<std::int32_t>(names.size());
  const std::size_t max_boxes = e.delivered.box_classes.size() / 32;
  std::int64_t boxes[2] = {0, 0};
  std::size_t k = 0;
  for (std::size_t i = 0; i < e.sources.size(); ++i) {
    for (std::size_t j = 0; j < e.sources[i].size(); ++j, ++k) {
      const std::int32_t s = e.sources[i][j];
      const int count = e.delivered.box_counts[k];
      boxes[s] += count;
      for (int b = 0; b < count; ++b) {
        const std::int32_t c = e.delivered.box_classes[k * max_boxes + static_cast<std::size_t>(b)];
        EXPECT_GE(c, s * classes);
        EXPECT_LT(c, (s + 1) * classes);
      }
    }
  }
  EXPECT_GT(boxes[0], 0);
  EXPECT_GT(boxes[1], 0);
}

TEST(Mixture, SourcesThatCannotShareALoaderAreAConfigErrorNamingThem) {
  // Boxes in one source only.
  MixtureSource coco;
  coco.data = test::testdata("detection/instances.json");
  coco.weight = 1;
  Options boxes = mixture({coco, folder_source("jpeg", 1)}, 8, 0);
  boxes.height = boxes.width = 32;
  std::string why = test::config_error(boxes);
  EXPECT_NE(why.find("must all carry boxes or none: source 0 (" + coco.data +
                     ") carries them, "
                     "source 1 (" +
                     test::testdata("jpeg") + ") not"),
            std::string::npos)
      << why;
  // Outputs of another shape (a pipeline per source is not supported yet).
  why = test::config_error(mixture({idx_source(Split::kTest, 1), folder_source("jpeg", 1)}, 8, 0));
  EXPECT_NE(why.find("share one pipeline"), std::string::npos) << why;
  EXPECT_NE(why.find("28x28x1"), std::string::npos) << why;
  EXPECT_NE(why.find("a pipeline per source is not supported yet"), std::string::npos) << why;
  // Data and sources both.
  Options both = mixture({idx_source(Split::kTest, 1)}, 8, 0);
  both.data = tools::kDefaultFashionMnistDir;
  EXPECT_NE(
      test::config_error(both).find("give data (one dataset) or sources (a mixture), not both"),
      std::string::npos);
  // A source option set on the loader, where each source has its own.
  Options split = mixture({idx_source(Split::kTest, 1), idx_source(Split::kTrain, 1)}, 8, 0);
  split.split = Split::kTest;
  EXPECT_NE(test::config_error(split).find(
                "split is each source's own in a mixture: set it on the sources "
                "that need it (sources[i].split), not on the loader"),
            std::string::npos);
  // Even beside a lone source (the loader of that one dataset).
  Options lone = mixture({idx_source(Split::kTrain, 0)}, 8, 0);
  lone.split = Split::kTest;
  EXPECT_NE(test::config_error(lone).find("split is each source's own in a mixture"),
            std::string::npos);
  // A label offset out of range.
  MixtureSource negative = idx_source(Split::kTest, 1);
  negative.label_offset = -2;
  EXPECT_NE(test::config_error(mixture({negative, idx_source(Split::kTrain, 1)}, 8, 0))
                .find("label_offset must be kAutoLabelOffset or 0..16777216, got -2"),
            std::string::npos);
  // Too many sources.
  EXPECT_NE(
      test::config_error(mixture(std::vector<MixtureSource>(17, idx_source(Split::kTest, 1)), 8, 0))
          .find("a mixture reads at most 16 sources, got 17"),
      std::string::npos);
  // A budget rule that gives two of weight, samples and repeat.
  MixtureSource twice = idx_source(Split::kTest, 1);
  twice.samples = 10;
  why = test::config_error(mixture({twice, idx_source(Split::kTrain, 1)}, 8, 0));
  EXPECT_NE(why.find("source 0"), std::string::npos) << why;
  // A state saved by a loader of one dataset.
  Loader plain(test::fashion_options(0, 8));
  plain.next();
  Options resumed = mixture({idx_source(Split::kTest, 1), idx_source(Split::kTrain, 1)}, 8, 0);
  resumed.resume = plain.state();
  why = test::config_error(resumed);
  EXPECT_NE(why.find("cannot resume from"), std::string::npos) << why;
}

// Repeated augmentation: each sample of a source's stream comes twice in a row, its two copies
// on two different devices of the batch; the shares hold (in entries), 0 and 2 workers give the
// same bytes, and a resume on another shape delivers each source's rest of entries once.
TEST(Mixture, RepeatsPutASamplesCopiesOnDifferentDevices) {
  const auto shaped = [](int world, int rank, int batch, const char* devices, int workers) {
    Options o = mixture({idx_source(Split::kTest, 3), idx_source(Split::kTrain, 1)}, batch, 512);
    o.repeats = 2;
    o.world = world;
    o.rank = rank;
    o.workers = workers;
    o.devices = DeviceSet::parse(devices);
    return o;
  };
  Loader whole(shaped(1, 0, 64, "cpu:4", 0));
  const Epoch e = take_epoch(whole);
  ASSERT_EQ(e.sources.size(), 8u);
  for (std::size_t i = 0; i < e.sources.size(); ++i) {
    EXPECT_EQ(counts(e, i, 2), (std::vector<std::int64_t>{48, 16}));
    std::map<std::int64_t, std::vector<std::size_t>> devices_of;  // id -> the devices with it
    for (std::size_t j = 0; j < e.ids[i].size(); ++j) devices_of[e.ids[i][j]].push_back(j / 16);
    std::size_t copies = 0;
    for (const auto& [id, on] : devices_of) {
      EXPECT_LE(on.size(), 2u) << "sample " << id;
      if (on.size() == 2) {
        EXPECT_NE(on[0], on[1]) << "sample " << id << "'s copies on one device";
        ++copies;
      }
    }
    EXPECT_GE(copies, 30u) << "batch " << i;  // 32 samples twice, less those cut at its ends
  }
  Loader pooled(shaped(1, 0, 64, "cpu:4", 2));
  EXPECT_TRUE(take_epoch(pooled).delivered == e.delivered);

  PerSource expected, got;
  add(expected, e);
  LoaderState saved;
  {
    Loader first(shaped(1, 0, 64, "cpu:4", 0));
    add(got, take_epoch(first, 3));
    saved = first.state();
    EXPECT_EQ(saved.repeats, 2);
  }
  for (int rank = 0; rank < 2; ++rank) {
    Options o = shaped(2, rank, 16, "cpu:1", 0);
    o.resume = saved;
    Loader rest(o);
    add(got, take_epoch(rest));
  }
  for (const auto& [s, ids] : expected) {
    EXPECT_EQ(std::multiset<std::int64_t>(got[s].begin(), got[s].end()),
              std::multiset<std::int64_t>(ids.begin(), ids.end()))
        << "source " << s;
  }
  Options other = shaped(1, 0, 64, "cpu:4", 0);
  other.repeats = 1;
  other.resume = saved;
  EXPECT_NE(test::config_error(other).find("resume with the same repeats"), std::string::npos);
}

}  // namespace
}  // namespace stoke
