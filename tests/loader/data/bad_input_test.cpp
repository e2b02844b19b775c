// Bad input end to end: real broken files in image-folder trees and list files, loaded under
// OnError::kSkip (replaced, counted, logged once) and OnError::kError (DataError naming the path,
// the sample and the reason), in-process and with worker processes; and awkward but valid files
// that must decode.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "libjpeg_writer.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using test::TempDir;

constexpr int kSide = 16;  // output height and width
constexpr std::size_t kSampleBytes = kSide * kSide * 3;
constexpr std::int64_t kNone = -1;  // index of a file rejected while indexing: it has none

// ---- files ---------------------------------------------------------------------------------

void write_bytes(const fs::path& p, const Bytes& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

void write_text(const fs::path& p, const std::string& text) {
  write_bytes(p, Bytes(text.begin(), text.end()));
}

// A small RGB PNG whose pixels encode `tag`; 8x8 stays under a max_pixels of 100.
void write_tagged_png(const fs::path& p, int tag, int w = 8, int h = 8) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      m.at<cv::Vec3b>(y, x) =
          cv::Vec3b(static_cast<std::uint8_t>(tag * 40 + 10), static_cast<std::uint8_t>(x * 30),
                    static_cast<std::uint8_t>(y * 30));
  fs::create_directories(p.parent_path());
  ASSERT_TRUE(cv::imwrite(p.string(), m)) << p;
}

Bytes encode(const cv::Mat& m, const std::string& ext, const std::vector<int>& params = {}) {
  std::vector<uchar> out;
  EXPECT_TRUE(cv::imencode(ext, m, out, params));
  return Bytes(out.begin(), out.end());
}

// Noise compresses badly, so the scan data is most of the file.
cv::Mat textured(int w = 64, int h = 48, int type = CV_8UC3) {
  cv::Mat m(h, w, type);
  cv::RNG rng(12345);
  rng.fill(m, cv::RNG::UNIFORM, 0, 256);
  return m;
}

Bytes textured_jpeg() {
  return encode(textured(), ".jpg", {cv::IMWRITE_JPEG_QUALITY, 90});
}

Bytes random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  Bytes b(n);
  for (auto& v : b) v = static_cast<std::uint8_t>(gen());
  return b;
}

constexpr std::size_t kNoSegment = static_cast<std::size_t>(-1);

// Offset of the first header segment with marker FF `code`, walking segment lengths up to and
// including the start of scan (FF DA).
std::size_t jpeg_segment(const Bytes& j, std::uint8_t code) {
  std::size_t i = 2;
  while (i + 4 <= j.size() && j[i] == 0xFF) {
    if (j[i + 1] == code) return i;
    if (j[i + 1] == 0xDA) break;
    i += 2 + (std::size_t{j[i + 2]} << 8 | j[i + 3]);
  }
  return kNoSegment;
}

// First byte of entropy-coded data: just past the SOS segment.
std::size_t scan_start(const Bytes& j) {
  const std::size_t sos = jpeg_segment(j, 0xDA);
  EXPECT_NE(sos, kNoSegment);
  return sos + 2 + (std::size_t{j[sos + 2]} << 8 | j[sos + 3]);
}

void put_be16(std::uint8_t* p, unsigned v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

Bytes jpeg_claiming(unsigned width, unsigned height) {
  Bytes j = textured_jpeg();
  const std::size_t sof = jpeg_segment(j, 0xC0);
  EXPECT_NE(sof, kNoSegment);
  put_be16(&j[sof + 5], height);  // FF C0, length(2), precision(1), height(2), width(2)
  put_be16(&j[sof + 7], width);
  return j;
}

// A uniform CMYK JPEG (Adobe marker, no colour transform), written with libjpeg directly.
Bytes cmyk_jpeg(int w, int h, std::array<std::uint8_t, 4> cmyk) {
  const cv::Mat inks(h, w, CV_8UC4, cv::Scalar(cmyk[0], cmyk[1], cmyk[2], cmyk[3]));
  return test::libjpeg_compress(inks, [](jpeg_compress_struct& c) {
    jpeg_set_colorspace(&c, JCS_CMYK);
    jpeg_set_quality(&c, 95, TRUE);
  });
}

// ---- running loaders -----------------------------------------------------------------------

// Log lines may arrive on the consumer or the supervisor thread.
class LogSink {
 public:
  void add(std::string_view line) {
    std::lock_guard lock(mutex_);
    lines_.emplace_back(line);
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

Options small_options(const std::string& data, int batch, int workers, OnError on_error) {
  Options o;
  o.data = data;
  o.batch = batch;
  o.workers = workers;
  o.on_error = on_error;
  o.shuffle = false;
  o.height = kSide;
  o.width = kSide;
  o.augment = Augment::kEvaluation;
  // Every damage below is to be found wherever it lies (Verify::kRegion has its own test).
  o.verify = Verify::kWholeFile;
  o.log = [](std::string_view) {};
  return o;
}

struct Epochs {
  test::Delivered delivered;
  Stats stats;
  std::vector<std::string> log;
  double seconds = 0;  // construction through the end of the last epoch
};

// Runs `epochs` whole epochs. Uses no gtest assertions: the privilege-dropping child runs it too.
Epochs run_epochs(Options o, int epochs = 1) {
  auto sink = std::make_shared<LogSink>();
  o.log = [sink](std::string_view line) { sink->add(line); };
  Epochs run;
  const auto start = std::chrono::steady_clock::now();
  {
    Loader loader(o);
    for (int e = 0; e < epochs; ++e) {
      const test::Delivered d = test::collect(loader);
      auto& all = run.delivered;
      all.pixels.insert(all.pixels.end(), d.pixels.begin(), d.pixels.end());
      all.labels.insert(all.labels.end(), d.labels.begin(), d.labels.end());
      all.ids.insert(all.ids.end(), d.ids.begin(), d.ids.end());
      all.valid.insert(all.valid.end(), d.valid.begin(), d.valid.end());
      all.indices.insert(all.indices.end(), d.indices.begin(), d.indices.end());
      all.padded += d.padded;
    }
    run.stats = loader.stats();
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.log = sink->lines();
  return run;
}

int lines_naming(const std::vector<std::string>& log, const std::string& path) {
  // The path followed by a space: ".../img1.png" must not count ".../img1.png.bak" lines.
  return static_cast<int>(std::count_if(log.begin(), log.end(), [&](const std::string& l) {
    return l.find(path + " ") != std::string::npos;
  }));
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "\n  " + l;
  return out;
}

std::span<const std::uint8_t> sample_pixels(const test::Delivered& d, std::int64_t position) {
  return std::span<const std::uint8_t>(d.pixels).subspan(
      static_cast<std::size_t>(position) * kSampleBytes, kSampleBytes);
}

struct BadFile {
  std::string path;    // absolute, as the loader names it
  std::int64_t index;  // dataset index, or kNone when rejected while indexing
  std::string reason;
};

// The sample kSkip puts at `index`: the next one (cyclically) that is not bad.
std::int64_t replacement(std::int64_t index, std::int64_t n, const std::vector<BadFile>& bad) {
  const auto is_bad = [&](std::int64_t i) {
    return std::any_of(bad.begin(), bad.end(), [&](const BadFile& b) { return b.index == i; });
  };
  std::int64_t j = index;
  while (is_bad(j)) j = (j + 1) % n;
  return j;
}

// Loads `data` (n samples, one batch) under kSkip with 0 and 2 workers: every bad sample is
// replaced by the next good one, counted by reason, its path logged exactly once; both runs
// deliver identical bytes.
void expect_skipped(const Options& base, std::int64_t n, const std::vector<BadFile>& bad) {
  std::map<std::string, std::int64_t> reasons;
  for (const BadFile& b : bad) reasons[b.reason] += 1;
  std::vector<test::Delivered> delivered;
  for (int workers : {0, 2}) {
    SCOPED_TRACE("kSkip, workers=" + std::to_string(workers));
    Options o = base;
    o.batch = static_cast<int>(n);
    o.workers = workers;
    o.on_error = OnError::kSkip;
    const Epochs run = run_epochs(o);
    const test::Delivered& d = run.delivered;
    ASSERT_EQ(d.indices.size(), 1u);
    ASSERT_EQ(d.ids.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(d.padded, 0);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t want = replacement(i, n, bad);
      EXPECT_EQ(d.ids[i], want) << "position " << i;
      EXPECT_EQ(d.labels[i], d.labels[want]) << "position " << i;
      EXPECT_TRUE(std::ranges::equal(sample_pixels(d, i), sample_pixels(d, want)))
          << "position " << i << " does not hold sample " << want << "'s pixels";
    }
    EXPECT_EQ(run.stats.skipped, static_cast<std::int64_t>(bad.size()));
    EXPECT_EQ(run.stats.skipped_by_reason, reasons);
    // Logged at delivery: once per epoch, with workers or without.
    EXPECT_EQ(run.log.size(), bad.size()) << join(run.log);
    for (const BadFile& b : bad) {
      EXPECT_EQ(lines_naming(run.log, b.path), 1) << b.path << join(run.log);
      EXPECT_TRUE(std::any_of(run.log.begin(), run.log.end(),
                              [&](const std::string& l) {
                                return l.find(b.path + " ") != std::string::npos &&
                                       l.find(b.reason) != std::string::npos;
                              }))
          << b.path << " is not logged with '" << b.reason << "'" << join(run.log);
    }
    delivered.push_back(d);
  }
  if (delivered.size() == 2) {
    EXPECT_TRUE(delivered[0] == delivered[1]) << "0 and 2 workers delivered different bytes";
  }
}

// Loads `data` under kError with 0 and 2 workers: next() throws exactly `message`.
void expect_data_error(const Options& base, int batch, const std::string& message) {
  for (int workers : {0, 2}) {
    SCOPED_TRACE("kError, workers=" + std::to_string(workers));
    Options o = base;
    o.batch = batch;
    o.workers = workers;
    o.on_error = OnError::kError;
    Loader loader(o);
    try {
      test::collect(loader);
      ADD_FAILURE() << "no DataError; expected '" << message << "'";
    } catch (const DataError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

std::string error_message(const BadFile& b) {
  return b.path + " (sample " + std::to_string(b.index) + "): " + b.reason;
}

// Both policies for one bad file at b.index among n samples.
void expect_bad_input(const Options& base, std::int64_t n, const BadFile& b) {
  {
    SCOPED_TRACE(b.path);
    expect_skipped(base, n, {b});
  }
  expect_data_error(base, static_cast<int>(n), error_message(b));
}

// Good files c/img0.png .. c/img3.png; a file named c/img1b.<ext> sorts between img1 and img2,
// so it is sample 2 of 5.
void write_good_tree(const fs::path& root) {
  for (int i = 0; i < 4; ++i)
    write_tagged_png(root / "c" / ("img" + std::to_string(i) + ".png"), i);
}

fs::path tree_slot(const fs::path& root, const std::string& ext) {
  return root / "c" / ("img1b" + ext);
}

// A list naming imgs/img0..3.png with `bad` (relative to the list) as its third line: sample 2
// of 5. Labels are line numbers from 0, so a replaced sample's label names its substitute.
std::string write_list(const fs::path& root, const std::string& bad) {
  for (int i = 0; i < 4; ++i)
    write_tagged_png(root / "imgs" / ("img" + std::to_string(i) + ".png"), i);
  const fs::path list = root / "list.txt";
  std::ofstream out(list);
  out << "imgs/img0.png\t0\nimgs/img1.png\t1\n"
      << bad << "\t2\nimgs/img2.png\t3\nimgs/img3.png\t4\n";
  return list.string();
}

// A tree holding one bad file with these bytes at sample 2 of 5; both policies.
void expect_bad_tree_file(const std::string& ext, const Bytes& bytes, const std::string& reason,
                          const std::function<void(Options&)>& tweak = {}) {
  TempDir dir;
  write_good_tree(dir.path());
  const fs::path bad = tree_slot(dir.path(), ext);
  write_bytes(bad, bytes);
  Options o = small_options(dir.str(), 5, 0, OnError::kSkip);
  if (tweak) tweak(o);
  expect_bad_input(o, 5, BadFile{bad.string(), 2, reason});
}

// ---- missing, unreadable, not a file, empty --------------------------------------------------

TEST(BadInput, ListFileNamingAMissingPathIsMissing) {
  TempDir dir;
  const std::string list = write_list(dir.path(), "imgs/not-there.png");
  expect_bad_input(small_options(list, 5, 0, OnError::kSkip), 5,
                   BadFile{(dir.path() / "imgs" / "not-there.png").string(), 2, "missing"});
}

TEST(BadInput, DanglingSymlinkInATreeIsMissing) {
  TempDir dir;
  write_good_tree(dir.path());
  const fs::path link = tree_slot(dir.path(), ".jpg");
  fs::create_symlink(dir.path() / "nowhere.jpg", link);
  expect_bad_input(small_options(dir.str(), 5, 0, OnError::kSkip), 5,
                   BadFile{link.string(), 2, "missing"});
}

TEST(BadInput, DanglingSymlinkInAListIsMissing) {
  TempDir dir;
  const std::string list = write_list(dir.path(), "imgs/link.png");
  fs::create_symlink(dir.path() / "imgs" / "gone.png", dir.path() / "imgs" / "link.png");
  expect_bad_input(small_options(list, 5, 0, OnError::kSkip), 5,
                   BadFile{(dir.path() / "imgs" / "link.png").string(), 2, "missing"});
}

// FNV-1a: lets the unprivileged child report the delivered pixels in one line.
std::uint64_t fnv1a(const std::vector<std::uint8_t>& bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

// Runs in the forked child: drops root (which reads everything) and loads under both policies
// with 0 and 2 workers. Reports "key value" lines; never returns.
[[noreturn]] void unprivileged_child(int fd, const std::string& data, const std::string& bad) {
  ::alarm(120);  // a hang here must not hang the suite
  std::ostringstream out;
  if (::geteuid() == 0 &&
      (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) {
    out << "drop_failed " << std::strerror(errno) << "\n";
  }
  out << "uid " << ::geteuid() << "\n";
  for (int workers : {0, 2}) {
    const std::string w = workers == 0 ? "w0." : "w2.";
    try {
      Options o = small_options(data, 5, workers, OnError::kSkip);
      const Epochs run = run_epochs(o);
      out << w << "ids";
      for (auto id : run.delivered.ids) out << " " << id;
      out << "\n" << w << "skipped " << run.stats.skipped << "\n" << w << "reasons";
      for (const auto& [reason, count] : run.stats.skipped_by_reason)
        out << " " << reason << ":" << count;
      out << "\n" << w << "logged " << lines_naming(run.log, bad) << "\n";
      out << w << "log_lines " << run.log.size() << "\n";
      out << w << "pixels " << fnv1a(run.delivered.pixels) << "\n";
    } catch (const std::exception& e) {
      out << w << "skip_exception " << e.what() << "\n";
    }
    try {
      Loader loader(small_options(data, 5, workers, OnError::kError));
      test::collect(loader);
      out << w << "error none\n";
    } catch (const DataError& e) {
      out << w << "error " << e.what() << "\n";
    } catch (const std::exception& e) {
      out << w << "error_exception " << e.what() << "\n";
    }
  }
  const std::string text = out.str();
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::_exit(0);
}

TEST(BadInput, PermissionDeniedIsUnreadableForAnUnprivilegedUser) {
  TempDir dir;
  write_good_tree(dir.path());
  const fs::path bad = tree_slot(dir.path(), ".png");
  write_tagged_png(bad, 9);
  // The unprivileged child must reach everything but the one locked file.
  ASSERT_EQ(::chmod(dir.str().c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir.path() / "c").c_str(), 0755), 0);
  for (const auto& e : fs::directory_iterator(dir.path() / "c"))
    ASSERT_EQ(::chmod(e.path().c_str(), 0644), 0);
  ASSERT_EQ(::chmod(bad.c_str(), 0000), 0);

  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    unprivileged_child(fds[1], dir.str(), bad.string());
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child status " << status << ", reported:\n"
      << text;

  std::map<std::string, std::string> got;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto space = line.find(' ');
    got[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  SCOPED_TRACE("child reported:\n" + text);
  ASSERT_EQ(got.count("drop_failed"), 0u);
  ASSERT_NE(got["uid"], "0") << "still root: the file would be readable";
  const std::string error = bad.string() + " (sample 2): unreadable";
  for (const char* w : {"w0.", "w2."}) {
    SCOPED_TRACE(w);
    const std::string k(w);
    EXPECT_EQ(got.count(k + "skip_exception"), 0u);
    EXPECT_EQ(got[k + "ids"], "0 1 3 3 4");
    EXPECT_EQ(got[k + "skipped"], "1");
    EXPECT_EQ(got[k + "reasons"], "unreadable:1");
    EXPECT_EQ(got[k + "logged"], "1");
    EXPECT_EQ(got[k + "log_lines"], "1");
    EXPECT_EQ(got[k + "error"], error);
  }
  EXPECT_EQ(got["w0.pixels"], got["w2.pixels"]) << "0 and 2 workers delivered different bytes";
}

TEST(BadInput, ListFileNamingADirectoryIsNotAFile) {
  TempDir dir;
  const std::string list = write_list(dir.path(), "imgs/sub.jpg");
  fs::create_directories(dir.path() / "imgs" / "sub.jpg");
  expect_bad_input(small_options(list, 5, 0, OnError::kSkip), 5,
                   BadFile{(dir.path() / "imgs" / "sub.jpg").string(), 2, "not_a_file"});
}

// In a tree, folders below a class folder are walked for more images of that class, whatever
// their name: a directory named x.jpg is a folder, not a broken sample.
TEST(BadInput, DirectoryNamedLikeAnImageInATreeIsWalkedNotLoaded) {
  TempDir dir;
  write_good_tree(dir.path());
  fs::create_directories(tree_slot(dir.path(), ".jpg"));
  for (OnError policy : {OnError::kSkip, OnError::kError}) {
    for (int workers : {0, 2}) {
      SCOPED_TRACE("workers=" + std::to_string(workers));
      const Epochs run = run_epochs(small_options(dir.str(), 4, workers, policy));
      EXPECT_EQ(run.delivered.ids, (std::vector<std::int64_t>{0, 1, 2, 3}));
      EXPECT_EQ(run.stats.skipped, 0);
      EXPECT_TRUE(run.log.empty()) << join(run.log);
    }
  }
}

TEST(BadInput, ZeroByteFileInATreeIsRejectedWhileIndexing) {
  TempDir dir;
  write_good_tree(dir.path());
  const fs::path bad = tree_slot(dir.path(), ".png");
  write_bytes(bad, {});
  // kSkip: the file is not a sample at all; the 4 good ones fill the batch, nothing replaced.
  expect_skipped(small_options(dir.str(), 4, 0, OnError::kSkip), 4,
                 {BadFile{bad.string(), kNone, "empty"}});
  for (int workers : {0, 2}) {
    SCOPED_TRACE("workers=" + std::to_string(workers));
    const Epochs run = run_epochs(small_options(dir.str(), 4, workers, OnError::kSkip));
    ASSERT_EQ(run.log.size(), 1u);
    EXPECT_NE(run.log[0].find("while indexing"), std::string::npos) << run.log[0];
    try {
      Loader loader(small_options(dir.str(), 4, workers, OnError::kError));
      ADD_FAILURE() << "an empty file was accepted under kError";
    } catch (const DataError& e) {
      EXPECT_EQ(std::string(e.what()), bad.string() + ": empty (found while indexing)");
    }
  }
}

TEST(BadInput, ZeroByteFileInAListIsEmptyAtReadTime) {
  TempDir dir;
  const std::string list = write_list(dir.path(), "imgs/zero.png");
  write_bytes(dir.path() / "imgs" / "zero.png", {});
  expect_bad_input(small_options(list, 5, 0, OnError::kSkip), 5,
                   BadFile{(dir.path() / "imgs" / "zero.png").string(), 2, "empty"});
}

// ---- not images ------------------------------------------------------------------------------

TEST(BadInput, RandomBytesNamedJpgAreUndecodable) {
  Bytes bytes = random_bytes(4096, 7);
  bytes[0] = 0;  // no image signature by chance
  expect_bad_tree_file(".jpg", bytes, "undecodable");
}

TEST(BadInput, TextFileNamedJpgIsUndecodable) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "this is a text file, not a JPEG\n";
  expect_bad_tree_file(".jpg", Bytes(text.begin(), text.end()), "undecodable");
}

// ---- damaged JPEGs ---------------------------------------------------------------------------

TEST(BadInput, TruncatedJpegIsCorruptAndReplacedUnderSkip) {
  Bytes j = textured_jpeg();
  const std::size_t cut = j.size() * 6 / 10;
  ASSERT_GT(cut, scan_start(j) + 100) << "the cut must fall inside the scan data";
  j.resize(cut);
  expect_bad_tree_file(".jpg", j, "corrupt");
}

TEST(BadInput, JpegMissingOnlyItsEndMarkerIsCorrupt) {
  Bytes j = textured_jpeg();
  ASSERT_GE(j.size(), 2u);
  ASSERT_EQ(j[j.size() - 2], 0xFF);
  ASSERT_EQ(j[j.size() - 1], 0xD9);
  j.resize(j.size() - 2);
  expect_bad_tree_file(".jpg", j, "corrupt");
}

TEST(BadInput, JpegWithGarbageScanDataIsCorrupt) {
  Bytes j = textured_jpeg();
  const std::size_t begin = scan_start(j);
  const Bytes garbage = random_bytes(j.size(), 99);
  std::copy(garbage.begin() + static_cast<std::ptrdiff_t>(begin), garbage.end() - 2,
            j.begin() + static_cast<std::ptrdiff_t>(begin));  // keeps FF D9
  expect_bad_tree_file(".jpg", j, "corrupt");
}

// Verify::kRegion end to end: tall JPEGs whose crop (a centre crop, then a shrink, so the fast
// path decodes only those rows) ends far above a truncated tail. Under kRegion the damaged file
// is delivered with the intact file's bytes and not counted; under kWholeFile it is corrupt.
TEST(BadInput, RegionModeDeliversAFileDamagedBelowEveryCropAndWholeFileModeSkipsIt) {
  cv::Mat m(1024, 256, CV_8UC3);
  cv::RNG rng(3);
  rng.fill(m, cv::RNG::UNIFORM, 0, 256);
  const Bytes intact = encode(m, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 90});
  Bytes damaged = intact;
  damaged.resize(damaged.size() * 9 / 10);
  TempDir good, bad;
  for (int i = 0; i < 3; ++i) {
    const std::string name = "img" + std::to_string(i) + ".jpg";
    write_bytes(good.path() / "c" / name, intact);
    write_bytes(bad.path() / "c" / name, i == 1 ? damaged : intact);
  }
  const auto options = [](const TempDir& dir, Verify verify, int workers) {
    Options o = small_options(dir.str(), 3, workers, OnError::kSkip);
    o.pipeline = Pipeline(kSide, kSide, 3).center_crop(64, 256).resize(kSide, kSide);
    o.verify = verify;
    return o;
  };
  for (int workers : {0, 2}) {
    SCOPED_TRACE("workers=" + std::to_string(workers));
    const Epochs want = run_epochs(options(good, Verify::kRegion, workers));
    const Epochs region = run_epochs(options(bad, Verify::kRegion, workers));
    EXPECT_TRUE(region.delivered == want.delivered);
    EXPECT_EQ(region.stats.skipped, 0);
    EXPECT_TRUE(region.log.empty()) << join(region.log);
    const Epochs whole = run_epochs(options(bad, Verify::kWholeFile, workers));
    EXPECT_EQ(whole.stats.skipped_by_reason, (std::map<std::string, std::int64_t>{{"corrupt", 1}}));
    EXPECT_EQ(whole.delivered.ids, (std::vector<std::int64_t>{0, 2, 2}));
    // Whole-file mode sees the same intact files the same way: the mode changes no pixel.
    EXPECT_TRUE(run_epochs(options(good, Verify::kWholeFile, workers)).delivered == want.delivered);
  }
}

// ---- too large -------------------------------------------------------------------------------

// Rejected from the header: allocating 65535 x 65535 x 3 bytes would take seconds (or fail).
void expect_too_large_quickly(const std::string& ext, const Bytes& bytes) {
  TempDir dir;
  write_good_tree(dir.path());
  const fs::path bad = tree_slot(dir.path(), ext);
  write_bytes(bad, bytes);
  const BadFile b{bad.string(), 2, "too_large"};
  for (int workers : {0, 2}) {
    SCOPED_TRACE("workers=" + std::to_string(workers));
    const Epochs run = run_epochs(small_options(dir.str(), 5, workers, OnError::kSkip));
    EXPECT_LT(run.seconds, 5.0);
    EXPECT_EQ(run.stats.skipped_by_reason, (std::map<std::string, std::int64_t>{{"too_large", 1}}));
  }
  expect_bad_input(small_options(dir.str(), 5, 0, OnError::kSkip), 5, b);
}

TEST(BadInput, JpegHeaderClaiming60000x60000IsTooLarge) {
  expect_too_large_quickly(".jpg", jpeg_claiming(60000, 60000));
}

TEST(BadInput, JpegHeaderClaiming65535x65535IsTooLarge) {
  // libjpeg itself refuses sides above 65500 inside jpeg_read_header; that is still too_large.
  expect_too_large_quickly(".jpg", jpeg_claiming(65535, 65535));
}

TEST(BadInput, PngHeaderClaiming65535x65535IsTooLarge) {
  Bytes png = encode(textured(), ".png");
  ASSERT_GE(png.size(), 24u);
  ASSERT_EQ(std::memcmp(&png[12], "IHDR", 4), 0);
  for (int off : {16, 20}) {  // width, height (big-endian 32-bit); the CRC is now wrong
    png[off] = 0;
    png[off + 1] = 0;
    png[off + 2] = 0xFF;
    png[off + 3] = 0xFF;
  }
  expect_too_large_quickly(".png", png);
}

TEST(BadInput, ImageAboveASmallMaxPixelsIsTooLarge) {
  // Good files are 8x8 (64 pixels); a normal 40x30 image (1,200) is over a limit of 100.
  const auto limit = [](Options& o) { o.max_pixels = 100; };
  {
    SCOPED_TRACE("png");
    cv::Mat m(30, 40, CV_8UC3, cv::Scalar(1, 2, 3));
    expect_bad_tree_file(".png", encode(m, ".png"), "too_large", limit);
  }
  {
    SCOPED_TRACE("jpeg");
    expect_bad_tree_file(".jpg", encode(textured(40, 30), ".jpg"), "too_large", limit);
  }
}

// ---- accounting and logging --------------------------------------------------------------------

// Several kinds of bad file at once, two of them adjacent.
struct MixedTree {
  TempDir dir;
  std::vector<BadFile> bad;  // index-rejected ones first
  std::int64_t samples = 0;  // indexed samples

  MixedTree() {
    const fs::path c = dir.path() / "c";
    for (int i = 0; i < 6; ++i) write_tagged_png(c / ("img" + std::to_string(i) + ".png"), i);
    write_bytes(c / "img0z.png", {});                                 // not indexed
    fs::create_symlink(dir.path() / "nowhere.png", c / "img1a.png");  // sample 2
    write_text(c / "img1b.jpg", "not a jpeg");                        // sample 3
    Bytes j = textured_jpeg();
    j.resize(j.size() * 6 / 10);
    write_bytes(c / "img4a.jpg", j);  // sample 7
    bad = {{(c / "img0z.png").string(), kNone, "empty"},
           {(c / "img1a.png").string(), 2, "missing"},
           {(c / "img1b.jpg").string(), 3, "undecodable"},
           {(c / "img4a.jpg").string(), 7, "corrupt"}};
    samples = 9;
  }
};

TEST(BadInput, StatsCountEveryBadFileOnceLikeStokeBench) {
  MixedTree t;
  expect_skipped(small_options(t.dir.str(), 9, 0, OnError::kSkip), t.samples, t.bad);
  for (int workers : {0, 2}) {
    SCOPED_TRACE("workers=" + std::to_string(workers));
    const Epochs run = run_epochs(small_options(t.dir.str(), 9, workers, OnError::kSkip));
    // stoke-bench prints skipped and skipped_by_reason: the total must be the bad files.
    std::int64_t sum = 0;
    for (const auto& [reason, n] : run.stats.skipped_by_reason) sum += n;
    EXPECT_EQ(run.stats.skipped, static_cast<std::int64_t>(t.bad.size()));
    EXPECT_EQ(sum, run.stats.skipped);
    EXPECT_EQ(run.stats.samples, t.samples);
    EXPECT_EQ(run.stats.padded, 0);
  }
}

// Two epochs: a path found bad at read time is logged twice, one rejected while indexing once.
void expect_logged_once_per_epoch(int workers) {
  MixedTree t;
  auto sink = std::make_shared<LogSink>();
  Options o = small_options(t.dir.str(), 9, workers, OnError::kSkip);
  o.log = [sink](std::string_view line) { sink->add(line); };
  Loader loader(o);
  // Give workers time to prepare what they will ahead: only delivered batches may be logged.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int epoch = 1; epoch <= 2; ++epoch) {
    SCOPED_TRACE("after epoch " + std::to_string(epoch));
    EXPECT_EQ(test::collect(loader).indices.size(), 1u);
    const auto log = sink->lines();
    for (const BadFile& b : t.bad)
      EXPECT_EQ(lines_naming(log, b.path), b.index == kNone ? 1 : epoch) << b.path << join(log);
    const auto read_time_bad = static_cast<std::int64_t>(t.bad.size() - 1);
    EXPECT_EQ(static_cast<std::int64_t>(log.size()), 1 + epoch * read_time_bad) << join(log);
    EXPECT_EQ(loader.stats().skipped, 1 + epoch * read_time_bad);
  }
}

TEST(BadInput, EachBadPathIsLoggedOncePerEpochUnderSkip) {
  expect_logged_once_per_epoch(0);
}

TEST(BadInput, EachBadPathIsLoggedOncePerEpochUnderSkipWithWorkers) {
  expect_logged_once_per_epoch(2);
}

// 12 bad files among 16; with workers = 0 the whole batch is one chunk.
TEST(BadInput, ManyBadFilesInOneChunkAreEachLogged) {
  // Every replaced file is named, however many bad files one chunk holds.
  TempDir dir;
  std::vector<BadFile> bad;
  const fs::path c = dir.path() / "c";
  for (int i = 0; i < 16; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "img%02d.png", i);
    if (i % 4 == 0) {
      write_tagged_png(c / name, i / 4);
    } else {
      write_text(c / name, "broken");
      bad.push_back({(c / name).string(), i, "undecodable"});
    }
  }
  expect_skipped(small_options(dir.str(), 16, 0, OnError::kSkip), 16, bad);
}

// ---- good inputs -------------------------------------------------------------------------------

// Loads a tree of good files (one batch) under both policies with 0 and 2 workers: nothing
// skipped or logged, identical bytes; returns the in-process delivery.
test::Delivered expect_all_good(const std::string& data, int n) {
  test::Delivered first;
  for (OnError policy : {OnError::kSkip, OnError::kError}) {
    for (int workers : {0, 2}) {
      SCOPED_TRACE("workers=" + std::to_string(workers) +
                   (policy == OnError::kSkip ? " kSkip" : " kError"));
      try {
        const Epochs run = run_epochs(small_options(data, n, workers, policy));
        EXPECT_EQ(run.stats.skipped, 0);
        EXPECT_TRUE(run.stats.skipped_by_reason.empty());
        EXPECT_TRUE(run.log.empty()) << join(run.log);
        EXPECT_EQ(run.delivered.ids.size(), static_cast<std::size_t>(n));
        if (first.ids.empty()) {
          first = run.delivered;
        } else {
          EXPECT_TRUE(run.delivered == first) << "deliveries differ";
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "threw: " << e.what();
      }
    }
  }
  return first;
}

// Max |pixel - rgb| over a sample; also whether every pixel of it is the same colour.
int max_distance(std::span<const std::uint8_t> px, std::array<int, 3> rgb) {
  int worst = 0;
  for (std::size_t i = 0; i < px.size(); ++i) worst = std::max(worst, std::abs(px[i] - rgb[i % 3]));
  return worst;
}

bool uniform(std::span<const std::uint8_t> px) {
  for (std::size_t i = 3; i < px.size(); ++i)
    if (px[i] != px[i % 3]) return false;
  return true;
}

TEST(BadInput, OnePixelJpegAndPngDecode) {
  TempDir dir;
  const fs::path c = dir.path() / "c";
  cv::Mat bgr(1, 1, CV_8UC3, cv::Scalar(50, 100, 200));  // RGB 200,100,50
  write_bytes(c / "a.jpg", encode(bgr, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 100}));
  write_bytes(c / "b.png", encode(bgr, ".png"));
  const test::Delivered d = expect_all_good(dir.str(), 2);
  ASSERT_EQ(d.pixels.size(), 2 * kSampleBytes);
  EXPECT_TRUE(uniform(sample_pixels(d, 0)));
  EXPECT_LE(max_distance(sample_pixels(d, 0), {200, 100, 50}), 8);
  EXPECT_TRUE(uniform(sample_pixels(d, 1)));
  EXPECT_EQ(max_distance(sample_pixels(d, 1), {200, 100, 50}), 0);
}

TEST(BadInput, GrayscaleJpegIsDeliveredAsEqualRgb) {
  TempDir dir;
  cv::Mat gray(32, 32, CV_8UC1);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x) gray.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>(x * 8);
  const Bytes j = encode(gray, ".jpg");
  ASSERT_EQ(j[jpeg_segment(j, 0xC0) + 9], 1) << "the JPEG should have one component";
  write_bytes(dir.path() / "c" / "gray.jpg", j);
  const test::Delivered d = expect_all_good(dir.str(), 1);
  ASSERT_EQ(d.pixels.size(), kSampleBytes);
  for (std::size_t i = 0; i < kSampleBytes; i += 3) {
    EXPECT_EQ(d.pixels[i], d.pixels[i + 1]) << "pixel " << i / 3;
    EXPECT_EQ(d.pixels[i], d.pixels[i + 2]) << "pixel " << i / 3;
  }
  // A left-to-right ramp stays one.
  EXPECT_LT(d.pixels[0] + 100, d.pixels[(kSide - 1) * 3]);
}

TEST(BadInput, CmykJpegIsConvertedToRgb) {
  TempDir dir;
  const std::array<std::uint8_t, 4> cmyk{255, 128, 64, 200};  // Adobe's inverted storage
  const Bytes j = cmyk_jpeg(24, 24, cmyk);
  ASSERT_EQ(j[jpeg_segment(j, 0xC0) + 9], 4) << "the JPEG should have four components";
  write_bytes(dir.path() / "c" / "cmyk.jpg", j);
  const test::Delivered d = expect_all_good(dir.str(), 1);
  ASSERT_EQ(d.pixels.size(), kSampleBytes);
  const int k = cmyk[3];
  const std::array<int, 3> rgb{cmyk[0] * k / 255, cmyk[1] * k / 255, cmyk[2] * k / 255};
  EXPECT_LE(max_distance(sample_pixels(d, 0), rgb), 3)
      << "first pixel " << int(d.pixels[0]) << "," << int(d.pixels[1]) << "," << int(d.pixels[2]);
}

TEST(BadInput, ProgressiveJpegDecodesLikeItsBaselineTwin) {
  TempDir dir;
  cv::Mat m(48, 64, CV_8UC3);
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 64; ++x)
      m.at<cv::Vec3b>(y, x) =
          cv::Vec3b(static_cast<std::uint8_t>(x * 4), static_cast<std::uint8_t>(y * 5), 128);
  const Bytes progressive = encode(m, ".jpg", {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  ASSERT_NE(jpeg_segment(progressive, 0xC2), kNoSegment) << "not progressive (no SOF2)";
  write_bytes(dir.path() / "c" / "a_baseline.jpg", encode(m, ".jpg"));
  write_bytes(dir.path() / "c" / "b_progressive.jpg", progressive);
  const test::Delivered d = expect_all_good(dir.str(), 2);
  ASSERT_EQ(d.pixels.size(), 2 * kSampleBytes);
  const auto base = sample_pixels(d, 0), prog = sample_pixels(d, 1);
  int worst = 0;
  for (std::size_t i = 0; i < kSampleBytes; ++i)
    worst = std::max(worst, std::abs(base[i] - prog[i]));
  EXPECT_LE(worst, 2);
}

TEST(BadInput, PngWithAlphaIsDeliveredAsItsColour) {
  TempDir dir;
  cv::Mat bgra(20, 20, CV_8UC4, cv::Scalar(50, 100, 200, 128));
  write_bytes(dir.path() / "c" / "alpha.png", encode(bgra, ".png"));
  const test::Delivered d = expect_all_good(dir.str(), 1);
  ASSERT_EQ(d.pixels.size(), kSampleBytes);
  EXPECT_EQ(max_distance(sample_pixels(d, 0), {200, 100, 50}), 0);
}

TEST(BadInput, SixteenBitPngIsDeliveredAsEightBit) {
  TempDir dir;
  cv::Mat deep(20, 20, CV_16UC3, cv::Scalar(50 * 256, 100 * 256, 200 * 256));
  write_bytes(dir.path() / "c" / "deep.png", encode(deep, ".png"));
  const test::Delivered d = expect_all_good(dir.str(), 1);
  ASSERT_EQ(d.pixels.size(), kSampleBytes);
  EXPECT_TRUE(uniform(sample_pixels(d, 0)));
  EXPECT_LE(max_distance(sample_pixels(d, 0), {200, 100, 50}), 1);
}

TEST(BadInput, EmptyClassFolderKeepsItsClassId) {
  TempDir dir;
  write_tagged_png(dir.path() / "a" / "x.png", 1);
  fs::create_directories(dir.path() / "b");
  write_tagged_png(dir.path() / "c" / "x.png", 2);
  write_tagged_png(dir.path() / "c" / "y.png", 3);
  const test::Delivered d = expect_all_good(dir.str(), 3);
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{0, 2, 2}));
}

}  // namespace
}  // namespace stoke
