// The dataset index file (data/index_file.hpp and its parts: index_format, index_identity,
// index_folder): what it holds reads back as the index built in memory; a damaged, stale or
// foreign file is never read; one file serves every process of a machine, written by one of
// them, even when a writer is killed; and a loader holds a few bytes per sample, not the index.

#include "data/index_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <set>
#include <thread>

#include "data/dataset_index.hpp"
#include "data/index_folder.hpp"
#include "data/index_format.hpp"
#include "data/index_identity.hpp"
#include "data/tar_index.hpp"
#include "stoke/error.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using detail::DatasetIndex;
using detail::DatasetView;
using detail::IndexOptions;
using detail::MappedIndex;
using Origin = MappedIndex::Origin;

// A list file of `n` lines naming images that need not exist (a list is indexed without them).
void write_list(const fs::path& path, std::int64_t n, int classes = 1000) {
  std::ofstream out(path);
  for (std::int64_t i = 0; i < n; ++i)
    out << "images/n" << (i % classes) << "/img_" << i << ".jpg\t" << (i % classes) << "\n";
}

IndexOptions cached_in(const test::TempDir& dir) {
  IndexOptions o;
  o.caches.root = (dir.path() / "cache").string();
  return o;
}

// The index file `data` would have under `options`' cache.
fs::path index_path(const std::string& data, const IndexOptions& options) {
  return fs::path(options.caches.root) / "datasets" /
         detail::index_file_name(*detail::dataset_identity(data, options));
}

// An index file of `index` in a memfd, mapped back (with its pixels file, for IDX data).
std::unique_ptr<MappedIndex> round_trip(const DatasetIndex& index, const std::string& identity,
                                        int max_classes = kDefaultMaxClasses) {
  const int fd = ::memfd_create("index-test", MFD_CLOEXEC);
  EXPECT_TRUE(detail::write_index_file(fd, index, identity));
  std::unique_ptr<MappedIndex> m = detail::map_index_file(fd, identity, max_classes, 0, "");
  if (m && index.kind == detail::DatasetKind::kRaw) {
    const int pixels = ::memfd_create("pixels-test", MFD_CLOEXEC);
    EXPECT_TRUE(detail::write_pixels_file(pixels, index, identity));
    EXPECT_TRUE(detail::attach_pixels(*m, pixels, identity, max_classes));
  }
  return m;
}

// Every accessor of the mapped view agrees with the index built in memory.
void expect_same(const DatasetIndex& built, const MappedIndex& mapped) {
  const DatasetView got = mapped.view();
  ASSERT_EQ(got.size(), built.size);
  EXPECT_EQ(mapped.info().shard_starts, built.shard_starts);
  EXPECT_EQ(mapped.info().class_names, built.class_names);
  EXPECT_EQ(mapped.info().has_boxes, built.has_boxes);
  ASSERT_EQ(mapped.info().rejected.size(), built.rejected.size());
  for (std::size_t i = 0; i < built.rejected.size(); ++i) {
    EXPECT_EQ(mapped.info().rejected[i].path, built.rejected[i].path);
    EXPECT_EQ(mapped.info().rejected[i].reason, built.rejected[i].reason);
  }
  EXPECT_EQ(mapped.info().shard_notes, built.shard_notes);
  EXPECT_EQ(mapped.info().box_notes, built.box_notes);
  EXPECT_EQ(mapped.info().has_masks, built.has_masks);
  EXPECT_EQ(mapped.info().has_bytes, built.has_bytes);
  const auto text = [&](std::uint64_t offset, std::uint32_t length) {
    return built.paths.substr(offset, length);
  };
  for (std::int64_t i = 0; i < built.size; ++i) {
    const auto at = static_cast<std::size_t>(i);
    if (got.raw()) {
      ASSERT_EQ(got.label(i), built.labels[at]) << i;
      ASSERT_EQ(std::memcmp(got.raw_pixels(i), built.pixels.data() + at * got.raw_bytes(),
                            got.raw_bytes()),
                0)
          << i;
      continue;
    }
    const detail::FileEntry& e = built.entries[at];
    ASSERT_EQ(got.label(i), e.label) << i;
    ASSERT_EQ(got.path(i), text(e.path_offset, e.path_length)) << i;
    ASSERT_EQ(got.copy(i), text(e.path_offset + e.path_length, e.copy_length)) << i;
    ASSERT_EQ(got.range(i).offset, e.offset) << i;
    ASSERT_EQ(got.range(i).size, e.size) << i;
    ASSERT_EQ(got.boxes(i).size(), e.box_count) << i;
    for (std::size_t b = 0; b < e.box_count; ++b)
      ASSERT_EQ(
          std::memcmp(&got.boxes(i)[b], &built.boxes[e.box_first + b], sizeof(detail::SampleBox)),
          0);
    ASSERT_EQ(got.mask_kind(i), e.mask_kind) << i;
    if (e.mask_kind == detail::kMaskFile) {
      ASSERT_EQ(got.mask_path(i), text(e.mask_path_offset, e.mask_path_length)) << i;
    }
    ASSERT_EQ(got.mask_range(i).offset, e.mask_offset) << i;
    ASSERT_EQ(got.mask_range(i).size, e.mask_size) << i;
    ASSERT_EQ(got.bytes_range(i).offset, e.bytes_offset) << i;
    ASSERT_EQ(got.bytes_range(i).size, e.bytes_size) << i;
    ASSERT_EQ(got.annotated_width(i), e.annotated_width) << i;
    ASSERT_EQ(got.annotated_height(i), e.annotated_height) << i;
  }
}

TEST(IndexFile, HoldsWhatTheIndexBuiltInMemoryHolds) {
  test::TempDir dir;
  // Shards with labels, pass-through bytes and boxes; a list with masks; IDX data; COCO.
  std::vector<std::pair<std::string, std::string>> members;
  for (int i = 0; i < 5; ++i) {
    const std::string key = "s" + std::to_string(i);
    members.push_back({key + ".jpg", std::string(100 + i, 'x')});
    members.push_back({key + ".cls", std::to_string(i)});
    members.push_back({key + ".txt", "caption " + key});
    members.push_back({key + ".box.json", R"({"boxes": [[1, 2, 30, 40]], "classes": [3]})"});
  }
  std::ofstream(dir.path() / "a.tar", std::ios::binary) << test::tar_archive(members);
  std::ofstream(dir.path() / "b.tar", std::ios::binary) << test::tar_archive(members);
  IndexOptions shards;
  shards.bytes_field = "txt";
  shards.box_field = "box.json";
  const std::string shard_data = (dir.path() / "{a,b}.tar").string();
  expect_same(detail::build_index(shard_data, shards),
              *round_trip(detail::build_index(shard_data, shards), "shards"));

  std::ofstream(dir.path() / "masks.txt") << "x.png\t1\tx-mask.png\ny.png\t2\ty-mask.png\n";
  const std::string list = (dir.path() / "masks.txt").string();
  expect_same(detail::build_index(list), *round_trip(detail::build_index(list), "list"));

  IndexOptions fashion;
  fashion.split = Split::kTest;
  const DatasetIndex idx = detail::build_index(tools::kDefaultFashionMnistDir, fashion);
  expect_same(idx, *round_trip(idx, "idx"));

  const std::string coco = (dir.path() / "instances.json").string();
  std::ofstream(coco) << R"({"images": [{"id": 1, "file_name": "a.jpg", "width": 64, "height": 48},
      {"id": 2, "file_name": "b.jpg", "width": 32, "height": 32}],
    "annotations": [{"id": 1, "image_id": 1, "category_id": 5, "bbox": [1, 2, 10, 10],
      "area": 100, "iscrowd": 0}],
    "categories": [{"id": 5, "name": "cat"}]})";
  expect_same(detail::build_index(coco), *round_trip(detail::build_index(coco), "coco"));
}

// Rewrites bytes [offset, offset + n) of the index file `fd` holds and maps it again.
std::unique_ptr<MappedIndex> remapped_with(const DatasetIndex& index, std::size_t offset,
                                           const void* bytes, std::size_t n,
                                           const std::string& identity = "id") {
  const int fd = ::memfd_create("index-test", MFD_CLOEXEC);
  EXPECT_TRUE(detail::write_index_file(fd, index, "id"));
  EXPECT_EQ(::pwrite(fd, bytes, n, static_cast<off_t>(offset)), static_cast<ssize_t>(n));
  return detail::map_index_file(fd, identity, kDefaultMaxClasses, 0, "");
}

TEST(IndexFile, ADamagedForeignOrTruncatedFileIsNeverRead) {
  test::TempDir dir;
  std::ofstream(dir.path() / "l.txt") << "a.jpg\t1\nb.jpg\t2\nc.jpg\t3\n";
  const DatasetIndex index = detail::build_index((dir.path() / "l.txt").string());
  const std::uint8_t same = 0;
  ASSERT_NE(remapped_with(index, 4096, &same, 0), nullptr);  // untouched: read
  // Another identity (the data changed since, or another dataset hashed to the name).
  EXPECT_EQ(remapped_with(index, 4096, &same, 0, "other"), nullptr);
  // Another magic or format.
  EXPECT_EQ(remapped_with(index, 0, "STOKEIY", 8), nullptr);
  const std::uint32_t format = 99;
  EXPECT_EQ(remapped_with(index, 8, &format, 4), nullptr);
  // The columns' header (data/index_columns.hpp, at 4096): a section past the region, path
  // bytes cut short, folders past the text, labels past max_classes or below -1, a box range
  // past the boxes, an unknown mask kind or column width.
  using detail::FilesHeader;
  using detail::SectionInfo;
  const auto section = [](std::uint32_t s, std::size_t field) {
    return 4096 + offsetof(FilesHeader, sections) + sizeof(SectionInfo) * s + field;
  };
  const std::uint64_t far = std::uint64_t{1} << 40;
  EXPECT_EQ(
      remapped_with(index, section(detail::kPathBytes, offsetof(SectionInfo, offset)), &far, 8),
      nullptr);
  const std::uint64_t one = 1, none = 0;
  EXPECT_EQ(
      remapped_with(index, section(detail::kPathBytes, offsetof(SectionInfo, count)), &one, 8),
      nullptr);
  EXPECT_EQ(remapped_with(index, section(detail::kText, offsetof(SectionInfo, count)), &none, 8),
            nullptr);
  const std::int64_t label = kDefaultMaxClasses, below = -2, box = 1;
  const auto base = [&](std::uint32_t s) { return section(s, offsetof(SectionInfo, base)); };
  EXPECT_EQ(remapped_with(index, base(detail::kLabelColumn), &label, 8), nullptr);
  EXPECT_EQ(remapped_with(index, base(detail::kLabelColumn), &below, 8), nullptr);
  EXPECT_EQ(remapped_with(index, base(detail::kBoxFirstColumn), &box, 8), nullptr);
  const std::uint32_t mask = 7, width = 3;
  EXPECT_EQ(remapped_with(index, 4096 + offsetof(FilesHeader, mask_kind), &mask, 4), nullptr);
  EXPECT_EQ(
      remapped_with(index, section(detail::kLabelColumn, offsetof(SectionInfo, width)), &width, 4),
      nullptr);
  // IDX data (raw) that claims what only file entries have (masks, bytes, boxes) or more than
  // one channel: its accessors would read entries it has none of.
  IndexOptions fashion;
  fashion.split = Split::kTest;
  const DatasetIndex raw = detail::build_index(tools::kDefaultFashionMnistDir, fashion);
  ASSERT_NE(remapped_with(raw, 4096, &same, 0), nullptr);
  const std::uint32_t masks = 2;  // IndexFileHeader::flags, after kind
  EXPECT_EQ(remapped_with(raw, 76, &masks, 4), nullptr);
  const std::int32_t channels = 3;
  EXPECT_EQ(remapped_with(raw, 96, &channels, 4), nullptr);
  // A file cut short (a writer that died without the rename, a full disk).
  const int fd = ::memfd_create("index-test", MFD_CLOEXEC);
  ASSERT_TRUE(detail::write_index_file(fd, index, "id"));
  ASSERT_EQ(::ftruncate(fd, 4096 + 200), 0);
  EXPECT_EQ(detail::map_index_file(fd, "id", kDefaultMaxClasses, 0, ""), nullptr);
}

TEST(IndexFile, TheSecondLoaderMapsTheFileTheFirstWrote) {
  test::TempDir dir;
  const fs::path list = dir.path() / "list.txt";
  write_list(list, 5000);
  const IndexOptions options = cached_in(dir);
  const auto first = detail::index_dataset(list.string(), options);
  EXPECT_EQ(first->origin(), Origin::kBuilt);
  EXPECT_EQ(fs::path(first->file()), index_path(list.string(), options));
  const auto second = detail::index_dataset(list.string(), options);
  EXPECT_EQ(second->origin(), Origin::kFound);
  EXPECT_EQ(second->file(), first->file());
  EXPECT_EQ(second->view().path(4999), first->view().path(4999));
  // The cache's rules: a private file of this user's, 0600.
  EXPECT_EQ(fs::status(first->file()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // Other options index other contents: another file.
  IndexOptions fewer = options;
  fewer.max_classes = 2000;
  EXPECT_EQ(detail::index_dataset(list.string(), fewer)->origin(), Origin::kBuilt);
  // No cache folder: a private index, every time.
  IndexOptions none;
  EXPECT_EQ(detail::index_dataset(list.string(), none)->origin(), Origin::kPrivate);
}

// Index files no loader has mapped for a week go when a loader starts (in a process of its own:
// a process looks at the folder at most every 10 minutes), with dead writers' temporary files and
// the lock files of indexes gone that no loader holds; what is in use stays.
TEST(IndexFile, AnIndexFileUnusedForAWeekGoesWhenALoaderStarts) {
  test::TempDir dir;
  const IndexOptions options = cached_in(dir);
  write_list(dir.path() / "old.txt", 10);
  write_list(dir.path() / "new.txt", 20);
  // (Each loader in a child: a child forked after this process looked would not look again.)
  const auto start_loader = [&](const char* list) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      detail::index_dataset((dir.path() / list).string(), options);
      ::_exit(0);
    }
    return test::exit_status(pid);
  };
  ASSERT_EQ(start_loader("old.txt"), 0);
  const fs::path old_index = index_path((dir.path() / "old.txt").string(), options);
  const fs::path folder = old_index.parent_path();
  const auto age = [](const fs::path& p, std::chrono::hours hours) {
    const auto t = fs::file_time_type::clock::now() - hours;
    fs::last_write_time(p, t);
  };
  const auto touch = [&](const char* name, std::chrono::hours hours) {
    std::ofstream(folder / name).flush();
    age(folder / name, hours);
    return folder / name;
  };
  age(old_index, std::chrono::hours(24 * 8));
  // (The first loader's look at the folder was minutes ago: the machine's next one looks again.)
  age(folder / ".swept", std::chrono::hours(1));
  age(old_index.string() + ".lock", std::chrono::hours(24 * 8));
  const fs::path dead_writer = touch("0123456789abcdef.stoke-index.tmp.x1", std::chrono::hours(2));
  const fs::path writing = touch("1123456789abcdef.stoke-index.tmp.x2", std::chrono::hours(0));
  const fs::path fresh_lock = touch("2123456789abcdef.stoke-index.lock", std::chrono::hours(0));
  const fs::path held_lock = touch("3123456789abcdef.stoke-index.lock", std::chrono::hours(2));
  const fs::path recent = touch("4123456789abcdef.stoke-index", std::chrono::hours(24 * 6));
  const int held = ::open(held_lock.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  ASSERT_EQ(start_loader("new.txt"), 0);
  ::close(held);
  EXPECT_FALSE(fs::exists(old_index));
  EXPECT_FALSE(fs::exists(old_index.string() + ".lock"));
  EXPECT_FALSE(fs::exists(dead_writer));
  EXPECT_TRUE(fs::exists(writing));
  EXPECT_TRUE(fs::exists(fresh_lock));
  EXPECT_TRUE(fs::exists(held_lock));
  EXPECT_TRUE(fs::exists(recent));
  EXPECT_TRUE(fs::exists(index_path((dir.path() / "new.txt").string(), options)));
  // A loader starting within 10 minutes of that look, in another process, does not look again.
  const fs::path late = touch("6123456789abcdef.stoke-index.tmp.x4", std::chrono::hours(2));
  ASSERT_EQ(start_loader("old.txt"), 0);
  EXPECT_TRUE(fs::exists(late)) << "a process looked again within 10 minutes of another";
}

// A sweep may remove an old lock file that a loader has opened but not yet taken: that loader
// then takes the file at the name (made anew), so the lock still excludes every other loader.
TEST(IndexFile, ALockFileASweepRemovedIsNeverHeldBesideANewOne) {
  test::TempDir dir;
  const fs::path folder = dir.path() / "datasets";
  fs::create_directories(folder);
  const fs::path lock = folder / "0123456789abcdef.stoke-index.lock";
  std::ofstream(lock).flush();
  fs::last_write_time(lock, fs::file_time_type::clock::now() - std::chrono::hours(2));
  detail::IndexFileLock a(folder.string(), "0123456789abcdef.stoke-index");
  ASSERT_TRUE(a.usable());
  detail::expire_index_files(folder.string());
  EXPECT_FALSE(fs::exists(lock)) << "the sweep left the orphan lock file";
  EXPECT_EQ(a.try_take(), detail::IndexFileLock::Attempt::kTaken);
  EXPECT_TRUE(fs::exists(lock)) << "the lock taken is not at the lock's name";
  detail::IndexFileLock b(folder.string(), "0123456789abcdef.stoke-index");
  ASSERT_TRUE(b.usable());
  EXPECT_EQ(b.try_take(), detail::IndexFileLock::Attempt::kBusy);
}

// IDX data needs no per-sample entry (sample i's pixels are at i x H x W): the index file holds
// none, and the IDX files unpacked, pixels and labels, are a file of their own beside it (the
// data, kept once a machine as the index is). It was 788 bytes a sample in the index file. A
// pixels file that is missing, cut short or of another identity is rebuilt, never read.
TEST(IndexFile, IdxDataHoldsNoPerSampleEntryItsPixelsAreAFileBesideIt) {
  test::TempDir dir;
  IndexOptions options = cached_in(dir);
  options.split = Split::kTest;
  options.max_classes = 100;  // (so that a label byte of 200 is out of bounds)
  const DatasetIndex built = detail::build_index(tools::kDefaultFashionMnistDir, options);
  const auto index = detail::index_dataset(tools::kDefaultFashionMnistDir, options);
  ASSERT_EQ(index->origin(), Origin::kBuilt);
  const double per_sample = double(fs::file_size(index->file())) / double(built.size);
  std::printf("Fashion-MNIST test: the index file holds %.2f bytes a sample\n", per_sample);
  EXPECT_LE(per_sample, 1.0);
  const fs::path pixels = detail::pixels_file_path(index->file());
  EXPECT_EQ(fs::file_size(pixels),
            4096 + built.pixels.size() + built.labels.size() +
                detail::dataset_identity(tools::kDefaultFashionMnistDir, options)->size());
  const auto same = [&](const MappedIndex& m) {
    const DatasetView view = m.view();
    for (std::int64_t i = 0; i < view.size(); i += 37) {
      const auto at = static_cast<std::size_t>(i);
      ASSERT_EQ(view.label(i), built.labels[at]) << i;
      ASSERT_EQ(std::memcmp(view.raw_pixels(i), built.pixels.data() + at * view.raw_bytes(),
                            view.raw_bytes()),
                0)
          << i;
    }
  };
  same(*index);
  EXPECT_EQ(detail::index_dataset(tools::kDefaultFashionMnistDir, options)->origin(),
            Origin::kFound);
  const auto rebuilt_after = [&](const char* what, const std::function<void()>& damage) {
    damage();
    const auto again = detail::index_dataset(tools::kDefaultFashionMnistDir, options);
    EXPECT_EQ(again->origin(), Origin::kBuilt) << what;
    same(*again);
  };
  rebuilt_after("missing", [&] { fs::remove(pixels); });
  rebuilt_after("cut short", [&] { fs::resize_file(pixels, fs::file_size(pixels) - 1000); });
  rebuilt_after("another identity", [&] {
    std::fstream f(pixels, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('#');
  });
  rebuilt_after("a label past max_classes", [&] {
    std::fstream f(pixels, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(4096 + built.pixels.size()));
    f.put(static_cast<char>(200));
  });
}

// A planted IDX index and pixels file whose numbers wrap 2^64 (2^48 images of 65535 x 1 pixels,
// and a pixels file of 4 KiB that claims them: the sums came out right) made attach_pixels read
// the labels far outside the mapping. The index's numbers are held to the IDX reader's bounds,
// and the pixels file's to its size before any product: the pair is rebuilt, never read.
TEST(IndexFile, APlantedIdxPairWhoseSizesWrapIsRebuiltNeverRead) {
  test::TempDir dir;
  IndexOptions options = cached_in(dir);
  options.split = Split::kTest;
  const std::string data = tools::kDefaultFashionMnistDir;
  const std::string path = detail::index_dataset(data, options)->file();
  const std::string identity = *detail::dataset_identity(data, options);
  DatasetIndex raw;
  raw.kind = detail::DatasetKind::kRaw;
  raw.size = std::int64_t{1} << 48;
  raw.height = 65535;
  raw.width = raw.channels = 1;
  {
    const int fd = ::open((path + ".new").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_TRUE(detail::write_index_file(fd, raw, identity));
    ::close(fd);
    fs::rename(path + ".new", path);
  }
  struct {
    char magic[8] = {'S', 'T', 'O', 'K', 'E', 'P', 'X', '\0'};
    std::uint32_t format = 1, header_size = 48;
    std::uint64_t file_size, pixels_size, samples, identity_size;
  } h;
  h.samples = std::uint64_t{1} << 48;
  h.pixels_size = h.samples * 65535;  // 2^64 - 2^48: with the labels, it wraps to 0
  h.identity_size = identity.size();
  h.file_size = 4096 + identity.size();
  std::string file(4096, '\0');
  std::memcpy(file.data(), &h, sizeof h);
  file += identity;
  const std::string pixels = detail::pixels_file_path(path);
  fs::remove(pixels);
  std::ofstream(pixels, std::ios::binary) << file;
  fs::permissions(pixels, fs::perms::owner_read | fs::perms::owner_write);
  const auto again = detail::index_dataset(data, options);
  EXPECT_EQ(again->origin(), Origin::kBuilt);
  EXPECT_EQ(again->info().size, 10000);
  // The pixels file alone, onto an index of bounds it does not fit: refused.
  DatasetIndex small = detail::build_index(data, options);
  const int index_fd = ::memfd_create("index", MFD_CLOEXEC);
  ASSERT_TRUE(detail::write_index_file(index_fd, small, identity));
  auto m = detail::map_index_file(index_fd, identity, kDefaultMaxClasses, 0, "");
  ASSERT_NE(m, nullptr);
  const int pixels_fd = ::memfd_create("pixels", MFD_CLOEXEC);
  ASSERT_EQ(::write(pixels_fd, file.data(), file.size()), static_cast<ssize_t>(file.size()));
  EXPECT_FALSE(detail::attach_pixels(*m, pixels_fd, identity, kDefaultMaxClasses));
}

TEST(IndexFile, AURLWithCredentialsOrASignatureIsNeverKeyedNorShared) {
  IndexOptions options;
  options.caches.root = "/nonexistent";
  for (const char* url :
       {"http://user:secret@127.0.0.1:9/train-{0..3}.tar",
        "https://127.0.0.1:9/a.tar?X-Amz-Signature=0123456789abcdef&X-Amz-Expires=60"})
    EXPECT_EQ(detail::dataset_identity(url, options), std::nullopt) << url;
}

TEST(IndexFile, AChangedInputGivesANewIndexNeverTheStaleOne) {
  test::TempDir dir;
  const IndexOptions options = cached_in(dir);
  const auto shard = [&](int samples) {
    std::vector<std::pair<std::string, std::string>> members;
    for (int i = 0; i < samples; ++i) {
      members.push_back({"k" + std::to_string(i) + ".jpg", "jpeg bytes " + std::to_string(i)});
      members.push_back({"k" + std::to_string(i) + ".cls", std::to_string(i % 3)});
    }
    std::ofstream(dir.path() / "s.tar", std::ios::binary) << test::tar_archive(members);
  };
  const std::string data = (dir.path() / "s.tar").string();
  shard(4);
  EXPECT_EQ(detail::index_dataset(data, options)->origin(), Origin::kBuilt);
  EXPECT_EQ(detail::index_dataset(data, options)->origin(), Origin::kFound);
  shard(6);  // rewritten in place: another size and times
  const auto changed = detail::index_dataset(data, options);
  EXPECT_EQ(changed->origin(), Origin::kBuilt);
  EXPECT_EQ(changed->info().size, 6);
  // A sidecar that appears afterwards is an input too.
  const detail::ShardIndex table = detail::walk_tar(
      [&](std::uint64_t offset, void* dst, std::size_t n) {
        std::ifstream in(data, std::ios::binary);
        in.seekg(static_cast<std::streamoff>(offset));
        in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
        return static_cast<std::size_t>(in.gcount());
      },
      fs::file_size(data));
  std::ofstream(data + ".idx") << detail::format_sidecar(table);
  EXPECT_EQ(detail::index_dataset(data, options)->origin(), Origin::kBuilt);
  // A list whose lines change; an image folder gaining a file in a class folder.
  const fs::path list = dir.path() / "l.txt";
  write_list(list, 10);
  EXPECT_EQ(detail::index_dataset(list.string(), options)->info().size, 10);
  write_list(list, 12);
  EXPECT_EQ(detail::index_dataset(list.string(), options)->info().size, 12);
  fs::create_directories(dir.path() / "tree/cat");
  std::ofstream(dir.path() / "tree/cat/1.jpg") << "x";
  const std::string tree = (dir.path() / "tree").string();
  EXPECT_EQ(detail::index_dataset(tree, options)->info().size, 1);
  EXPECT_EQ(detail::index_dataset(tree, options)->origin(), Origin::kFound);
  std::ofstream(dir.path() / "tree/cat/2.jpg") << "y";
  const auto grown = detail::index_dataset(tree, options);
  EXPECT_EQ(grown->origin(), Origin::kBuilt);
  EXPECT_EQ(grown->info().size, 2);
  // An image left out as empty, then written in place (no folder's times change): its index is
  // not reused.
  std::ofstream(dir.path() / "tree/cat/3.jpg").close();
  EXPECT_EQ(detail::index_dataset(tree, options)->info().rejected.size(), 1u);
  EXPECT_EQ(detail::index_dataset(tree, options)->origin(), Origin::kFound);
  std::ofstream(dir.path() / "tree/cat/3.jpg", std::ios::in | std::ios::out) << "z";
  const auto filled = detail::index_dataset(tree, options);
  EXPECT_EQ(filled->origin(), Origin::kBuilt);
  EXPECT_EQ(filled->info().size, 3);
  EXPECT_TRUE(filled->info().rejected.empty());
}

// Runs index_dataset in a child process; its origin (or 9 for an error) is the exit status.
pid_t index_in_child(const std::string& data, const IndexOptions& options) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      ::_exit(static_cast<int>(detail::index_dataset(data, options)->origin()));
    } catch (...) {
      ::_exit(9);
    }
  }
  return pid;
}

TEST(IndexFile, ProcessesStartingTogetherShareOneFileThatOneOfThemBuilds) {
  test::TempDir dir;
  const fs::path list = dir.path() / "list.txt";
  write_list(list, 200000 / test::kSlowdown);
  const IndexOptions options = cached_in(dir);
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) children.push_back(index_in_child(list.string(), options));
  int built = 0, found = 0;
  for (pid_t pid : children) {
    const int origin = test::exit_status(pid);
    built += origin == static_cast<int>(Origin::kBuilt);
    found += origin == static_cast<int>(Origin::kFound);
  }
  EXPECT_EQ(built, 1);
  EXPECT_EQ(found, 3);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path() / "cache/datasets"))
    files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  const std::string name = index_path(list.string(), options).filename().string();
  // (And the stamp of the last look for unused files: expire_index_files.)
  EXPECT_EQ(files, (std::vector<std::string>{".swept", name, name + ".lock"}));
}

TEST(IndexFile, AWriterKilledWhileIndexingLeavesTheNextLoaderToBuildIt) {
  test::TempDir dir;
  const fs::path list = dir.path() / "list.txt";
  // About a second to index (the sanitizer builds are that much slower with fewer lines): time
  // to be killed in.
  write_list(list, 1500000 / test::kSlowdown);
  const IndexOptions options = cached_in(dir);
  const fs::path file = index_path(list.string(), options);
  const std::string lock = file.string() + ".lock";
  // What a writer killed at any later moment would leave beside the lock: a part of its file.
  fs::create_directories(file.parent_path());
  std::ofstream(file.string() + ".tmp.deadbeef") << "STOKEIX";
  const pid_t writer = index_in_child(list.string(), options);
  // Wait until the writer holds the lock (a lock we cannot take), then start a second loader,
  // which waits for it, and kill the writer.
  bool held = false;
  for (int i = 0; i < 5000 && !held; ++i) {
    const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
      if (!held) ::flock(fd, LOCK_UN);
      ::close(fd);
    }
    if (!held) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(held) << "the writer never took the lock";
  const pid_t waiter = index_in_child(list.string(), options);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(writer, SIGKILL);
  EXPECT_EQ(test::exit_status(writer), -SIGKILL);
  EXPECT_FALSE(fs::exists(file)) << "the killed writer finished first: index a larger list";
  EXPECT_EQ(test::exit_status(waiter), static_cast<int>(Origin::kBuilt));
  EXPECT_EQ(detail::index_dataset(list.string(), options)->origin(), Origin::kFound);
  for (const auto& e : fs::directory_iterator(file.parent_path()))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  // A file cut short under the final name (a machine that lost power before its writes reached
  // the disk) is rebuilt, not read.
  fs::resize_file(file, 5000);
  EXPECT_EQ(detail::index_dataset(list.string(), options)->origin(), Origin::kBuilt);
}

// Long indexing and long waits for another loader's index say so, every progress_every_s.
TEST(IndexFile, LongIndexingAndLongWaitsAreNotSilent) {
  test::TempDir dir;
  const fs::path list = dir.path() / "list.txt";
  write_list(list, 400000 / test::kSlowdown);
  IndexOptions options = cached_in(dir);
  options.progress_every_s = 0.02;
  test::LogLines lines;
  const auto sink = lines.sink();
  options.progress = [sink](const std::string& line) { sink(line); };
  // Another loader (this test) holds the lock for 300 ms.
  const fs::path file = index_path(list.string(), options);
  fs::create_directories(file.parent_path());
  const int held = ::open((file.string() + ".lock").c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  std::thread release([held] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::flock(held, LOCK_UN);
    ::close(held);
  });
  const auto index = detail::index_dataset(list.string(), options);
  release.join();
  EXPECT_EQ(index->origin(), Origin::kBuilt);
  EXPECT_GE(index->waited_s(), 0.25);
  int waiting = 0, indexing = 0;
  for (const std::string& l : lines.lines()) {
    waiting += l.starts_with("dataset index: waiting for another loader indexing " + list.string() +
                             " into " + file.string() + ", ");
    indexing += l.starts_with("dataset index: indexing " + list.string() + ", ");
    EXPECT_TRUE(l.ends_with(" s so far")) << l;
  }
  EXPECT_GE(waiting, 3);
  EXPECT_GE(indexing, 1) << "indexing " << index->built_s() << " s said nothing";
}

}  // namespace
}  // namespace stoke
