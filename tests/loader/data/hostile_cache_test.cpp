// The shard cache and the index cache in a folder that someone else may have been at: a planted
// symbolic link is never followed (at a copy's name or at a lock's), folders and files are
// private unless STOKE_CACHE_SHARED=1 asks to share them, a folder another user owns is refused,
// eviction removes only copies stoke wrote, partial downloads left by dead processes are swept
// and live ones count against the limit, and the limit holds for the folder, not per loader.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "data/dataset_index.hpp"
#include "data/shard_cache.hpp"
#include "servers.hpp"
#include "stoke/error.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using detail::ShardStore;

using test::ScopedEnv;

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  return bytes;
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

using test::read_file;

std::int64_t mtime_ns(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

void set_mtime(const fs::path& path, long seconds_ago) {
  const long t = static_cast<long>(::time(nullptr)) - seconds_ago;
  const timespec times[2] = {{t, 0}, {t, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
}

// The bytes of the shard cache's own kinds of files in `folder`: copies (*.tar) and partial
// downloads.
std::uintmax_t cache_bytes(const fs::path& folder) {
  std::uintmax_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".tar") && name.find(".tar.part.") == std::string::npos) continue;
    if (!e.is_regular_file(ec) || e.is_symlink(ec)) continue;  // a planted link holds nothing
    std::error_code size_ec;
    const std::uintmax_t bytes = fs::file_size(e.path(), size_ec);
    if (!size_ec) n += bytes;
  }
  return n;
}

int partials(const fs::path& folder) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(folder))
    n += e.path().filename().string().find(".part") != std::string::npos ? 1 : 0;
  return n;
}

// nginx serving `count` shards of random bytes, shard-<i>.tar of `bytes` bytes each.
struct Shards {
  Shards(const test::TempDir& dir, int count, std::size_t bytes, const std::string& conf = "")
      : www(dir.path() / "www") {
    fs::create_directories(www);
    for (int i = 0; i < count; ++i)
      write_file(www / name(i), random_bytes(bytes, static_cast<unsigned>(i + 1)));
    nginx.emplace(www, dir.path() / "nginx", "", conf);
  }
  static std::string name(int i) { return "shard-" + std::to_string(i) + ".tar"; }
  std::string url(int i) const { return nginx->url() + "/" + name(i); }
  fs::path www;
  std::optional<test::Nginx> nginx;
};

TEST(HostileCache, ASymlinkPlantedAtACopysNameIsNotFollowedAndTheShardIsFetchedAgain) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  Shards shards(dir, 1, 100000);
  ASSERT_TRUE(shards.nginx->started());
  const std::string root = (dir.path() / "cache").string();
  const ShardStore store(root, 1 << 20);
  const std::string copy = detail::shard_copy_path(root, shards.url(0), 100000, "v1");
  // Another file of the same size, the attacker's bytes, with an old time.
  const fs::path planted = dir.path() / "elsewhere.tar";
  const std::string theirs = random_bytes(100000, 99);
  write_file(planted, theirs);
  set_mtime(planted, 3600);
  const std::int64_t planted_time = mtime_ns(planted);
  fs::create_symlink(planted, copy);

  EXPECT_FALSE(store.use(copy));
  EXPECT_EQ(store.fetch(shards.url(0), 100000, copy, detail::RemotePolicy{}), 100000u);
  EXPECT_FALSE(fs::is_symlink(copy));
  EXPECT_TRUE(read_file(copy) == read_file(shards.www / Shards::name(0)))
      << "not the server's bytes";
  EXPECT_TRUE(read_file(planted) == theirs);
  EXPECT_EQ(mtime_ns(planted), planted_time) << "the symlink's target was touched";
  EXPECT_TRUE(store.use(copy));

  // A symlink swapped in after the copy was fetched: a worker's read of the copy refuses it
  // (it then reads the server's bytes), and the store no longer counts it as there.
  fs::remove(copy);
  fs::create_symlink(planted, copy);
  std::vector<std::uint8_t> bytes;
  EXPECT_EQ(detail::read_shard_copy(copy, {0, 100}, bytes), detail::BadInput::kUnreadable);
  EXPECT_FALSE(store.use(copy));
  EXPECT_EQ(mtime_ns(planted), planted_time);
}

TEST(HostileCache, ACopyOfTheRightSizeThatStokeDidNotWriteIsNotUsed) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  Shards shards(dir, 1, 100000);
  ASSERT_TRUE(shards.nginx->started());
  const std::string root = (dir.path() / "cache").string();
  const ShardStore store(root, 1 << 20);
  const std::string copy = detail::shard_copy_path(root, shards.url(0), 100000, "v1");
  // A regular file of the copy's size, under the copy's name, owned by this user.
  write_file(copy, random_bytes(100000, 99));
  EXPECT_FALSE(store.use(copy));
  EXPECT_EQ(store.fetch(shards.url(0), 100000, copy, detail::RemotePolicy{}), 100000u);
  EXPECT_TRUE(read_file(copy) == read_file(shards.www / Shards::name(0)))
      << "not the server's bytes";
  // Replaced after stoke wrote it (another file renamed over it): not the copy stoke recorded.
  const fs::path other = fs::path(copy).concat(".other");
  write_file(other, random_bytes(100000, 98));
  fs::rename(other, copy);
  EXPECT_FALSE(store.use(copy));
}

TEST(HostileCache, APlantedLockSymlinkIsNeverFollowed) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  Shards shards(dir, 1, 100000);
  ASSERT_TRUE(shards.nginx->started());
  const std::string root = (dir.path() / "cache").string();
  const ShardStore store(root, 1 << 20);
  const std::string copy = detail::shard_copy_path(root, shards.url(0), 100000, "v1");
  fs::create_directories(dir.path() / "outside");
  // The lock names this and earlier versions used: <key>.lock beside the copy, and the folder's.
  const fs::path key_lock = fs::path(copy).replace_extension(".lock");
  const fs::path folder_lock = fs::path(store.folder()) / "stoke-folder.lock";
  fs::create_symlink(dir.path() / "outside/by-key-lock", key_lock);
  fs::create_symlink(dir.path() / "outside/by-folder-lock", folder_lock);
  try {
    store.fetch(shards.url(0), 100000, copy, detail::RemotePolicy{});
    ADD_FAILURE() << "a symbolic link at the folder's lock was followed";
  } catch (const detail::ShardCacheFolderError& e) {
    EXPECT_NE(std::string(e.what()).find(folder_lock.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "outside/by-key-lock"));
  EXPECT_FALSE(fs::exists(dir.path() / "outside/by-folder-lock"));
  EXPECT_FALSE(fs::exists(copy));
  fs::remove(folder_lock);
  EXPECT_EQ(store.fetch(shards.url(0), 100000, copy, detail::RemotePolicy{}), 100000u);
  EXPECT_FALSE(fs::exists(dir.path() / "outside/by-key-lock"));
  EXPECT_TRUE(fs::is_empty(dir.path() / "outside"));
}

TEST(HostileCache, FoldersAndFilesArePrivateUnlessSharingIsAskedFor) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  Shards shards(dir, 1, 100000);
  ASSERT_TRUE(shards.nginx->started());
  const mode_t old_umask = ::umask(022);
  const fs::path root = dir.path() / "a/cache";
  {
    const ShardStore store(root.string(), 1 << 20);
    const std::string copy = detail::shard_copy_path(root.string(), shards.url(0), 100000, "v1");
    ASSERT_EQ(store.fetch(shards.url(0), 100000, copy, detail::RemotePolicy{}), 100000u);
    EXPECT_EQ(mode_of(root), 0700u);
    EXPECT_EQ(mode_of(root / "shards"), 0700u);
    EXPECT_EQ(mode_of(copy), 0600u);
    for (const auto& e : fs::directory_iterator(root / "shards"))
      EXPECT_EQ(mode_of(e.path()) & 077, 0u) << e.path();
  }
  {
    ScopedEnv shared("STOKE_CACHE_SHARED", "1");
    const fs::path shared_root = dir.path() / "b/cache";
    const ShardStore store(shared_root.string(), 1 << 20);
    const std::string copy =
        detail::shard_copy_path(shared_root.string(), shards.url(0), 100000, "v1");
    ASSERT_EQ(store.fetch(shards.url(0), 100000, copy, detail::RemotePolicy{}), 100000u);
    EXPECT_EQ(mode_of(shared_root / "shards"), 02770u);
    EXPECT_EQ(mode_of(copy), 0640u);
  }
  ::umask(old_umask);
}

TEST(HostileCache, TheIndexCacheIsPrivateAndAPlantedEntrySymlinkIsNotRead) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = dir.path() / "www";
  ASSERT_NO_FATAL_FAILURE(test::pack_jpeg_shards(www, 48));
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  const mode_t old_umask = ::umask(022);
  detail::IndexOptions options;
  options.caches.root = (dir.path() / "cache").string();
  const std::string data = nginx.url() + "/train-{0..1}.tar";
  const detail::DatasetIndex first = detail::build_index(data, options);
  ::umask(old_umask);
  const fs::path index = dir.path() / "cache/index";
  EXPECT_EQ(mode_of(index), 0700u);
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(index)) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 2u);
  for (const fs::path& e : entries) EXPECT_EQ(mode_of(e), 0600u) << e;
  // An entry replaced by a symbolic link to a file elsewhere (here a copy of the entry itself,
  // which a planter could edit at will): not read through, the shard is indexed again and the
  // entry written anew in its place, the link's target untouched.
  const fs::path planted = dir.path() / "planted.idx";
  fs::copy_file(entries[0], planted);
  const std::string planted_text = read_file(planted);
  fs::remove(entries[0]);
  fs::create_symlink(planted, entries[0]);
  const detail::DatasetIndex second = detail::build_index(data, options);
  EXPECT_EQ(second.entries.size(), first.entries.size());
  EXPECT_FALSE(fs::is_symlink(entries[0])) << "the planted entry was used";
  EXPECT_EQ(mode_of(entries[0]), 0600u);
  EXPECT_TRUE(read_file(planted) == planted_text);
}

TEST(HostileCache, AFolderOfAnotherUserOrWritableByOthersIsAConfigErrorThatSaysWhatToDo) {
  test::TempDir dir;
  const fs::path root = dir.path() / "cache";
  fs::create_directories(root / "shards");
  // Writable by everyone: refused (whoever owns it), naming the folder and what to do.
  ::chmod(root.c_str(), 0777);
  try {
    ShardStore store(root.string(), 1000);
    FAIL() << "a folder every user can write was used";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(root.string()), std::string::npos) << m;
    EXPECT_NE(m.find("writable by other users"), std::string::npos) << m;
    EXPECT_NE(m.find("cache_dir"), std::string::npos) << m;
  }
  // This user's, writable by its group: only the group's write bit goes.
  ::chmod(root.c_str(), 0775);
  { ShardStore store(root.string(), 1000); }
  EXPECT_EQ(mode_of(root), 0755u);
  // A shards folder of this user's that an earlier version made 0755 (or 0777): tightened.
  ::chmod((root / "shards").c_str(), 0777);
  { ShardStore store(root.string(), 1000); }
  EXPECT_EQ(mode_of(root / "shards"), 0700u);
  // The cache root may be a link of the user's (checked where it leads); stoke's own folder in
  // it may not.
  fs::create_directory_symlink(root, dir.path() / "link");
  { ShardStore store((dir.path() / "link").string(), 1000); }
  fs::create_directories(dir.path() / "other");
  fs::create_directories(dir.path() / "other-root");
  fs::create_directory_symlink(dir.path() / "other", dir.path() / "other-root/shards");
  try {
    ShardStore store((dir.path() / "other-root").string(), 1000);
    ADD_FAILURE() << "a symbolic link at shards/ was followed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("a symbolic link, which stoke does not follow"),
              std::string::npos)
        << e.what();
  }
  if (::geteuid() != 0) GTEST_SKIP() << "giving a folder to another user needs root";
  // Owned by another user: refused.
  ASSERT_EQ(::chown((root / "shards").c_str(), 65534, 65534), 0);
  try {
    ShardStore store(root.string(), 1000);
    FAIL() << "another user's folder was used";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find((root / "shards").string()), std::string::npos) << m;
    EXPECT_NE(m.find("owned by user 65534"), std::string::npos) << m;
    EXPECT_NE(m.find("STOKE_CACHE_SHARED"), std::string::npos) << m;
  }
}

TEST(HostileCache, EvictionRemovesOnlyCopiesStokeWrote) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  Shards shards(dir, 3, 100000);
  ASSERT_TRUE(shards.nginx->started());
  const std::string root = (dir.path() / "cache").string();
  const ShardStore store(root, 250000);
  const fs::path folder = store.folder();
  // A user's own file, and one named like a copy that stoke has no record of.
  write_file(folder / "foo.tar", "mine");
  write_file(folder / "0123456789abcdef.tar", random_bytes(1000, 5));
  std::vector<std::string> copies;
  for (int i = 0; i < 3; ++i) {
    copies.push_back(detail::shard_copy_path(root, shards.url(i), 100000, "v1"));
    std::vector<std::string> evicted;
    EXPECT_TRUE(store.make_room(100000, {}, evicted));
    for (const std::string& e : evicted) EXPECT_NE(e.find(folder.string()), std::string::npos);
    ASSERT_EQ(store.fetch(shards.url(i), 100000, copies.back(), detail::RemotePolicy{}), 100000u);
  }
  EXPECT_EQ(read_file(folder / "foo.tar"), "mine");
  EXPECT_TRUE(fs::exists(folder / "0123456789abcdef.tar"));
  EXPECT_FALSE(fs::exists(copies[0]));  // the least recently used copy made room
  EXPECT_TRUE(fs::exists(copies[2]));
  EXPECT_EQ(store.used(), 200000u);
  std::vector<std::string> evicted;
  EXPECT_TRUE(store.make_room(250000, {}, evicted));
  EXPECT_EQ(evicted.size(), 2u);
  EXPECT_EQ(read_file(folder / "foo.tar"), "mine");
  EXPECT_TRUE(fs::exists(folder / "0123456789abcdef.tar"));
}

// A process stopped while it holds the folder's lock is not waited for past the deadline: the
// fetch fails as a folder error (the prefetcher then has the workers read from the server).
TEST(HostileCache, AStoppedHolderOfTheFoldersLockIsNotWaitedForPastTheDeadline) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  Shards shards(dir, 1, 100000);
  ASSERT_TRUE(shards.nginx->started());
  const std::string root = (dir.path() / "cache").string();
  const ShardStore store(root, 1 << 20);
  const std::string lock = store.folder() + "/stoke-folder.lock";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = ::open(lock.c_str(), O_RDONLY | O_CREAT, 0600);
    ::flock(fd, LOCK_EX);
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  detail::RemotePolicy policy;
  policy.deadline_s = 1;
  const auto start = std::chrono::steady_clock::now();
  const std::string copy = detail::shard_copy_path(root, shards.url(0), 100000, "v1");
  try {
    store.fetch(shards.url(0), 100000, copy, policy);
    ADD_FAILURE() << "the fetch went on without the folder's lock";
  } catch (const detail::ShardCacheFolderError& e) {
    EXPECT_NE(
        std::string(e.what()).find("cannot lock " + lock + ": another process has held it for 1 s"),
        std::string::npos)
        << e.what();
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 3.0);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_EQ(store.fetch(shards.url(0), 100000, copy, policy), 100000u);
}

// A partial download whose process is gone, and one of another time's layout, are swept; one
// whose download still runs counts against the limit until it ends.
TEST(HostileCache, StalePartialsAreSweptAndLiveOnesCount) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  constexpr std::size_t kBytes = 1 << 20;
  Shards shards(dir, 2, kBytes, "limit_rate 200k;");
  ASSERT_TRUE(shards.nginx->started());
  const std::string root = (dir.path() / "cache").string();
  const ShardStore store(root, 4 * kBytes);
  const fs::path folder = store.folder();
  // Left by a process killed an hour ago (another shard's: the next download is not of it).
  write_file(folder / "00000000000000aa.tar.part.Xy12Zq", random_bytes(5000, 1));
  set_mtime(folder / "00000000000000aa.tar.part.Xy12Zq", 7200);
  EXPECT_EQ(store.used(), 0u);
  EXPECT_EQ(partials(folder), 0) << "a partial of a dead download was not swept";

  const std::string copy = detail::shard_copy_path(root, shards.url(0), kBytes, "v1");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      store.fetch(shards.url(0), kBytes, copy, detail::RemotePolicy{});
    } catch (...) {
    }
    ::_exit(0);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (partials(folder) == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // The download under way holds its whole size: only 3 of the 4 shards' room is left.
  EXPECT_EQ(store.used(), kBytes);
  std::vector<std::string> evicted;
  EXPECT_FALSE(store.make_room(3 * kBytes + 1, {}, evicted));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(store.used(), 0u);
  EXPECT_EQ(partials(folder), 0);
}

// Four processes share one folder whose limit holds three shards and fetch twelve shards each,
// in different orders, each with a limit of its own that it keeps: the folder's copies and
// partial downloads together never pass the limit.
TEST(HostileCache, TheLimitHoldsForTheFolderAcrossLoaders) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  constexpr std::size_t kBytes = 400000;
  constexpr int kShards = 12;
  Shards shards(dir, kShards, kBytes, "limit_rate 4m;");
  ASSERT_TRUE(shards.nginx->started());
  const std::string root = (dir.path() / "cache").string();
  constexpr std::uint64_t kLimit = 3 * kBytes;
  const fs::path folder = ShardStore(root, kLimit).folder();
  std::vector<pid_t> children;
  for (int c = 0; c < 4; ++c) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        const ShardStore store(root, kLimit);
        for (int k = 0; k < kShards; ++k) {
          const int i = (k * 5 + c * 3) % kShards;
          const std::string copy = detail::shard_copy_path(root, shards.url(i), kBytes, "v1");
          std::vector<std::string> evicted;
          store.make_room(kBytes, {}, evicted);
          store.fetch(shards.url(i), kBytes, copy, detail::RemotePolicy{});
        }
      } catch (...) {
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  std::uintmax_t most = 0;
  std::size_t running = children.size();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (running > 0 && std::chrono::steady_clock::now() < until) {
    most = std::max(most, cache_bytes(folder));
    for (pid_t& pid : children) {
      int status = 0;
      if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        pid = -1;
        --running;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (pid_t pid : children) {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  EXPECT_EQ(running, 0u) << "the loaders did not finish in 60 s";
  EXPECT_LE(most, kLimit) << "the folder held " << most << " bytes, over its limit " << kLimit;
  // The limit was reached (the loaders did share the folder), never passed.
  EXPECT_GT(most, kLimit - kBytes) << most;
  std::printf("the folder held at most %ju bytes of a limit of %ju\n", most,
              static_cast<std::uintmax_t>(kLimit));
}

// Two loaders (one with worker processes, one without) share one cache folder whose limit holds
// four of ten shards, with other seeds, so that they want other shards at once; the copies a first
// run left were each replaced by a symbolic link to a file of the same size elsewhere. Both
// deliver what they deliver from local disk, no link's target is read or touched, and the
// folder's copies and downloads together never pass the limit.
TEST(HostileCache, LoadersSharingAFolderKeepItsLimitAndNeverReadAPlantedCopy) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = dir.path() / "www";
  ASSERT_NO_FATAL_FAILURE(test::pack_jpeg_shards(www, 10));
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  std::vector<std::uintmax_t> sizes;
  for (int i = 0; i < 10; ++i)
    sizes.push_back(fs::file_size(www / ("train-" + std::to_string(i) + ".tar")));
  std::sort(sizes.rbegin(), sizes.rend());
  const std::uint64_t limit = sizes[0] + sizes[1] + sizes[2] + sizes[3];
  Options lo = test::fashion_options(2, 16);
  lo.data = (www / "train-{0..9}.tar").string();
  lo.cache_dir = (dir.path() / "cache").string();
  lo.height = lo.width = 32;
  lo.shuffle_window = 2;
  std::vector<test::Delivered> expected;
  for (std::uint64_t seed : {1, 2}) {
    lo.seed = seed;
    Loader local(lo);
    expected.push_back(test::collect(local));
  }
  Options o = lo;
  o.data = nginx.url() + "/train-{0..9}.tar";
  o.cache_limit = limit;
  const fs::path folder = dir.path() / "cache/shards";
  {
    Loader first(o);
    test::collect(first);
  }
  std::vector<std::pair<fs::path, std::int64_t>> planted;
  for (const auto& e : fs::directory_iterator(folder)) {
    if (e.path().extension() != ".tar") continue;
    const fs::path target = dir.path() / ("planted-" + std::to_string(planted.size()));
    write_file(target, random_bytes(fs::file_size(e.path()), 7));
    set_mtime(target, 3600);
    fs::remove(e.path());
    fs::create_symlink(target, e.path());
    planted.emplace_back(target, mtime_ns(target));
  }
  ASSERT_FALSE(planted.empty());

  std::atomic<bool> done{false};
  std::uintmax_t most = 0;
  std::thread sampler([&] {
    while (!done) {
      most = std::max(most, cache_bytes(folder));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::vector<test::Delivered> got(2);
  std::vector<std::string> errors(2);
  test::LogLines log;
  o.log = log.sink();
  std::vector<std::thread> loaders;
  for (int k = 0; k < 2; ++k) {
    loaders.emplace_back([&, k] {
      Options mine = o;
      mine.seed = static_cast<std::uint64_t>(k + 1);
      mine.workers = k == 0 ? 0 : 2;  // the pipeline in this process, and in worker processes
      try {
        Loader l(mine);
        got[static_cast<std::size_t>(k)] = test::collect(l);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(k)] = e.what();
      }
    });
  }
  for (std::thread& t : loaders) t.join();
  done = true;
  sampler.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_TRUE(got[0] == expected[0]);
  EXPECT_TRUE(got[1] == expected[1]);
  for (const auto& [target, time] : planted) EXPECT_EQ(mtime_ns(target), time) << target;
  EXPECT_TRUE(
      log.contains("is not a copy stoke recorded (a planted file or symbolic link, or an "
                   "earlier version's copy): not read;"));
  for (const auto& e : fs::directory_iterator(folder))  // each shard fetched again over its link
    EXPECT_FALSE(fs::is_symlink(e.path())) << e.path();
  EXPECT_LE(most, limit) << "the folder held " << most << " bytes, over its limit " << limit;
  std::printf("the folder held at most %ju bytes of a limit of %ju\n", most,
              static_cast<std::uintmax_t>(limit));
}

}  // namespace
}  // namespace stoke
