// Crafted shards, sidecars and list files (tests/loader/make_hostile_shards.py) whose headers,
// records and labels claim sizes, lengths and counts that wrap 64-bit sums or would size a
// table: each is refused with an error naming the file, member or line, quickly and in little
// memory, from local disk and from nginx. And a member name holding a newline and a terminal
// escape reaches the log, the errors and stoke-pack's output escaped, as one line.
//
// What would loop forever or exhaust memory on a loader without these bounds runs in a child
// process with a deadline (and, outside the sanitizer builds, an address-space limit), so a
// regression fails here instead of hanging or swapping CI.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "data/dataset_index.hpp"
#include "data/shard_list.hpp"
#include "data/tar_index.hpp"
#include "servers.hpp"
#include "stoke/error.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using test::kSlowdown;

// ---- running what might not end ------------------------------------------------------------

// A /proc/self/status field in KiB (VmSize, VmRSS).
std::uint64_t status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size()));
  }
  return 0;
}

struct ChildResult {
  bool finished = false;  // within the deadline, with a result
  std::string out;        // what the function returned, or "threw <type>: <what>"
  double seconds = 0;
};

// The resident memory of process `pid`, in bytes.
std::uint64_t resident_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  std::uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

constexpr std::uint64_t kChildMemory = std::uint64_t{2} << 30;

// Runs `f` in a forked child, killed after `deadline` or once it holds more than kChildMemory
// resident; outside the sanitizer builds (whose shadow memory such a limit breaks) it also may
// map only kChildMemory more than this process, so that a runaway allocation is a bad_alloc.
ChildResult in_child(const std::function<std::string()>& f,
                     std::chrono::seconds deadline = std::chrono::seconds(10 * kSlowdown)) {
  int fds[2];
  if (::pipe(fds) != 0) return {false, "pipe failed", 0};
  const auto started = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
#ifndef STOKE_TEST_SANITIZED
    const rlimit limit{(status_kib("VmSize") << 10) + kChildMemory, RLIM_INFINITY};
    ::setrlimit(RLIMIT_AS, &limit);
#endif
    std::string out;
    try {
      out = f();
    } catch (const DataError& e) {
      out = std::string("threw DataError: ") + e.what();
    } catch (const ConfigError& e) {
      out = std::string("threw ConfigError: ") + e.what();
    } catch (const std::bad_alloc&) {
      out = "threw std::bad_alloc";
    } catch (const std::exception& e) {
      out = std::string("threw std::exception: ") + e.what();
    }
    for (std::size_t at = 0; at < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + at, out.size() - at);
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  ChildResult r;
  bool eof = false;
  bool too_big = false;
  while (!eof) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(started + deadline - Clock::now());
    if (left.count() <= 0) break;
    if (resident_bytes(pid) > kChildMemory) {
      too_big = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 50))) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0)
      eof = true;
    else
      r.out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  r.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (!eof) {
    ::kill(pid, SIGKILL);
    r.out = too_big ? "held more than " + std::to_string(kChildMemory >> 20) + " MiB after " +
                          std::to_string(r.seconds) + " s (killed)"
                    : "still running after " + std::to_string(deadline.count()) + " s (killed)";
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.finished = eof && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (eof && !r.finished)
    r.out += " (the child " +
             (WIFSIGNALED(status) ? "died of signal " + std::to_string(WTERMSIG(status))
                                  : "exited " + std::to_string(WEXITSTATUS(status))) +
             ")";
  return r;
}

// ---- the crafted files ---------------------------------------------------------------------

class HostileShards : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    image_ = test::testdata("jpeg") + "/c00-aqua/00000.jpg";
    const std::string command = "python3 " STOKE_SOURCE_DIR
                                "/tests/loader/make_hostile_shards.py " +
                                dir_->str() + " " + image_;
    made_ = std::system(command.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(made_) << "make_hostile_shards.py failed"; }

  static std::string path(const std::string& name) { return (dir_->path() / name).string(); }
  static std::uint64_t bytes(const std::string& name) { return fs::file_size(path(name)); }

  static test::TempDir* dir_;
  static std::string image_;
  static bool made_;
};
test::TempDir* HostileShards::dir_ = nullptr;
std::string HostileShards::image_;
bool HostileShards::made_ = false;

// The index of `data` as one line: its sample count, each entry's image range, and what it left
// out.
std::string index_summary(const std::string& data, const detail::IndexOptions& options = {}) {
  const detail::DatasetIndex index = detail::build_index(data, options);
  std::string out = "samples " + std::to_string(index.size);
  for (const detail::FileEntry& e : index.entries)
    out += "; [" + std::to_string(e.offset) + " +" + std::to_string(e.size) + "]";
  for (const detail::RejectedFile& r : index.rejected) out += "; rejected " + r.path;
  return out;
}

detail::ShardIndex walk_file(const std::string& path) {
  const std::string bytes = test::read_file(path);
  return detail::walk_tar(
      [&](std::uint64_t offset, void* dst, std::size_t n) {
        const std::size_t got =
            offset >= bytes.size() ? 0 : std::min<std::size_t>(n, bytes.size() - offset);
        if (got > 0) std::memcpy(dst, bytes.data() + offset, got);
        return got;
      },
      bytes.size());
}

// ---- case: sizes near 2^64 in tar headers --------------------------------------------------

// A GNU base-256 size of 2^64 - 512 made `data + size` wrap back to the header itself: a
// directory entry was walked forever, a regular member pushed until bad_alloc.
TEST_F(HostileShards, ABase256SizeNear2To64IsDamageNotAnEndlessWalk) {
  for (const char* name : {"size-wrap-dir.tar", "size-wrap-file.tar"}) {
    const ChildResult r = in_child([&] { return index_summary(path(name)); });
    EXPECT_TRUE(r.finished) << name << ": " << r.out;
    EXPECT_LT(r.seconds, 5.0 * kSlowdown) << name;
    // The sample before it stays; the member and what follows are lost, said in words.
    EXPECT_EQ(r.out, "samples 1; [512 +17618]; rejected " + path(name) +
                         " (the member at byte 19456 (18446744073709551104 bytes) is cut short by "
                         "the shard's end at byte 20992)")
        << name;
  }
}

// A pax size= record of 2^64 - 512 gave the member after it that size: a sample whose bytes
// lay 16 EiB past the shard's end.
TEST_F(HostileShards, APaxSizeNear2To64IsDamageAndNoMemberLeavesTheShard) {
  const detail::ShardIndex table = walk_file(path("pax-size-wrap.tar"));
  for (const detail::TarMember& m : table.members) {
    EXPECT_LE(m.offset, bytes("pax-size-wrap.tar")) << m.name;
    EXPECT_LE(m.size, bytes("pax-size-wrap.tar") - m.offset) << m.name;
  }
  EXPECT_EQ(table.members.size(), 2u);
  EXPECT_EQ(table.damage,
            "the member at byte 20480 (18446744073709551104 bytes) is cut short by the shard's "
            "end at byte 22016");
  const ChildResult r = in_child([&] { return index_summary(path("pax-size-wrap.tar")); });
  ASSERT_TRUE(r.finished) << r.out;
  EXPECT_EQ(r.out, "samples 1; [512 +17618]; rejected " + path("pax-size-wrap.tar") + " (" +
                       table.damage + ")");
}

// A pax record claiming length 2^64 - 6 wrapped `at + length` back to an earlier record, which
// led to it again: the walk went round forever.
TEST_F(HostileShards, APaxRecordLengthNear2To64IsAMalformedHeaderNotALoop) {
  const ChildResult r = in_child([&] { return index_summary(path("pax-length-wrap.tar")); });
  ASSERT_TRUE(r.finished) << r.out;
  EXPECT_LT(r.seconds, 5.0 * kSlowdown);
  EXPECT_EQ(r.out, "samples 1; [512 +17618]; rejected " + path("pax-length-wrap.tar") +
                       " (the pax header at byte 19456 is malformed)");
}

// The same shards over HTTP: the walk reads them through range requests, with the same bounds;
// a sidecar served beside a shard is checked as a local one is.
TEST_F(HostileShards, OverHttpTheSameShardsEndTheSameWay) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir work;
  test::Nginx nginx(dir_->path(), work.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  const struct {
    const char* name;
    std::string damage;
  } cases[] = {
      {"size-wrap-dir.tar",
       "the member at byte 19456 (18446744073709551104 bytes) is cut short by the shard's end "
       "at byte 20992"},
      {"pax-size-wrap.tar",
       "the member at byte 20480 (18446744073709551104 bytes) is cut short by the shard's end "
       "at byte 22016"},
      {"pax-length-wrap.tar", "the pax header at byte 19456 is malformed"},
  };
  for (const auto& c : cases) {
    const std::string url = nginx.url() + "/" + c.name;
    const ChildResult r = in_child([&] { return index_summary(url); });
    ASSERT_TRUE(r.finished) << c.name << ": " << r.out;
    EXPECT_EQ(r.out, "samples 1; [512 +17618]; rejected " + url + " (" + c.damage + ")");
  }
  const std::string url = nginx.url() + "/sidecar-wrap.tar";
  const ChildResult r = in_child([&] { return index_summary(url); });
  ASSERT_TRUE(r.finished) << r.out;
  EXPECT_EQ(r.out, "threw ConfigError: " + url +
                       ".idx:2: expected 'name<TAB>offset<TAB>size[<TAB>value]', got "
                       "'000000.jpg\\t18446744073709551516\\t200' (delete the file to rebuild "
                       "it)");
}

// ---- case: sidecar ranges ------------------------------------------------------------------

// A sidecar member at offset 2^64 - 100 of 200 bytes: offset + size wrapped to 100, inside the
// shard, and the entry pointed 16 EiB past its end.
TEST_F(HostileShards, ASidecarRangeThatWrapsIsRefusedNamingItsLine) {
  const ChildResult r = in_child([&] { return index_summary(path("sidecar-wrap.tar")); });
  ASSERT_TRUE(r.finished) << r.out;
  EXPECT_EQ(r.out, "threw ConfigError: " + path("sidecar-wrap.tar") +
                       ".idx:2: expected 'name<TAB>offset<TAB>size[<TAB>value]', got "
                       "'000000.jpg\\t18446744073709551516\\t200' (delete the file to rebuild "
                       "it)");
  // The same check on its own: offsets up to the shard's end, sizes up to what is left.
  const std::uint64_t n = 4096;
  const auto parse = [&](const std::string& line) {
    return detail::parse_sidecar("# stoke shard index 1 4096\n" + line + "\n", n, "s.idx");
  };
  EXPECT_NO_THROW(parse("a.jpg\t512\t3584"));
  EXPECT_NO_THROW(parse("a.jpg\t4096\t0"));
  EXPECT_THROW(parse("a.jpg\t512\t3585"), ConfigError);
  EXPECT_THROW(parse("a.jpg\t4097\t0"), ConfigError);
  EXPECT_THROW(parse("a.jpg\t512\t18446744073709551615"), ConfigError);
}

// ---- case: one label sizing the class table ------------------------------------------------

std::string loader_summary(Options o) {
  o.workers = 0;
  o.batch = 1;
  o.memory_budget = std::size_t{64} << 20;  // within the child's address-space limit
  o.log = [](std::string_view) {};
  Loader loader(std::move(o));
  return "samples " + std::to_string(loader.dataset_size());
}

// A .cls of 2147483647, a json:label of it, a box class of it or a list-file label of it made
// 2^31 class names (about 64 GiB) and overflowed the int counting them.
TEST_F(HostileShards, ALabelOverMaxClassesIsADataErrorNamingItsMemberAndValue) {
  const std::string tail =
      " 2147483647 is not below max_classes 16777216 (labels are 0..16777215; raise max_classes "
      "if the dataset has that many classes)";
  const struct {
    const char* data;
    const char* label_field;
    const char* box_field;
    std::string error;
  } cases[] = {
      {"label-cls.tar", "cls", "", "label-cls.tar:000000.cls: label" + tail},
      {"label-json.tar", "json:label", "", "label-json.tar:000000.json: \"label\"" + tail},
      {"label-box.tar", "cls", "json", "label-box.tar:000000.json: classes[1]" + tail},
      {"labels.list", "cls", "", "labels.list:2: label" + tail},
  };
  for (const auto& c : cases) {
    Options o;
    o.data = path(c.data);
    o.label_field = c.label_field;
    o.box_field = c.box_field;
    for (OnError policy : {OnError::kSkip, OnError::kError}) {
      o.on_error = policy;
      const ChildResult r = in_child([&] { return loader_summary(o); });
      ASSERT_TRUE(r.finished) << c.data << ": " << r.out;
      EXPECT_LT(r.seconds, 5.0 * kSlowdown) << c.data;
      EXPECT_EQ(r.out, "threw DataError: " + (dir_->path() / c.error).string()) << c.data;
    }
  }
}

// The bound is an option: the largest label under it costs nothing per label (the index keeps
// no table of possible classes), and a smaller bound refuses what the default takes.
TEST_F(HostileShards, MaxClassesIsTheBoundAndALargeLabelUnderItCostsNoMemory) {
  const ChildResult r = in_child([&] {
    const std::uint64_t before = status_kib("VmRSS");
    const detail::DatasetIndex index = detail::build_index(path("label-cls-max.tar"));
    const std::uint64_t grown = status_kib("VmRSS") - std::min(before, status_kib("VmRSS"));
    return "samples " + std::to_string(index.size) + " label " +
           std::to_string(index.entries.at(0).label) + " grown_mib " + std::to_string(grown >> 10);
  });
  ASSERT_TRUE(r.finished) << r.out;
  EXPECT_EQ(r.out.substr(0, r.out.find(" grown_mib")), "samples 1 label 16777215");
  const int grown_mib = std::stoi(r.out.substr(r.out.find("grown_mib ") + 10));
  EXPECT_LT(grown_mib, 32) << "16,777,216 class names were about 540 MiB";

  Options o;
  o.data = path("label-cls-max.tar");
  EXPECT_EQ(in_child([&] { return loader_summary(o); }).out, "samples 1");
  o.max_classes = 16777215;
  EXPECT_EQ(in_child([&] { return loader_summary(o); }).out,
            "threw DataError: " + path("label-cls-max.tar") +
                ":000000.cls: label 16777215 is not below max_classes 16777215 (labels are "
                "0..16777214; raise max_classes if the dataset has that many classes)");
  o.max_classes = 0;
  EXPECT_EQ(in_child([&] { return loader_summary(o); }).out,
            "threw ConfigError: max_classes must be positive (labels are 0..max_classes - 1), "
            "got 0");
  // IDX labels and a list file's labels are bounded as a shard's are.
  o.data = tools::kDefaultFashionMnistDir;
  o.split = Split::kTest;
  o.max_classes = 9;
  EXPECT_EQ(in_child([&] { return loader_summary(o); }).out,
            "threw DataError: " + std::string(tools::kDefaultFashionMnistDir) +
                " (test label of image 0): label 9 is not below max_classes 9 (labels are 0..8; "
                "raise max_classes if the dataset has that many classes)");
  o.data = path("labels.list");
  o.max_classes = 1;
  EXPECT_EQ(in_child([&] { return loader_summary(o); }).out,
            "threw DataError: " + path("labels.list") +
                ":2: label 2147483647 is not below max_classes 1 (labels are 0..0; raise "
                "max_classes if the dataset has that many classes)");
}

// A boxes member is read as JSON only so deep (nlohmann's DOM of 4 Mi nested arrays held
// gigabytes), a corner past float's range made an infinite box, and a stated width past int's
// range wrapped negative: each sample is now left out with its reason, in little memory.
TEST_F(HostileShards, BoxMembersTooDeepInfiniteOrOfAnAbsurdSizeAreLeftOutWithTheirReason) {
  const struct {
    const char* data;
    std::string reason;
  } cases[] = {
      {"box-deep.tar", "not a JSON object (of at most 3 levels of nesting)"},
      {"box-inf.tar", "boxes[0]: a coordinate beyond +-16777216 pixels"},
      {"box-size.tar", "width and height: expected 1..16777216, got 4294967360 x 64"},
  };
  for (const auto& c : cases) {
    const ChildResult r = in_child([&] {
      detail::IndexOptions options;
      options.box_field = "json";
      const std::uint64_t before = status_kib("VmRSS");
      const detail::DatasetIndex index = detail::build_index(path(c.data), options);
      const std::uint64_t grown = status_kib("VmRSS") - std::min(before, status_kib("VmRSS"));
      std::string out = "samples " + std::to_string(index.size);
      for (const detail::RejectedFile& f : index.rejected) out += "; rejected " + f.path;
      return out + " grown_mib " + std::to_string(grown >> 10);
    });
    ASSERT_TRUE(r.finished) << c.data << ": " << r.out;
    EXPECT_EQ(r.out.substr(0, r.out.find(" grown_mib")),
              "samples 1; rejected " + path(c.data) + ":000001 (boxes: " + c.reason + ")")
        << c.data;
    EXPECT_LT(std::stoi(r.out.substr(r.out.find("grown_mib ") + 10)), 64) << c.data;
  }
}

// ---- case: the shard cap across a list file ------------------------------------------------

// Twelve lines of s-{000000..999999}.tar: each line was under the 10^6 cap, the list's 12
// million names were not (bad_alloc).
TEST_F(HostileShards, AListFileNamesAtMostAMillionShardsInAll) {
  const ChildResult r = in_child([&] {
    const auto shards = detail::shard_list(path("many-shards.list"));
    return "shards " + std::to_string(shards ? shards->size() : 0);
  });
  ASSERT_TRUE(r.finished) << r.out;
  EXPECT_LT(r.seconds, 10.0 * kSlowdown);
  EXPECT_EQ(r.out, "threw ConfigError: " + path("many-shards.list") +
                       ":2: the list names more than 1000000 shards in all (1000000 on the lines "
                       "before this one, 1000000 on this one); split it into datasets of at most "
                       "1000000 shards");
  // Patterns separated by commas add up the same way; a range up to LLONG_MAX is counted
  // without overflowing.
  EXPECT_THROW(detail::shard_list("a-{000000..999999}.tar,b-{0..1}.tar"), ConfigError);
  try {
    detail::shard_list("s-{0..9223372036854775807}.tar");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "s-{0..9223372036854775807}.tar: {0..9223372036854775807} names more than "
                 "1000000 shards");
  }
}

// ---- case: names that reach the terminal ---------------------------------------------------

constexpr const char* kEvil = "x\\n\\x1b[31mstoke: forged line\\x1b[0m/000001.jpg";

bool has_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// A member named "x\n\e[31mstoke: forged line\e[0m/000001.jpg" (empty: left out while
// indexing, and named) printed a red fake "stoke:" line; it shows escaped, one line, in the log
// (a callback and stderr) and in the DataError.
TEST_F(HostileShards, AMemberNameWithANewlineAndAnEscapeIsShownEscapedOnOneLine) {
  Options o;
  o.data = path("evil-name.tar");
  o.batch = 2;
  o.workers = 1;
  o.height = o.width = 32;
  o.shuffle = false;
  test::LogLines log;
  o.log = log.sink();
  {
    Loader loader(o);
    while (loader.next()) {
    }
    EXPECT_EQ(loader.stats().skipped, 1);
  }
  bool named = false;
  for (const std::string& line : log.lines()) {
    EXPECT_FALSE(has_control(line)) << line;
    if (line.find(kEvil) != std::string::npos) named = true;
  }
  EXPECT_TRUE(named) << "no log line names the member";

  // The default log, stderr: one "stoke:" line per event, none forged.
  o.log = nullptr;
  ::testing::internal::CaptureStderr();
  {
    Loader loader(o);
    while (loader.next()) {
    }
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::size_t lines = 0;
  for (std::size_t from = 0; from < err.size();) {
    const std::size_t eol = std::min(err.find('\n', from), err.size());
    const std::string line = err.substr(from, eol - from);
    EXPECT_EQ(line.rfind("stoke: ", 0), 0u) << line;
    EXPECT_FALSE(has_control(line)) << line;
    lines += line.find(kEvil) != std::string::npos;
    from = eol + 1;
  }
  EXPECT_EQ(lines, 1u) << err;

  o.log = log.sink();
  o.on_error = OnError::kError;
  try {
    Loader loader(o);  // (under kError, a sample left out while indexing stops it here)
    while (loader.next()) {
    }
    ADD_FAILURE() << "no DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(kEvil), std::string::npos) << e.what();
    EXPECT_FALSE(has_control(e.what())) << e.what();
  }
}

// An image folder that cannot be walked (here a symbolic link to itself, named with a newline
// and an escape) threw std::filesystem_error, whose text held the name raw, past the escaping
// every stoke::Error does.
TEST_F(HostileShards, AFolderThatCannotBeWalkedIsAConfigErrorShownEscaped) {
  test::TempDir work;
  fs::create_directories(work.path() / "c0");
  fs::copy_file(image_, work.path() / "c0" / "good.jpg");
  const std::string loop = "x\n\x1b[31mstoke: forged line\x1b[0m";
  fs::create_symlink(loop, work.path() / loop);
  Options o;
  o.data = work.str();
  try {
    loader_summary(o);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find(work.str() + ": cannot be indexed: "), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("x\\n\\x1b[31mstoke: forged line\\x1b[0m"),
              std::string::npos)
        << e.what();
    EXPECT_FALSE(has_control(e.what())) << e.what();
  }
}

// stoke-pack printed the names of the files it skipped as they were.
TEST_F(HostileShards, StokePackShowsTheNamesItSkipsEscaped) {
  test::TempDir work;
  const fs::path cls = work.path() / "in" / "c0";
  fs::create_directories(cls);
  fs::copy_file(image_, cls / "good.jpg");
  std::ofstream(cls / "x\n\x1b[31mstoke: forged line\x1b[0m.jpg").close();  // empty: skipped
  const std::string command = std::string(STOKE_PACK) + " --no-progress --data " +
                              (work.path() / "in").string() + " --out " +
                              (work.path() / "s-%06d.tar").string() + " 2>&1";
  FILE* p = ::popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_NE(out.find("stoke-pack: skipped " + (cls / "").string() +
                     "x\\n\\x1b[31mstoke: forged line\\x1b[0m.jpg: empty\n"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace stoke
