// The shard cache's folder (data/shard_cache.hpp): least recently used copies go first and
// wanted ones never (tests/loader/data/hostile_cache_test.cpp has what it does with files it did
// not write); a download killed half way leaves no copy anyone could read, and the next download of
// that shard clears what it left.
#include "data/shard_cache.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "servers.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using detail::ShardStore;

void write_bytes(const fs::path& path, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  std::ofstream(path, std::ios::binary) << bytes;
}

// Sets a file's modification time to `seconds` past the epoch: its last use, for the LRU.
void set_used(const fs::path& path, long seconds) {
  const timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(ShardStore, MakingRoomEvictsTheLeastRecentlyUsedCopiesButNeverOnesWanted) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = dir.path() / "www";
  fs::create_directories(www);
  const auto name = [](int i) { return fs::path("c").concat(std::to_string(i)).concat(".tar"); };
  for (int i = 0; i < 4; ++i) write_bytes(www / name(i), 1000, static_cast<unsigned>(i));
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  ShardStore store(dir.str(), 4000);
  const fs::path folder = store.folder();
  std::vector<std::string> c;  // the copies, fetched through the store (only those it evicts)
  for (int i = 0; i < 4; ++i) {
    const std::string url = nginx.url() + "/" + name(i).string();
    c.push_back(detail::shard_copy_path(dir.str(), url, 1000, "v1"));
    ASSERT_EQ(store.fetch(url, 1000, c.back(), detail::RemotePolicy{}), 1000u);
    set_used(c.back(), 1000 + i);  // c0 is the oldest
  }
  write_bytes(folder / "c9.tar.part.abcdef", 5000, 9);  // not a name stoke gives: left alone
  EXPECT_EQ(store.used(), 4000u);
  std::vector<std::string> evicted;
  // Room for 1500 more, with c0 wanted: c1 and c2 go (the two least recently used of the rest).
  EXPECT_TRUE(store.make_room(1500, {c[0]}, evicted));
  EXPECT_EQ(evicted, (std::vector<std::string>{c[1], c[2]}));
  EXPECT_TRUE(fs::exists(c[0]));
  EXPECT_TRUE(fs::exists(c[3]));
  EXPECT_FALSE(fs::exists(c[1]));
  EXPECT_TRUE(fs::exists(folder / "c9.tar.part.abcdef"));
  for (const auto& e : fs::directory_iterator(folder))  // no lock file per copy
    EXPECT_FALSE(e.path().extension() == ".lock" && e.path().filename() != "stoke-folder.lock")
        << e.path();
  // Using c0 makes c3 the least recently used; with both wanted nothing can go.
  EXPECT_TRUE(store.use(c[0]));
  EXPECT_FALSE(store.use(c[1]));
  evicted.clear();
  EXPECT_FALSE(store.make_room(2500, {c[0], c[3]}, evicted));
  EXPECT_TRUE(evicted.empty());
  EXPECT_TRUE(store.make_room(2500, {c[0]}, evicted));
  EXPECT_EQ(evicted, (std::vector<std::string>{c[3]}));
}

TEST(ShardStore, AnUnusableFolderIsAConfigErrorThatSaysWhatToDo) {
  test::TempDir dir;
  std::ofstream(dir.path() / "file") << "x";
  try {
    ShardStore store((dir.path() / "file").string(), 1000);
    FAIL() << "a file was taken for a folder";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cache_limit to 0"), std::string::npos) << e.what();
  }
}

// A process downloading a shard from a slow server is killed mid-transfer: the copy's name
// never appears (only a .part file), and the next download, from a fast server, clears the
// partial file and puts the whole shard in place.
TEST(ShardStore, AKilledDownloadLeavesNoCopyAndTheNextOneClearsItsRemains) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = dir.path() / "www";
  fs::create_directories(www);
  constexpr std::size_t kBytes = 3 << 20;
  write_bytes(www / "shard.tar", kBytes, 7);
  test::Nginx slow(www, dir.path() / "slow", "", "limit_rate 256k;");
  test::Nginx fast(www, dir.path() / "fast");
  ASSERT_TRUE(slow.started() && fast.started());
  const std::string root = (dir.path() / "cache").string();
  const ShardStore store(root, std::uint64_t{1} << 30);
  const std::string copy = detail::shard_copy_path(root, "shard", kBytes, "v1");
  const detail::RemotePolicy policy;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      store.fetch(slow.url() + "/shard.tar", kBytes, copy, policy);
    } catch (...) {
    }
    ::_exit(0);
  }
  // Once the partial file exists (its bytes arrive in pieces of several MiB, at 256 KiB/s),
  // the downloader is killed a moment into the transfer.
  const auto parts = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(store.folder()))
      n += e.path().filename().string().find(".part.") != std::string::npos ? 1 : 0;
    return n;
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (parts() == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(parts(), 1);
  EXPECT_FALSE(fs::exists(copy));
  EXPECT_EQ(store.used(), 0u);

  EXPECT_EQ(store.fetch(fast.url() + "/shard.tar", kBytes, copy, policy), kBytes);
  EXPECT_EQ(parts(), 0);
  std::ifstream a(copy, std::ios::binary), b(www / "shard.tar", std::ios::binary);
  EXPECT_TRUE(std::equal(std::istreambuf_iterator<char>(a), {}, std::istreambuf_iterator<char>(b)));
  // Fetching a copy that is there downloads nothing.
  EXPECT_EQ(store.fetch(fast.url() + "/shard.tar", kBytes, copy, policy), 0u);
}

}  // namespace
}  // namespace stoke
