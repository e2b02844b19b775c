#pragma once
// Helpers shared by the loader tests: temporary folders, process/descriptor/shm snapshots, and
// collecting what a loader delivers.

#include <gtest/gtest.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/tar_index.hpp"
#include "stoke/loader.hpp"
#include "stoke/mnist.hpp"
#include "stoke/tools/fashion_mnist.hpp"
#include "stoke/tools/proc.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STOKE_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define STOKE_TEST_SANITIZED 1
#endif
#endif

namespace stoke::test {

// How much slower the sanitizer builds run this code (the debug preset's is unoptimized), and
// how much more memory they take (redzones, the freed-memory quarantine): time and memory bounds
// in tests are scaled by them.
#ifdef STOKE_TEST_SANITIZED
inline constexpr int kSlowdown = 10;
inline constexpr int kMemoryFactor = 3;
#else
inline constexpr int kSlowdown = 1;
inline constexpr int kMemoryFactor = 1;
#endif

// A file's bytes ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A tar archive of (name, bytes) members, in order, as stoke-pack writes one.
inline std::string tar_archive(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string tar;
  for (const auto& [name, bytes] : members) {
    tar += detail::tar_member_header(name, bytes.size());
    tar += bytes;
    tar += std::string(detail::tar_padding(bytes.size()), '\0');
  }
  return tar + std::string(1024, '\0');
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "stoke-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// A loader's log lines, collected from whichever thread logs them; sink() goes into
// Options::log (or an EventLog) and may outlive this object.
class LogLines {
 public:
  std::function<void(std::string_view)> sink() const {
    return [s = state_](std::string_view line) {
      std::lock_guard lock(s->mutex);
      s->lines.emplace_back(line);
    };
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(state_->mutex);
    return state_->lines;
  }
  bool contains(std::string_view text) const {
    for (const std::string& l : lines())
      if (l.find(text) != std::string::npos) return true;
    return false;
  }

 private:
  struct State {
    std::mutex mutex;
    std::vector<std::string> lines;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

inline std::string testdata(const char* name) {
  return std::string(STOKE_TESTDATA_DIR) + "/" + name;
}

// Fashion-MNIST's 10,000-image test split with a small batch: quick, and big enough.
inline Options fashion_options(int workers, int batch = 100) {
  Options o;
  o.data = tools::kDefaultFashionMnistDir;
  o.split = Split::kTest;
  o.batch = batch;
  o.workers = workers;
  o.seed = 7;
  o.log = [](std::string_view) {};
  return o;
}

// Runs `command` through the shell; a nonzero status fails the test.
inline void run(const std::string& command) {
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

// Remote shards read with the shard cache (and the index cache) in the test's own folder.
inline Options shard_options(const std::string& data, const TempDir& dir) {
  Options o = fashion_options(2, 16);
  o.data = data;
  o.cache_dir = (dir.path() / "cache").string();
  o.height = o.width = 32;
  o.shuffle_window = 2;
  return o;
}

#ifdef STOKE_PACK
// testdata/jpeg (96 images) packed by stoke-pack into shards of `samples` with their sidecars,
// www/train-N.tar.
inline void pack_jpeg_shards(const std::filesystem::path& www, int samples) {
  run(std::string(STOKE_PACK) + " --no-progress --data " + testdata("jpeg") + " --out " +
      (www / "train-%d.tar").string() + " --shard-samples " + std::to_string(samples) +
      " > /dev/null");
}
#endif

// The Fashion-MNIST PNG tree upscaled to 192x192, then random-resized-crop 64 + flip: a
// pipeline slow enough (about a millisecond a sample) for tests that act while workers work.
inline Options slow_png_options(int workers, std::uint64_t seed = 3) {
  Options o;
  o.data = testdata("fashion-png");
  o.batch = 20;
  o.chunk = 5;
  o.workers = workers;
  o.seed = seed;
  Pipeline p(64, 64, 3);
  p.resize(192, 192).random_resized_crop(64, 64).horizontal_flip(0.5f);
  o.pipeline = p;
  o.log = [](std::string_view) {};
  return o;
}

struct Delivered {
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
  std::vector<std::int64_t> ids;
  std::vector<std::uint8_t> valid;
  std::vector<float> boxes;  // with their classes and counts: empty without boxes
  std::vector<std::int32_t> box_classes;
  std::vector<std::int32_t> box_counts;
  std::vector<std::uint8_t> masks;    // empty without masks
  std::vector<std::int64_t> indices;  // Batch::index() of each batch, in delivery order
  std::int64_t padded = 0;

  bool operator==(const Delivered&) const = default;
};

inline void append(Delivered& d, const Batch& b) {
  d.pixels.insert(d.pixels.end(), b.pixels().begin(), b.pixels().end());
  d.labels.insert(d.labels.end(), b.labels().begin(), b.labels().end());
  d.ids.insert(d.ids.end(), b.sample_ids().begin(), b.sample_ids().end());
  d.valid.insert(d.valid.end(), b.valid().begin(), b.valid().end());
  d.boxes.insert(d.boxes.end(), b.boxes().begin(), b.boxes().end());
  d.box_classes.insert(d.box_classes.end(), b.box_classes().begin(), b.box_classes().end());
  d.box_counts.insert(d.box_counts.end(), b.box_counts().begin(), b.box_counts().end());
  d.masks.insert(d.masks.end(), b.masks().begin(), b.masks().end());
  d.indices.push_back(b.index());
  d.padded += b.padded();
}

// Drains the loader's current epoch (or `max_batches` of it).
inline Delivered collect(Loader& loader, std::int64_t max_batches = -1) {
  Delivered d;
  for (std::int64_t n = 0; max_batches < 0 || n < max_batches; ++n) {
    auto b = loader.next();
    if (!b) break;
    append(d, *b);
  }
  return d;
}

// The text of the ConfigError that constructing a loader of `o` throws, or "accepted".
inline std::string config_error(const Options& o) {
  try {
    Loader loader(o);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

// Children of this process (every thread's), from /proc.
inline std::set<pid_t> children() {
  const std::vector<pid_t> pids = tools::child_pids();
  return {pids.begin(), pids.end()};
}

// The exit status of the child `pid`, waited for: its code, or minus the signal that ended it.
inline int exit_status(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

inline int open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

inline std::set<std::string> dev_shm() {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    out.insert(e.path().filename().string());
  return out;
}

// Whether process `pid` has mapped a loader's arena: a worker past exec and into its start-up.
inline bool maps_arena(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("memfd:stoke-arena") != std::string::npos) return true;
  }
  return false;
}

inline bool process_exists(pid_t pid) {
  // A zombie still has a /proc entry; count it as gone when its state is Z.
  const std::vector<std::string> stat = tools::stat_fields(pid);
  return !stat.empty() && stat[0] != "Z";
}

// Sets (or, with nullopt, unsets) an environment variable for the scope, then puts it back:
// stoke reads AWS_* and STOKE_* when it indexes and when its workers read, and workers inherit
// the environment when they are spawned.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace stoke::test
