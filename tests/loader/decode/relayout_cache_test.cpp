// The relayout cache (decode/relayout_cache.hpp): a local folder's progressive JPEGs are copied,
// re-laid out losslessly, the first time a worker reads them and read from the copy after, with
// the same batches; an edited file gets a new copy; the limit evicts the least recently used
// copies; a link at a copy's name is never followed.

#include "decode/relayout_cache.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "decode/decode.hpp"
#include "decode/jpeg_relayout.hpp"
#include "libjpeg_writer.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke::detail {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

Bytes bytes_of(const fs::path& p) {
  const std::string text = test::read_file(p);
  return Bytes(text.begin(), text.end());
}

void write_bytes(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// The test corpus's photos (baseline JPEGs), in order.
std::vector<fs::path> corpus() {
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(test::testdata("jpeg")))
    if (e.path().extension() == ".jpg") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  return paths;
}

// The test corpus's photo `i` as a progressive JPEG written by libjpeg.
Bytes progressive_photo(std::size_t i) {
  cv::Mat bgr = cv::imread(corpus().at(i).string()), rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return test::libjpeg_compress(rgb, [](jpeg_compress_struct& c) { jpeg_simple_progression(&c); });
}

// The copies in the cache folder `folder`: their bytes.
std::multiset<std::string> copies_in(const fs::path& folder) {
  std::multiset<std::string> out;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.path().extension() == ".jpg") out.insert(test::read_file(e.path()));
  return out;
}

// A folder of 16 baseline photos and 8 progressive ones, read by 2 workers through the cache:
// the first epoch makes a copy of each progressive file (the bytes relayout_jpeg makes of it),
// the second reads them, and both deliver what a loader without the cache delivers; `all`
// copies every JPEG; `off` none.
TEST(RelayoutCache, ProgressiveFilesAreCopiedOnceAndReadFromTheirCopiesAfter) {
  test::TempDir dir;
  const fs::path in = dir.path() / "in";
  const std::vector<fs::path> photos = corpus();
  std::multiset<std::string> expected;
  for (std::size_t i = 0; i < 24; ++i) {
    const fs::path to = in / (i % 2 == 0 ? "a" : "b") / ("p" + std::to_string(i) + ".jpg");
    if (i % 3 == 0) {
      const Bytes b = progressive_photo(i * 3);
      write_bytes(to, b);
      const Relayout r = relayout_jpeg(b.data(), b.size());
      ASSERT_TRUE(r.why.empty() && r.was_progressive) << r.why;
      expected.insert(std::string(r.bytes.begin(), r.bytes.end()));
    } else {
      fs::create_directories(to.parent_path());
      fs::copy_file(photos[i * 3], to);
    }
  }
  Pipeline rrc(96, 96, 3);
  rrc.random_resized_crop(96, 96).horizontal_flip(0.5f);
  Options o = test::fashion_options(2, 8);
  o.data = in.string();
  o.pipeline = rrc;
  o.cache_dir = (dir.path() / "cache").string();
  o.relayout_cache = stoke::Relayout::kOff;
  test::Delivered plain;
  {
    Loader loader(o);
    plain = test::collect(loader);
    EXPECT_EQ(loader.stats().relayout_cache, "off");
  }
  EXPECT_FALSE(fs::exists(dir.path() / "cache/relayout"));
  o.relayout_cache = stoke::Relayout::kProgressive;
  const fs::path folder = dir.path() / "cache/relayout";
  {
    Loader first(o);
    EXPECT_TRUE(test::collect(first) == plain);
    const Stats s = first.stats();
    EXPECT_EQ(s.relayout_cache, "on: " + folder.string() + ", progressive JPEGs, limit 16 GiB");
    // Each progressive file read is a copy made or read (workers run ahead into the next epoch,
    // and two may race to copy one file: at least 8).
    EXPECT_GE(s.relayout_hits + s.relayout_stored, 8);
    EXPECT_GE(s.relayout_stored, 8);
  }
  EXPECT_TRUE(copies_in(folder) == expected);
  {
    Loader second(o);
    EXPECT_TRUE(test::collect(second) == plain);
    EXPECT_GE(second.stats().relayout_hits, 8);
    EXPECT_EQ(second.stats().relayout_stored, 0);
  }
  o.relayout_cache = stoke::Relayout::kAll;
  o.cache_dir = (dir.path() / "all").string();
  {
    Loader every(o);
    EXPECT_TRUE(test::collect(every) == plain);
  }
  EXPECT_EQ(copies_in(dir.path() / "all/relayout").size(), 24u);
  // Other data (here IDX) is not copied: the cache says so.
  Options idx = test::fashion_options(1, 10);
  idx.relayout_cache = stoke::Relayout::kAll;
  Loader raw(idx);
  EXPECT_EQ(raw.stats().relayout_cache, "off (for image folders and list files)");
}

// The cache on its own: a miss, the copy offered and kept, a hit; an edited file (another size
// and modification time) misses and gets a copy of its own; baseline files are copied only
// under `all`; a damaged JPEG is not copied.
TEST(RelayoutCache, AnEditedFileGetsANewCopyAndOnlyProgressiveOnesAreCopiedByDefault) {
  test::TempDir dir;
  const std::string folder = (dir.path() / "relayout").string();
  fs::create_directories(folder);
  RelayoutCache cache(folder, std::uint64_t{1} << 30, stoke::Relayout::kProgressive,
                      kDefaultMaxPixels);
  const fs::path source = dir.path() / "photo.jpg";
  const Bytes one = progressive_photo(1);
  write_bytes(source, one);
  Bytes got;
  EXPECT_FALSE(cache.read(source.string(), got));
  Bytes offered = one;
  ASSERT_TRUE(cache.offer(offered));
  EXPECT_EQ(offered, relayout_jpeg(one.data(), one.size()).bytes);
  EXPECT_TRUE(cache.read(source.string(), got));
  EXPECT_EQ(got, offered);
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.stored(), 1);

  const Bytes two = progressive_photo(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_bytes(source, two);
  EXPECT_FALSE(cache.read(source.string(), got));
  offered = two;
  ASSERT_TRUE(cache.offer(offered));
  EXPECT_TRUE(cache.read(source.string(), got));
  EXPECT_EQ(got, relayout_jpeg(two.data(), two.size()).bytes);

  // An edit that keeps the size and puts the modification time back is a new version too.
  {
    struct stat before {};
    ASSERT_EQ(::stat(source.c_str(), &before), 0);
    Bytes edited = two;
    edited[edited.size() / 2] ^= 0x01;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    write_bytes(source, edited);
    const timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, source.c_str(), times, 0), 0);
    EXPECT_FALSE(cache.read(source.string(), got));
  }
  // A frame of more pixels than max_pixels is not re-laid out (its decode refuses it).
  RelayoutCache small(folder, std::uint64_t{1} << 30, stoke::Relayout::kAll, 1000);
  Bytes large = one;
  write_bytes(dir.path() / "large.jpg", one);
  EXPECT_FALSE(small.read((dir.path() / "large.jpg").string(), got));
  EXPECT_FALSE(small.offer(large));
  EXPECT_EQ(large, one);

  const fs::path baseline = dir.path() / "baseline.jpg";
  const Bytes b = bytes_of(corpus().at(0));
  write_bytes(baseline, b);
  EXPECT_FALSE(cache.read(baseline.string(), got));
  Bytes kept = b;
  EXPECT_FALSE(cache.offer(kept));
  EXPECT_EQ(kept, b);
  RelayoutCache all(folder, std::uint64_t{1} << 30, stoke::Relayout::kAll, kDefaultMaxPixels);
  EXPECT_FALSE(all.read(baseline.string(), got));
  EXPECT_TRUE(all.offer(kept));
  EXPECT_TRUE(all.read(baseline.string(), got));

  const fs::path cut = dir.path() / "cut.jpg";
  const Bytes half(one.begin(), one.begin() + static_cast<std::ptrdiff_t>(one.size() / 2));
  write_bytes(cut, half);
  EXPECT_FALSE(cache.read(cut.string(), got));
  Bytes damaged = half;
  EXPECT_FALSE(cache.offer(damaged));
  EXPECT_EQ(damaged, half);
  EXPECT_FALSE(cache.read(cut.string(), got));
}

// Copies past the limit: the least recently used ones go, until the rest hold 90% of it; the
// newest copy and the ones read last stay.
TEST(RelayoutCache, TheLimitEvictsTheLeastRecentlyUsedCopies) {
  test::TempDir dir;
  const std::string folder = (dir.path() / "relayout").string();
  fs::create_directories(folder);
  std::vector<Bytes> photos;
  std::uint64_t largest = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    photos.push_back(progressive_photo(i));
    const Relayout r = relayout_jpeg(photos.back().data(), photos.back().size());
    largest = std::max<std::uint64_t>(largest, r.bytes.size());
    write_bytes(dir.path() / ("s" + std::to_string(i) + ".jpg"), photos.back());
  }
  const std::uint64_t limit = largest * 3;
  RelayoutCache cache(folder, limit, stoke::Relayout::kProgressive, kDefaultMaxPixels);
  Bytes got;
  const auto source = [&](std::size_t i) {
    return (dir.path() / ("s" + std::to_string(i) + ".jpg")).string();
  };
  // The copies' last uses, set before each new copy: copy j used at base + j seconds, copy 0
  // last of all.
  const auto set_uses = [&](std::size_t below) {
    const std::int64_t base = std::time(nullptr) - 1000;
    for (std::size_t j = 0; j < below; ++j) {
      const std::string copy = cache.copy_path(source(j));
      const timespec t{static_cast<std::time_t>(base + (j == 0 ? 100 : j)), 0};
      const timespec times[2] = {t, t};
      ::utimensat(AT_FDCWD, copy.c_str(), times, AT_SYMLINK_NOFOLLOW);  // (gone: no matter)
    }
  };
  for (std::size_t i = 0; i < 6; ++i) {
    ASSERT_FALSE(cache.read(source(i), got));
    set_uses(i);
    Bytes b = photos[i];
    ASSERT_TRUE(cache.offer(b));
    EXPECT_LE(RelayoutCache::folder_bytes(folder), limit) << i;
  }
  EXPECT_GE(cache.evicted(), 2);
  EXPECT_TRUE(cache.read(source(0), got));
  EXPECT_TRUE(cache.read(source(5), got));
  EXPECT_FALSE(cache.read(source(1), got));
  // A limit below one copy keeps none (the file is still decoded from its re-laid-out bytes).
  RelayoutCache tiny((dir.path() / "tiny").string(), 16, stoke::Relayout::kProgressive,
                     kDefaultMaxPixels);
  fs::create_directories(dir.path() / "tiny");
  ASSERT_FALSE(tiny.read(source(3), got));
  Bytes b = photos[3];
  EXPECT_TRUE(tiny.offer(b));
  EXPECT_EQ(RelayoutCache::folder_bytes((dir.path() / "tiny").string()), 0u);
}

// A symbolic link (or a file with another link) at a copy's name is not a copy: it is not
// followed, and the next copy is renamed over it, leaving its target as it was.
TEST(RelayoutCache, ALinkAtACopysNameIsNeverFollowed) {
  test::TempDir dir;
  const fs::path folder = dir.path() / "relayout";
  fs::create_directories(folder);
  const fs::path source = dir.path() / "photo.jpg";
  const Bytes photo = progressive_photo(4);
  write_bytes(source, photo);
  RelayoutCache cache(folder.string(), std::uint64_t{1} << 30, stoke::Relayout::kProgressive,
                      kDefaultMaxPixels);
  Bytes got;
  ASSERT_FALSE(cache.read(source.string(), got));
  Bytes b = photo;
  ASSERT_TRUE(cache.offer(b));
  fs::path copy;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.path().extension() == ".jpg") copy = e.path();
  ASSERT_FALSE(copy.empty());
  const fs::path target = dir.path() / "secret.jpg";
  write_bytes(target, b);
  fs::remove(copy);
  fs::create_symlink(target, copy);
  EXPECT_FALSE(cache.read(source.string(), got));
  Bytes again = photo;
  EXPECT_TRUE(cache.offer(again));
  EXPECT_FALSE(fs::is_symlink(copy));
  EXPECT_EQ(bytes_of(target), b);
  EXPECT_TRUE(cache.read(source.string(), got));
  // A second name for the copy (a hard link) makes it no copy either.
  fs::create_hard_link(copy, dir.path() / "other-name.jpg");
  EXPECT_FALSE(cache.read(source.string(), got));
}

}  // namespace
}  // namespace stoke::detail
