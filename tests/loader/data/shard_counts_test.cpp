// A dataset-level index (data/shard_counts.hpp): the wids and sizes.json forms read as written,
// other JSON left to the COCO reader, malformed indexes refused with what is wrong; stoke-pack
// writes one; and a loader given one starts without opening a shard, indexes each shard when a
// sample of it is first read (data/shard_tables.hpp) and delivers what its shards deliver.

#include "data/shard_counts.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "data/dataset_index.hpp"
#include "data/index_file.hpp"
#include "data/index_folder.hpp"
#include "data/index_format.hpp"
#include "data/index_identity.hpp"
#include "stoke/error.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using detail::ShardCounts;
using test::read_file;
using test::run;

std::optional<ShardCounts> parse(const std::string& text, const std::string& base = "/data") {
  std::istringstream in(text);
  return detail::parse_shard_counts(in, base, "index.json");
}

// The ConfigError parse() throws for `text`.
std::string refusal(const std::string& text) {
  try {
    parse(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(ShardCounts, AWidsIndexGivesEachShardsSamplesAndSize) {
  const auto counts = parse(R"({"name": "train", "base_path": "ignored",
    "__kind__": "wids-shard-index-v1", "wids_version": 1,
    "shardlist": [
      {"url": "train-0.tar", "nsamples": 5000, "filesize": 123456, "dataset": {"x": [1, 2]}},
      {"nsamples": 7, "url": "/abs/train-1.tar"},
      {"url": "s3://bucket/train-2.tar", "nsamples": 0}]})");
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->form, ShardCounts::Form::kWids);
  ASSERT_EQ(counts->shards.size(), 3u);
  EXPECT_EQ(counts->shards[0].name, "/data/train-0.tar");
  EXPECT_EQ(counts->shards[0].samples, 5000u);
  EXPECT_EQ(counts->shards[0].bytes, 123456u);
  EXPECT_EQ(counts->shards[1].name, "/abs/train-1.tar");
  EXPECT_EQ(counts->shards[1].samples, 7u);
  EXPECT_EQ(counts->shards[1].bytes, 0u);
  EXPECT_EQ(counts->shards[2].name, "s3://bucket/train-2.tar");
  EXPECT_EQ(counts->shards[2].samples, 0u);
}

TEST(ShardCounts, ASizesJsonGivesEachShardsSamplesInItsOrder) {
  const auto counts = parse(R"({"b-1.tar": 10, "a-0.tar": 3, "sub/c.tar": 0})", "/d");
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->form, ShardCounts::Form::kSizes);
  ASSERT_EQ(counts->shards.size(), 3u);
  EXPECT_EQ(counts->shards[0].name, "/d/b-1.tar");
  EXPECT_EQ(counts->shards[1].name, "/d/a-0.tar");
  EXPECT_EQ(counts->shards[1].samples, 3u);
  EXPECT_EQ(counts->shards[2].name, "/d/sub/c.tar");
}

// A COCO file (or any other JSON) is not an index, decided at its first telling member.
TEST(ShardCounts, OtherJsonIsNotAnIndex) {
  EXPECT_FALSE(parse(R"({"info": {"year": 2017}, "images": [], "annotations": []})"));
  EXPECT_FALSE(parse(R"({"images": [{"id": 1}]})"));
  EXPECT_FALSE(parse(R"({"description": "x", "version": "1.0", "images": []})"));
  EXPECT_FALSE(parse(R"([1, 2, 3])"));
  EXPECT_FALSE(parse(R"({"a": "b", "c": -1})"));
  EXPECT_FALSE(parse(R"({"version": 1, "images": [], "annotations": []})"));  // not a .tar first
  // (Stopped at the first member: what follows is never read, broken or not.)
  EXPECT_FALSE(parse(R"({"images": [)" + std::string(100, '[')));
}

TEST(ShardCounts, AMalformedIndexIsRefusedSayingWhatIsWrong) {
  EXPECT_NE(refusal(R"({"a.tar": 5, "b.tar": "five"})").find("\"b.tar\": expected a sample count"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"a.tar": 5, "b.tar": -1})").find("\"b.tar\": a negative sample count"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"a.tar": 5, "b.tar": {"n": 1}})").find("\"b.tar\": expected a sample"),
            std::string::npos);
  EXPECT_NE(
      refusal(R"({"shardlist": [{"url": "a.tar"}]})").find("shardlist[0]: has no \"nsamples\""),
      std::string::npos);
  EXPECT_NE(refusal(R"({"shardlist": [{"url": "a.tar", "nsamples": 1}, {"nsamples": 2}]})")
                .find("shardlist[1]: has no \"url\""),
            std::string::npos);
  EXPECT_NE(refusal(R"({"shardlist": [{"url": "a.tar", "nsamples": 1.5}]})")
                .find("shardlist[0].nsamples: is not a whole number"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"shardlist": [{"url": 3, "nsamples": 1}]})")
                .find("shardlist[0].url: is not a string"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"shardlist": ["a.tar"]})").find("shardlist[0]: is not an object"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"shardlist": {}})").find("shardlist: is not a list"), std::string::npos);
  EXPECT_NE(refusal(R"({"shardlist": []})").find("names no shards"), std::string::npos);
  EXPECT_NE(refusal(R"({"__kind__": "wids-shard-index-v1"})").find("no \"shardlist\""),
            std::string::npos);
  EXPECT_NE(refusal(R"({"shardlist": [{"url": "a.tar", "nsamples": 1}]} x)").find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"a.tar": 4294967297})").find("more than one shard may hold (4294967296)"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"shardlist": [{"url": "", "nsamples": 1}]})").find("an empty shard name"),
            std::string::npos);
  std::string deep = R"({"shardlist": [{"url": "a.tar", "nsamples": 1, "x": )";
  deep += std::string(20, '[') + std::string(20, ']') + "}]}";
  EXPECT_NE(refusal(deep).find("nested deeper than 16 levels"), std::string::npos);
  // Totals: 300 shards of 2^32 pass the 2^40 samples a dataset may hold.
  std::string many = "{";
  for (int i = 0; i < 300; ++i) many += "\"s" + std::to_string(i) + ".tar\": 4294967296,";
  many.back() = '}';
  EXPECT_NE(refusal(many).find("more than 1099511627776 samples in all"), std::string::npos);
}

// testdata/jpeg packed by stoke-pack into 3 shards (40, 40 and 16 samples), out/train-N.tar,
// with their wids index: its path.
std::string packed_shards(const test::TempDir& dir) {
  test::pack_jpeg_shards(dir.path() / "out", 40);
  return (dir.path() / "out/train.wids.json").string();
}

// What stoke-pack writes is a wids index of the shards it wrote, read back as written; given
// existing shards (and --index alone), it writes the same.
TEST(ShardCounts, StokePackWritesTheIndexOfItsShards) {
  test::TempDir dir;
  const fs::path index = packed_shards(dir);
  const auto counts = detail::read_shard_counts(index.string());
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->form, ShardCounts::Form::kWids);
  ASSERT_EQ(counts->shards.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    const fs::path shard = dir.path() / ("out/train-" + std::to_string(s) + ".tar");
    EXPECT_EQ(counts->shards[s].name, shard.string());
    EXPECT_EQ(counts->shards[s].samples, s < 2 ? 40u : 16u);
    EXPECT_EQ(counts->shards[s].bytes, fs::file_size(shard));
  }
  EXPECT_NE(read_file(index).find("\"url\": \"train-0.tar\""), std::string::npos);  // relative
  run(std::string(STOKE_PACK) + " --no-progress --data " +
      (dir.path() / "out/train-{0..2}.tar").string() + " --index " +
      (dir.path() / "again.json").string() + " > " + (dir.path() / "said.txt").string());
  EXPECT_EQ(read_file(dir.path() / "said.txt").rfind("indexed 96 samples in 3 shard(s) into ", 0),
            0u);
  const auto again = detail::read_shard_counts((dir.path() / "again.json").string());
  ASSERT_TRUE(again);
  ASSERT_EQ(again->shards.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(again->shards[s].name, counts->shards[s].name);
    EXPECT_EQ(again->shards[s].samples, counts->shards[s].samples);
    EXPECT_EQ(again->shards[s].bytes, counts->shards[s].bytes);
  }
}

Options lazy_options(const test::TempDir& dir, const std::string& data, int workers) {
  Options o = test::fashion_options(workers, 16);
  o.data = data;
  o.height = o.width = 48;
  o.cache_dir = (dir.path() / "cache").string();
  return o;
}

std::size_t index_files(const test::TempDir& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir.path() / "cache/datasets", ec))
    n += e.path().extension() == ".stoke-index";
  return n;
}

// The same batches, bytes and labels through the dataset-level index as through the shard
// pattern, in worker processes and in sizes.json's form too; nothing of a shard is read before
// the first batch, and each shard is indexed once, on the machine, when first read.
TEST(DatasetLevelIndex, DeliversWhatItsShardsDeliverReadingNoShardAtStartUp) {
  test::TempDir dir;
  const std::string index = packed_shards(dir);
  const std::string pattern = (dir.path() / "out/train-{0..2}.tar").string();
  Options eager = lazy_options(dir, pattern, 2);
  Loader a(eager);
  const test::Delivered want = test::collect(a);
  fs::remove_all(dir.path() / "cache");

  Loader b(lazy_options(dir, index, 2));
  EXPECT_EQ(b.dataset_size(), 96);
  EXPECT_TRUE(test::collect(b) == want);
  EXPECT_EQ(index_files(dir), 4u);  // the dataset-level index's own, and one per shard, once

  // Start-up opens no shard: shards that do not exist (yet) start a loader all the same.
  std::ofstream(dir.path() / "later.json") << R"({"x-0.tar": 1000000, "x-1.tar": 5})";
  Loader later(lazy_options(dir, (dir.path() / "later.json").string(), 1));
  EXPECT_EQ(later.dataset_size(), 1000005);

  std::ofstream(dir.path() / "out/sizes.json")
      << R"({"train-0.tar": 40, "train-1.tar": 40, "train-2.tar": 16})";
  Loader c(lazy_options(dir, (dir.path() / "out/sizes.json").string(), 1));
  EXPECT_TRUE(test::collect(c) == want);
}

// A shard the index says holds more samples than it does, and a shard that is gone: their
// samples are bad input (bad_shard), skipped and replaced under on_error=skip, a DataError
// under on_error=error; the others are read as usual.
TEST(DatasetLevelIndex, AShardMissingOrShorterThanItsIndexSaysIsABadShard) {
  test::TempDir dir;
  packed_shards(dir);
  std::ofstream(dir.path() / "out/sizes.json")
      << R"({"train-0.tar": 40, "train-1.tar": 45, "gone.tar": 4, "train-2.tar": 16})";
  test::LogLines log;
  Options o = lazy_options(dir, (dir.path() / "out/sizes.json").string(), 2);
  o.log = log.sink();
  {
    Loader loader(o);
    EXPECT_EQ(loader.dataset_size(), 105);
    const test::Delivered got = test::collect(loader);
    const Stats s = loader.stats();
    EXPECT_EQ(got.ids.size(), 105u + static_cast<std::size_t>(got.padded));
    EXPECT_EQ(s.skipped_by_reason.at("bad_shard"), 9);  // 5 past train-1's end, 4 of gone.tar
  }
  const std::string out = (dir.path() / "out").string();
  EXPECT_TRUE(log.contains(out + "/gone.tar (sample 85, number 0 of the shard): bad_shard"))
      << log.lines().back();
  // Why, found by the training process (it was not told): once for each shard.
  EXPECT_TRUE(log.contains("bad_shard: " + out +
                           "/train-1.tar holds 40 samples, the "
                           "dataset-level index says 45: its samples from number 40 on are "
                           "skipped"));
  EXPECT_TRUE(log.contains("bad_shard: " + out + "/gone.tar cannot be indexed: " + out +
                           "/gone.tar: No such file"))
      << [&] {
           std::string all;
           for (const std::string& l : log.lines()) all += l + "\n";
           return all;
         }();

  o.on_error = OnError::kError;
  o.log = nullptr;
  Loader strict(o);
  EXPECT_THROW(test::collect(strict), DataError);
}

// A shard rewritten after its table was made gets a new table (its version keys it), never
// the stale one: the same index's loader then delivers the new shard's samples.
TEST(DatasetLevelIndex, AShardRewrittenAfterItWasIndexedIsIndexedAgain) {
  test::TempDir dir;
  const std::string index = packed_shards(dir);
  const Options o = lazy_options(dir, index, 1);
  {
    Loader before(o);
    test::collect(before);
  }
  // train-0.tar again, from the other end of the folder: shard 2's 16 images and 24 of
  // shard 1's, so its members and labels change while the index's count (40) still holds.
  const fs::path out = dir.path() / "out";
  const fs::path again = dir.path() / "again";
  run(std::string(STOKE_PACK) + " --no-progress --no-index --data " + test::testdata("jpeg") +
      " --out " + (again / "x-%d.tar").string() + " --shard-samples 56 > /dev/null");
  const fs::path shard0 = out / "train-0.tar";
  fs::remove(shard0.string() + ".idx");
  // (The second shard of x-%d holds samples 56..95: 40 of them, written as train-0.)
  fs::copy_file(again / "x-1.tar", shard0, fs::copy_options::overwrite_existing);
  Options fresh = o;
  fresh.shuffle = false;
  fresh.batch = 40;
  Loader after(fresh);
  const test::Delivered got = test::collect(after, 1);
  Options folder = fresh;
  folder.data = test::testdata("jpeg");
  folder.cache_dir.clear();
  folder.batch = 96;
  Loader whole(folder);
  const test::Delivered all = test::collect(whole, 1);
  ASSERT_EQ(got.labels.size(), 40u);
  for (std::size_t i = 0; i < 40; ++i) EXPECT_EQ(got.labels[i], all.labels[56 + i]) << i;
  EXPECT_EQ(index_files(dir), 5u);  // the 4 tables of before, and the new shard's
}

// Without a cache folder each worker indexes the shards it reads privately: the same batches,
// and the log says what that costs and how to avoid it.
TEST(DatasetLevelIndex, WithoutACacheFolderEachWorkerIndexesForItselfAndTheLogSaysSo) {
  test::TempDir dir;
  const std::string index = packed_shards(dir);
  Options o = lazy_options(dir, (dir.path() / "out/train-{0..2}.tar").string(), 2);
  Loader eager(o);
  const test::Delivered want = test::collect(eager);
  const test::ScopedEnv no_stoke("STOKE_CACHE_DIR", std::nullopt);
  const test::ScopedEnv no_xdg("XDG_CACHE_HOME", std::nullopt);
  const test::ScopedEnv no_home("HOME", std::nullopt);
  test::LogLines log;
  o.data = index;
  o.cache_dir.clear();
  o.log = log.sink();
  Loader lazy(o);
  EXPECT_TRUE(test::collect(lazy) == want);
  EXPECT_TRUE(
      log.contains("dataset-level index without a cache folder: each worker indexes the "
                   "shards it reads for itself"));
}

// Exact resume: a loader resumed from a state saved mid-epoch delivers what the uninterrupted
// one delivered after that point (the plan is the counts', whatever was indexed).
TEST(DatasetLevelIndex, ResumesExactlyMidEpoch) {
  test::TempDir dir;
  const Options o = lazy_options(dir, packed_shards(dir), 2);
  Loader straight(o);
  const test::Delivered all = test::collect(straight);
  Loader first(o);
  test::collect(first, 2);
  Options resumed = o;
  resumed.resume = first.state();
  fs::remove_all(dir.path() / "cache");  // (and its shards indexed again, by the new loader)
  Loader second(resumed);
  const test::Delivered rest = test::collect(second);
  ASSERT_EQ(rest.ids.size() + 32, all.ids.size());
  EXPECT_TRUE(std::equal(rest.ids.begin(), rest.ids.end(), all.ids.begin() + 32));
  EXPECT_TRUE(std::equal(rest.labels.begin(), rest.labels.end(), all.labels.begin() + 32));
  EXPECT_TRUE(
      std::equal(rest.pixels.begin(), rest.pixels.end(), all.pixels.begin() + 32 * 48 * 48 * 3));
}

// A shard's name that points at something else than a tar shard (here an image folder, which
// would index as a dataset of its own) is a bad shard, and the log says what it is.
TEST(DatasetLevelIndex, AShardThatIsNotATarShardIsABadShard) {
  test::TempDir dir;
  const std::string index = packed_shards(dir);
  const fs::path sizes = dir.path() / "out/sizes.json";
  std::ofstream(sizes) << R"({"train-0.tar": 40, ")" << test::testdata("jpeg") << R"(": 3})";
  test::LogLines log;
  Options o = lazy_options(dir, sizes.string(), 1);
  o.log = log.sink();
  {
    Loader loader(o);
    test::collect(loader);
    EXPECT_EQ(loader.stats().skipped_by_reason.at("bad_shard"), 3);
  }
  EXPECT_TRUE(log.contains("bad_shard: " + test::testdata("jpeg") +
                           " is not a tar shard (a dataset-level index names tar shards only)"));
}

// A machine file whose identity matches but whose shard options do not (copied from another
// loader's and edited: another cache folder for the workers, a lifted label bound) is rebuilt,
// never read.
TEST(DatasetLevelIndex, AFileCarryingOtherShardOptionsIsRebuilt) {
  test::TempDir dir;
  const std::string index = packed_shards(dir);
  detail::IndexOptions o;
  o.caches.root = (dir.path() / "cache").string();
  o.max_classes = 1000;
  const auto identity = detail::dataset_identity(index, o);
  ASSERT_TRUE(identity);
  detail::DatasetIndex planted = detail::build_index(index, o);
  std::snprintf(planted.lazy_options.cache_root, sizeof planted.lazy_options.cache_root, "%s",
                "/tmp/elsewhere");
  planted.lazy_options.max_classes = 1000;
  const fs::path file = dir.path() / "cache/datasets" / detail::index_file_name(*identity);
  fs::create_directories(file.parent_path());
  {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(detail::write_index_file(fd, planted, *identity));
    ::close(fd);
  }
  const auto mapped = detail::index_dataset(index, o);
  EXPECT_EQ(mapped->origin(), detail::MappedIndex::Origin::kBuilt);
  EXPECT_EQ(std::string(mapped->view().lazy_options().cache_root), o.caches.root);
  EXPECT_EQ(detail::index_dataset(index, o)->origin(), detail::MappedIndex::Origin::kFound);
}

TEST(DatasetLevelIndex, PerSampleLimitsMustBeGivenSinceNoShardIsReadFirst) {
  test::TempDir dir;
  Options o = lazy_options(dir, packed_shards(dir), 1);
  o.box_field = "json";
  try {
    Loader loader(o);
    ADD_FAILURE() << "accepted max_boxes 0";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("max_boxes 0 takes the most boxes of any sample, but " +
                                         o.data + " is a dataset-level index"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace stoke
