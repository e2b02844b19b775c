// Dataset sources: image-folder trees, list files, IDX (plain and gzip), and bad files in them.
#include <gtest/gtest.h>
#include <zlib.h>

#include <atomic>
#include <fstream>
#include <opencv2/imgcodecs.hpp>

#include "data/dataset_index.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// Writes a w x h RGB PNG whose pixels encode `tag`, so tests can tell images apart.
void write_png(const fs::path& p, int tag, int w = 40, int h = 30) {
  fs::create_directories(p.parent_path());
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(tag % 256, (x * 7) % 256, (y * 5) % 256);
  ASSERT_TRUE(cv::imwrite(p.string(), m));
}

Options tree_options(const std::string& data, int workers) {
  Options o;
  o.data = data;
  o.batch = 4;
  o.workers = workers;
  o.shuffle = false;
  o.height = 16;
  o.width = 16;
  o.augment = Augment::kEvaluation;
  o.log = [](std::string_view) {};
  return o;
}

// An image tree's index is every class in sorted order, each with its images (nested folders
// included) in sorted order, and its empty files left out in that order, the same on every run.
TEST(Dataset, AnImageTreeIsIndexedInSortedOrderWithItsEmptyFilesLeftOut) {
  TempDir dir;
  std::vector<std::pair<std::string, int>> want;
  std::vector<std::string> empty;
  for (int c = 0; c < 40; ++c) {
    const std::string name = "class" + std::to_string(c);  // "class10" sorts before "class2"
    for (int i = 0; i < 3 + c % 4; ++i) {
      const fs::path f =
          dir.path() / name / (c % 3 == 0 ? "sub" : "") / ("img" + std::to_string(i) + ".png");
      fs::create_directories(f.parent_path());
      std::ofstream(f) << "x";
    }
    if (c % 5 == 0) std::ofstream(dir.path() / name / "zero.png");  // empty: left out
    std::ofstream(dir.path() / name / "notes.txt") << "not an image";
  }
  std::vector<std::string> classes;
  for (int c = 0; c < 40; ++c) classes.push_back("class" + std::to_string(c));
  std::sort(classes.begin(), classes.end());
  for (std::size_t label = 0; label < classes.size(); ++label) {
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir.path() / classes[label]))
      if (e.path().extension() == ".png") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      if (fs::file_size(f) == 0)
        empty.push_back(f);
      else
        want.push_back({f, static_cast<int>(label)});
    }
  }
  for (int run = 0; run < 3; ++run) {
    const detail::DatasetIndex index = detail::build_index(dir.str());
    ASSERT_EQ(index.class_names, classes);
    ASSERT_EQ(index.entries.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      const detail::FileEntry& e = index.entries[i];
      EXPECT_EQ(index.paths.substr(e.path_offset, e.path_length), want[i].first) << i;
      EXPECT_EQ(e.label, want[i].second) << i;
    }
    ASSERT_EQ(index.rejected.size(), empty.size());
    for (std::size_t i = 0; i < empty.size(); ++i) EXPECT_EQ(index.rejected[i].path, empty[i]);
  }
}

TEST(Dataset, ImageTreeClassIdsFollowSortedFolderNames) {
  TempDir dir;
  write_png(dir.path() / "zebra" / "a.png", 1);
  write_png(dir.path() / "apple" / "b.png", 2);
  write_png(dir.path() / "apple" / "a.png", 3);
  write_png(dir.path() / "mango" / "x.png", 4);
  std::ofstream(dir.path() / "apple" / "README.txt") << "not an image\n";
  Loader loader(tree_options(dir.str(), 0));
  EXPECT_EQ(loader.dataset_size(), 4);
  auto b = loader.next();
  ASSERT_TRUE(b);
  // Sorted: apple/a, apple/b, mango/x, zebra/a.
  EXPECT_EQ(std::vector<std::int32_t>(b->labels().begin(), b->labels().end()),
            (std::vector<std::int32_t>{0, 0, 1, 2}));
  EXPECT_EQ(b->channels(), 3);
  // Red channel (RGB order) carries the tag: apple/a was written with tag 3, BGR blue=tag.
  EXPECT_EQ(b->pixels()[2], 3);
}

TEST(Dataset, ListFilePathsAreRelativeToTheList) {
  TempDir dir;
  write_png(dir.path() / "imgs" / "one.png", 10);
  write_png(dir.path() / "imgs" / "two.png", 20);
  std::ofstream(dir.path() / "train.txt") << "# comment\nimgs/two.png\t5\nimgs/one.png\t3\n";
  Options o = tree_options((dir.path() / "train.txt").string(), 0);
  o.batch = 2;
  Loader loader(o);
  auto b = loader.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->labels()[0], 5);
  EXPECT_EQ(b->labels()[1], 3);
  EXPECT_EQ(b->pixels()[2], 20);
}

TEST(Dataset, MalformedListLineIsNamedWithItsLineNumber) {
  TempDir dir;
  const auto list = dir.path() / "bad.txt";
  std::ofstream(list) << "a.png\t1\nb.png 2\n";
  try {
    Loader loader(tree_options(list.string(), 0));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              list.string() +
                  ":2: expected 'path<TAB>label' with a non-negative integer label, "
                  "got 'b.png 2'");
  }
}

TEST(Dataset, PlainAndGzipIdxGiveIdenticalBatches) {
  TempDir dir;
  for (const char* name : {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    gzFile in =
        gzopen((std::string(tools::kDefaultFashionMnistDir) + "/" + name + ".gz").c_str(), "rb");
    ASSERT_NE(in, nullptr);
    std::ofstream out(dir.path() / name, std::ios::binary);
    char buf[65536];
    int n;
    while ((n = gzread(in, buf, sizeof buf)) > 0) out.write(buf, n);
    gzclose(in);
  }
  Options gz = test::fashion_options(0);
  Options plain = gz;
  plain.data = dir.str();
  Loader a(gz), b(plain);
  EXPECT_EQ(test::collect(a, 5), test::collect(b, 5));
}

TEST(Dataset, IdxLabelsAndPixelsMatchTheFiles) {
  const IdxImages idx = read_idx(tools::kDefaultFashionMnistDir, Split::kTest);
  ASSERT_EQ(idx.count, 10000);
  Options o = test::fashion_options(0);
  o.augment = Augment::kEvaluation;  // identity at 28x28
  o.shuffle = false;
  Loader loader(o);
  const test::Delivered d = test::collect(loader, 3);
  ASSERT_EQ(d.labels.size(), 300u);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(d.labels[i], idx.labels[i]);
  EXPECT_TRUE(std::equal(d.pixels.begin(), d.pixels.end(), idx.pixels.begin()));
}

TEST(Dataset, BadFilesAreReplacedCountedAndLoggedUnderSkip) {
  TempDir dir;
  for (int i = 0; i < 6; ++i) write_png(dir.path() / "c" / ("img" + std::to_string(i) + ".png"), i);
  std::ofstream(dir.path() / "c" / "img2.png", std::ios::trunc) << "this is not a png";
  std::ofstream(dir.path() / "c" / "img9.png");  // empty: rejected while indexing
  std::vector<std::string> lines;
  Options o = tree_options(dir.str(), 2);
  o.batch = 6;
  o.log = [&](std::string_view l) { lines.emplace_back(l); };
  Loader loader(o);
  EXPECT_EQ(loader.dataset_size(), 6);
  auto b = loader.next();
  ASSERT_TRUE(b);
  // img2 is replaced by its neighbour img3 (sample 3), deterministically.
  EXPECT_EQ(b->sample_ids()[2], 3);
  EXPECT_EQ(b->pixels()[2 * 16 * 16 * 3 + 2], 3);
  b.reset();
  const Stats s = loader.stats();
  EXPECT_EQ(s.skipped, 2);
  EXPECT_EQ(s.skipped_by_reason.at("undecodable"), 1);
  EXPECT_EQ(s.skipped_by_reason.at("empty"), 1);
  const std::string bad = (dir.path() / "c" / "img2.png").string();
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.find(bad) != std::string::npos && l.find("undecodable") != std::string::npos;
  }));
}

TEST(Dataset, BadFileStopsWithItsPathUnderError) {
  TempDir dir;
  for (int i = 0; i < 4; ++i) write_png(dir.path() / "c" / ("img" + std::to_string(i) + ".png"), i);
  fs::remove(dir.path() / "c" / "img1.png");
  std::ofstream list(dir.path() / "list.txt");
  for (int i = 0; i < 4; ++i) list << "c/img" << i << ".png\t0\n";
  list.close();
  Options o = tree_options((dir.path() / "list.txt").string(), 1);
  o.on_error = OnError::kError;
  Loader loader(o);
  try {
    loader.next();
    FAIL() << "a missing file did not stop the loader";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir.path() / "c" / "img1.png").string() + " (sample 1): missing");
  }
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

TEST(Dataset, EmptyFileFoundWhileIndexingStopsConstructionUnderError) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "c");
  cv::Mat m(8, 8, CV_8UC3, cv::Scalar(1, 2, 3));
  ASSERT_TRUE(cv::imwrite((dir.path() / "c" / "a.png").string(), m));
  std::ofstream(dir.path() / "c" / "b.png");
  Options o;
  o.data = dir.str();
  o.batch = 1;
  o.workers = 0;
  o.on_error = OnError::kError;
  try {
    Loader loader(o);
    FAIL() << "an empty file was skipped under OnError::kError";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir.path() / "c" / "b.png").string() + ": empty (found while indexing)");
  }
}

TEST(Dataset, LogCallbackMayCallBackIntoTheLoader) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "c");
  for (int i = 0; i < 8; ++i) {
    cv::Mat m(8, 8, CV_8UC3, cv::Scalar(i, i, i));
    ASSERT_TRUE(cv::imwrite((dir.path() / "c" / ("img" + std::to_string(i) + ".png")).string(), m));
  }
  // In batch 1, which the single slot can only hold once batch 0 is released: after `self` is set.
  std::ofstream(dir.path() / "c" / "img5.png", std::ios::trunc) << "broken";
  std::atomic<Loader*> self{nullptr};
  std::atomic<std::int64_t> seen_batches{-1};
  Options o;
  o.data = dir.str();
  o.batch = 4;
  o.shuffle = false;
  o.prefetch = 1;
  o.workers = 2;
  o.height = o.width = 8;
  o.log = [&](std::string_view) {
    // Runs on the supervisor thread; stats() takes the loader's lock, so the line must not be
    // emitted while that lock is held.
    if (Loader* l = self.load()) seen_batches = l->stats().batches;
  };
  Loader loader(o);
  self = &loader;
  while (auto b = loader.next()) {
  }
  // The skip is logged while batch 1 is made, after batch 0 was delivered: the callback's
  // stats() ran (it did not deadlock) and saw 1 batch, or 2 if the line was flushed after
  // batch 1 was delivered too. -1 would mean it never ran with the loader set.
  EXPECT_GE(seen_batches, 1);
  EXPECT_LE(seen_batches, 2);
  EXPECT_EQ(loader.stats().skipped, 1);
}

}  // namespace
}  // namespace stoke
