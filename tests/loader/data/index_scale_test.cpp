// The dataset index at scale: what the machine's index files hold per sample (compact columns,
// data/index_columns.hpp) and what a loader's processes hold per sample, shared pages and all.
// Slow suites (a million samples each): the test workflow runs them, the sanitizers do not.

#include <fcntl.h>
#include <malloc.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "data/dataset_index.hpp"
#include "data/index_file.hpp"
#include "data/index_format.hpp"
#include "data/shard_tables.hpp"
#include "data/tar_index.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using detail::DatasetIndex;
using detail::DatasetView;
using detail::IndexOptions;

// The bytes of the regular files under `folder`.
std::uint64_t folder_bytes(const fs::path& folder) {
  std::uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(folder))
    if (e.is_regular_file()) total += e.file_size();
  return total;
}

// `shards` sparse tar shards of `per_shard` samples shaped like ImageNet's (a JPEG of 10 to
// 200 KB and a .cls label of 0..999 each), with the sidecars stoke-pack writes: indexing reads
// the sidecars alone, and the shards cost no disk. Returns every sample's (offset, size, label).
struct SyntheticSample {
  std::uint64_t offset, size;
  std::int32_t label;
};
std::vector<SyntheticSample> sparse_shards(const fs::path& dir, int shards, int per_shard) {
  std::mt19937_64 rng(11);
  std::vector<SyntheticSample> samples;
  for (int s = 0; s < shards; ++s) {
    detail::ShardIndex table;
    std::uint64_t at = 0;
    char key[32];
    for (int k = 0; k < per_shard; ++k) {
      const std::uint64_t size = 10000 + rng() % 190000;
      const auto label = static_cast<std::int32_t>(rng() % 1000);
      std::snprintf(key, sizeof key, "%06d%04d", s, k);
      table.members.push_back({std::string(key) + ".jpg", at + 512, size, ""});
      samples.push_back({at + 512, size, label});
      at += 512 + size + detail::tar_padding(size);
      table.members.push_back({std::string(key) + ".cls", at + 512, 3, std::to_string(label)});
      at += 1024;
    }
    table.shard_bytes = at + detail::kTarEndBytes;
    std::snprintf(key, sizeof key, "s-%06d.tar", s);
    const fs::path shard = dir / key;
    { std::ofstream(shard).flush(); }
    fs::resize_file(shard, table.shard_bytes);
    std::ofstream(shard.string() + ".idx") << detail::format_sidecar(table);
  }
  return samples;
}

// A million shard samples (200 shards of 5,000), by name and through a dataset-level index whose
// every shard was then read once (one epoch): at most 16 bytes a sample of the machine's files,
// where the 120-byte entries and member names took 134. Each sample's range and label read back.
TEST(IndexScale, AMillionShardSamplesTakeAtMost16BytesEachInTheMachinesFiles) {
  test::TempDir dir;
  constexpr int kShards = 200, kPerShard = 5000;
  constexpr double kSamples = double(kShards) * kPerShard;
  const std::vector<SyntheticSample> want = sparse_shards(dir.path(), kShards, kPerShard);
  IndexOptions by_name;
  by_name.caches.root = (dir.path() / "by-name").string();
  const auto index = detail::index_dataset(
      (dir.path() / ("s-{000000.." + std::to_string(kShards - 1) + "}.tar")).string(), by_name);
  const DatasetView view = index->view();
  ASSERT_EQ(view.size(), static_cast<std::int64_t>(want.size()));
  for (std::int64_t i = 0; i < view.size(); i += 997) {
    const SyntheticSample& w = want[static_cast<std::size_t>(i)];
    ASSERT_EQ(view.range(i).offset, w.offset) << i;
    ASSERT_EQ(view.range(i).size, w.size) << i;
    ASSERT_EQ(view.label(i), w.label) << i;
  }
  const double named = double(folder_bytes(by_name.caches.root)) / kSamples;
  std::printf("shards by name: %.2f bytes a sample in %s\n", named, by_name.caches.root.c_str());
  EXPECT_LE(named, 16.0);

  std::ofstream json(dir.path() / "train.wids.json");
  json << "{\"__kind__\": \"wids-shard-index-v1\", \"shardlist\": [";
  for (int s = 0; s < kShards; ++s) {
    char name[32];
    std::snprintf(name, sizeof name, "s-%06d.tar", s);
    json << (s ? ", " : "") << "{\"url\": \"" << name << "\", \"nsamples\": " << kPerShard << "}";
  }
  json << "]}";
  json.close();
  IndexOptions lazy;
  lazy.caches.root = (dir.path() / "lazy").string();
  const auto top = detail::index_dataset((dir.path() / "train.wids.json").string(), lazy);
  const DatasetView shards = top->view();
  ASSERT_TRUE(shards.lazy());
  detail::ShardTables tables(shards, {}, true, 4);
  for (std::int64_t i = 0; i < shards.size(); i += kPerShard) {  // (every shard, as an epoch)
    const detail::ShardTables::Located at = tables.locate(i + 1234);
    ASSERT_NE(at.view, nullptr) << i;
    ASSERT_EQ(at.view->range(at.row).offset, want[static_cast<std::size_t>(i + 1234)].offset);
    ASSERT_EQ(at.view->label(at.row), want[static_cast<std::size_t>(i + 1234)].label);
  }
  const double per_shard_files = double(folder_bytes(lazy.caches.root)) / kSamples;
  std::printf("a dataset-level index, every shard read: %.2f bytes a sample in %s\n",
              per_shard_files, lazy.caches.root.c_str());
  EXPECT_LE(per_shard_files, 16.0);
}

// 1,281,167 images in 1,000 class folders, named as ImageNet's are (n01440764/n01440764_10026.JPEG,
// numbers up to 50,000 in byte order): the entries an image-folder tree's indexing makes
// (data/dataset_index.cpp), written as the machine's file. At most 16 bytes a sample, where the
// 120-byte entries and whole paths took 177; every path reads back.
TEST(IndexScale, AnImageNetShapedTreeTakesAtMost16BytesASample) {
  DatasetIndex index;
  index.kind = detail::DatasetKind::kFiles;
  std::mt19937_64 rng(5);
  constexpr int kClasses = 1000;
  for (int c = 0; c < kClasses; ++c) {
    char wnid[16];
    std::snprintf(wnid, sizeof wnid, "n%08d", 1440764 + c * 9973);
    const int count = 1281167 / kClasses + (c < 1281167 % kClasses ? 1 : 0);
    std::set<std::string> files;
    while (static_cast<int>(files.size()) < count)
      files.insert(std::string(wnid) + "_" + std::to_string(1 + rng() % 50000) + ".JPEG");
    index.class_names.push_back(wnid);
    for (const std::string& f : files)
      index.add_file("/datasets/imagenet/train/" + std::string(wnid) + "/" + f, c);
  }
  index.size = static_cast<std::int64_t>(index.entries.size());
  const int fd = ::memfd_create("imagenet-index", MFD_CLOEXEC);
  ASSERT_TRUE(detail::write_index_file(fd, index, "imagenet"));
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  const double per_sample = double(st.st_size) / double(index.size);
  std::printf("an ImageNet-shaped tree: %.2f bytes a sample (%lld bytes)\n", per_sample,
              static_cast<long long>(st.st_size));
  EXPECT_LE(per_sample, 16.0);
  const auto mapped = detail::map_index_file(fd, "imagenet", 1000, 0, "");
  ASSERT_NE(mapped, nullptr);
  const DatasetView view = mapped->view();
  for (std::int64_t i = 0; i < view.size(); i += 101) {
    const detail::FileEntry& e = index.entries[static_cast<std::size_t>(i)];
    ASSERT_EQ(view.path(i), index.paths.substr(e.path_offset, e.path_length)) << i;
    ASSERT_EQ(view.label(i), e.label) << i;
  }
}

// A process's memory from /proc/PID/status: the sum of the fields named (in bytes).
std::int64_t status_bytes(const std::string& pid, std::initializer_list<const char*> fields) {
  std::ifstream in("/proc/" + pid + "/status");
  std::string key;
  std::int64_t total = 0;
  while (in >> key) {
    for (const char* f : fields)
      if (key == std::string(f) + ":") {
        std::int64_t kib = 0;
        in >> kib;
        total += kib * 1024;
      }
    in.ignore(1 << 10, '\n');
  }
  return total;
}

struct Held {
  std::int64_t process = -1;  // the training process: all of its resident memory
  std::int64_t worker = -1;   // its worker: what is its own (anonymous memory and the arena)
};

// What a loader of options `o` holds once it has delivered `batches` batches (-1: one epoch's),
// its plan made, its threads and its worker running, measured in a child process of its own so
// that no other test's heap counts: the training process's whole resident growth, and the
// worker's fields `worker_fields` of /proc/PID/status.
Held held_by_a_loader(const Options& o, std::int64_t batches,
                      std::initializer_list<const char*> worker_fields) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    Held held;
    try {
      // (What the parent's heap freed goes first: a child of a process that ran other tests
      // would otherwise shrink while it is measured.)
      ::malloc_trim(0);
      const std::int64_t before = status_bytes("self", {"VmRSS"});
      Loader loader(o);
      const std::int64_t n = batches < 0 ? loader.batches_per_epoch() : batches;
      for (std::int64_t b = 0; b < n; ++b) loader.next();
      held.process = status_bytes("self", {"VmRSS"}) - before;
      const std::set<pid_t> workers = test::children();
      if (workers.size() == 1)
        held.worker = status_bytes(std::to_string(*workers.begin()), worker_fields);
    } catch (...) {
    }
    [[maybe_unused]] const auto n = ::write(fds[1], &held, sizeof held);
    ::_exit(0);
  }
  ::close(fds[1]);
  Held held;
  if (::read(fds[0], &held, sizeof held) != sizeof held) held = {};
  ::close(fds[0]);
  test::exit_status(pid);
  return held;
}

// A list file at `path` of `n` lines naming `images` over and over, labels 0..9.
fs::path cycling_list(const fs::path& path, const std::vector<std::string>& images,
                      std::int64_t n) {
  std::ofstream out(path);
  for (std::int64_t i = 0; i < n; ++i)
    out << images[static_cast<std::size_t>(i) % images.size()] << "\t" << i % 10 << "\n";
  return path;
}

// A loader of one worker over `list`, its index in the machine's files under `cache`.
Options list_options(const fs::path& list, const fs::path& cache, int batch, int size) {
  Options o = test::fashion_options(1, batch);
  o.data = list.string();
  o.height = o.width = size;
  o.cache_dir = cache.string();
  return o;
}

// The per-sample cost: loaders of 100 k and 1.1 M samples (the same real images over and over)
// differ by it a million times, their fixed costs cancelling; measured for the loader that
// builds the index and for one that finds it. (The index copied into each loader's arena cost
// the training process 188 bytes a sample, and each worker 133.) A worker's resident set also
// counts the index file's pages it touched: they are the page cache's, one copy for every
// process of the machine, so they are not its own.
TEST(IndexScale, ALoaderHoldsAFewBytesPerSampleNotTheIndex) {
  test::TempDir dir;
  std::vector<std::string> images;
  for (const auto& e : fs::recursive_directory_iterator(test::testdata("jpeg")))
    if (e.is_regular_file()) images.push_back(e.path().string());
  std::sort(images.begin(), images.end());
  ASSERT_FALSE(images.empty());
  const fs::path small = cycling_list(dir.path() / "small.txt", images, 100000);
  const fs::path large = cycling_list(dir.path() / "large.txt", images, 1100000);
  const fs::path cache = dir.path() / "cache";
  for (const char* when : {"built", "found"}) {
    const Held a = held_by_a_loader(list_options(small, cache, 64, 32), 4, {"RssAnon", "RssShmem"});
    const Held b = held_by_a_loader(list_options(large, cache, 64, 32), 4, {"RssAnon", "RssShmem"});
    ASSERT_GE(a.process, 0);
    ASSERT_GE(b.process, 0);
    ASSERT_GE(a.worker, 0);
    ASSERT_GE(b.worker, 0);
    const double process = double(b.process - a.process) / 1e6;
    const double worker = double(b.worker - a.worker) / 1e6;
    std::printf(
        "index %s: the training process holds %.1f bytes per sample, its worker %.2f "
        "beyond the index file's shared pages\n",
        when, process, worker);
    EXPECT_LE(process, 16.0) << when;
    EXPECT_LE(worker, 1.0) << when;
  }
}

// Over a whole epoch a worker reads every sample's entry, so it touches every page of the index
// file (and the training process the pages of the epoch's order and what it checks at start):
// with every such page counted, each grows by at most 16 bytes a sample, the slope between
// loaders of 20 k and 220 k samples (8 x 8 PNG images, their fixed costs cancelling). It was
// about 150 for the worker, the 120-byte entries and the paths.
TEST(IndexScale, OverAnEpochEachProcessTouchesAtMost16BytesASample) {
  test::TempDir dir;
  std::vector<std::string> images;
  for (int k = 0; k < 64; ++k) {
    const fs::path image = dir.path() / "images" / ("i" + std::to_string(k) + ".png");
    fs::create_directories(image.parent_path());
    ASSERT_TRUE(cv::imwrite(image.string(), cv::Mat(8, 8, CV_8UC1, cv::Scalar(4 * k))));
    images.push_back(image.string());
  }
  constexpr std::int64_t kSmall = 20000, kLarge = 220000;
  // (Each measured with its index file already written: the loader that builds it also holds,
  // for a while, what indexing allocated, which is not what an epoch costs.)
  const fs::path small = cycling_list(dir.path() / "small.txt", images, kSmall);
  const fs::path large = cycling_list(dir.path() / "large.txt", images, kLarge);
  const fs::path cache = dir.path() / "cache";
  const auto epoch = [&](const fs::path& data) {
    return held_by_a_loader(list_options(data, cache, 250, 8), -1, {"VmRSS"});
  };
  epoch(small);
  epoch(large);
  const Held a = epoch(small), b = epoch(large);
  ASSERT_GE(a.worker, 0);
  ASSERT_GE(b.worker, 0);
  const double process = double(b.process - a.process) / double(kLarge - kSmall);
  const double worker = double(b.worker - a.worker) / double(kLarge - kSmall);
  std::printf(
      "over an epoch: the training process grows by %.1f bytes a sample, its worker %.1f "
      "(shared pages included)\n",
      process, worker);
  EXPECT_LE(process, 16.0);
  EXPECT_LE(worker, 16.0);
}

}  // namespace
}  // namespace stoke
