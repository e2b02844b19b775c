#include "plan/shared_order.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "plan/epoch_plan.hpp"
#include "test_support.hpp"

namespace stoke::detail {
namespace {

namespace fs = std::filesystem;

// The order files in `folder`, by name.
std::vector<std::string> order_files(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(folder)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// This process's anonymous resident memory (its heap and private mappings), in bytes.
std::int64_t rss_anon() {
  std::ifstream in("/proc/self/status");
  std::string key;
  std::int64_t kib = 0;
  while (in >> key) {
    if (key == "RssAnon:") {
      in >> kib;
      return kib * 1024;
    }
  }
  return -1;
}

PlanConfig shuffled(std::int64_t samples, const std::string& folder) {
  PlanConfig c;
  c.samples = samples;
  c.batch = 10;
  c.seed = 17;
  c.order_folder = folder;
  return c;
}

TEST(SharedOrder, RanksOfAMachineMapOneFileHoldingTheOrderEachWouldHaveComputed) {
  test::TempDir cache;
  const std::string folder = order_folder(cache.str());
  ASSERT_EQ(folder, cache.str() + "/orders");
  EXPECT_EQ(::access(folder.c_str(), W_OK), 0);
  EpochPlan alone(shuffled(10'000, ""));
  std::vector<EpochPlan> ranks;
  for (int r = 0; r < 4; ++r) ranks.emplace_back(shuffled(10'000, folder));
  for (std::int64_t epoch : {0, 1}) {
    const std::vector<std::int64_t> want = alone.order(epoch);
    for (EpochPlan& p : ranks) {
      EXPECT_EQ(p.order(epoch), want);
      EXPECT_TRUE(p.order_shared(epoch));
    }
    EXPECT_FALSE(alone.order_shared(epoch));
  }
  // One file an epoch: 64 bytes of header and 4 a sample.
  const std::vector<std::string> files = order_files(folder);
  ASSERT_EQ(files.size(), 2u);
  for (const std::string& f : files) {
    EXPECT_TRUE(f.ends_with(".stoke-order")) << f;
    EXPECT_EQ(fs::file_size(folder + "/" + f), 64u + 4u * 10'000u);
    struct stat st {};
    ASSERT_EQ(::stat((folder + "/" + f).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
  // Epoch 2 makes epoch 0's file go: each rank keeps only the last two. Rank 1 still maps
  // epoch 0's: its mapping stays whole.
  const std::vector<std::int64_t> want0 = alone.order(0), want2 = alone.order(2);
  EXPECT_EQ(ranks[0].order(2), want2);
  EXPECT_EQ(order_files(folder).size(), 2u);
  EXPECT_TRUE(ranks[1].order_shared(0));
  EXPECT_EQ(ranks[1].order(0), want0);
  EXPECT_EQ(order_files(folder).size(), 2u);  // (cached: not computed, nor written, again)
}

TEST(SharedOrder, OnlyLocalFileSystemsShareOrders) {
  test::TempDir dir;
  EXPECT_TRUE(local_file_system(dir.str()));  // (ext4 or tmpfs here)
  EXPECT_FALSE(local_file_system("/proc"));
  EXPECT_FALSE(local_file_system(dir.str() + "/missing"));
}

TEST(SharedOrder, AFileThatIsNotThisOrderIsReplacedAndNeverRead) {
  test::TempDir cache;
  const std::string folder = order_folder(cache.str());
  EpochPlan writer(shuffled(1'000, folder));
  const std::vector<std::int64_t> want = writer.order(0);
  ASSERT_EQ(order_files(folder).size(), 1u);
  const std::string file = folder + "/" + order_files(folder)[0];
  // Another order under the same name: entries 0 and 1 swapped, or the header's count changed.
  for (int damage = 0; damage < 3; ++damage) {
    std::string bytes;
    {
      std::ifstream in(file, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_EQ(bytes.size(), 64u + 4'000u);
    if (damage == 0) std::swap_ranges(bytes.begin() + 64, bytes.begin() + 68, bytes.begin() + 68);
    if (damage == 1) bytes[16] ^= 1;
    if (damage == 2) bytes.resize(bytes.size() - 4);
    fs::remove(file);
    std::ofstream(file, std::ios::binary) << bytes;
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
    EpochPlan reader(shuffled(1'000, folder));
    EXPECT_EQ(reader.order(0), want) << "damage " << damage;
    EXPECT_TRUE(reader.order_shared(0));  // its own file, written in place of the wrong one
    EXPECT_EQ(fs::file_size(file), 64u + 4'000u);
  }
  // A file with another link (a hard link planted to a file elsewhere) is not read either: it
  // is replaced, and the other name keeps its bytes.
  const std::string elsewhere = cache.str() + "/elsewhere";
  {
    std::ifstream in(file, std::ios::binary);
    std::ofstream(elsewhere, std::ios::binary) << in.rdbuf();
  }
  fs::remove(file);
  fs::create_hard_link(elsewhere, file);
  ASSERT_EQ(fs::hard_link_count(file), 2u);
  EpochPlan hard(shuffled(1'000, folder));
  EXPECT_EQ(hard.order(0), want);
  EXPECT_TRUE(hard.order_shared(0));
  EXPECT_EQ(fs::hard_link_count(file), 1u);
  EXPECT_EQ(fs::hard_link_count(elsewhere), 1u);
  // A symbolic link by that name is not followed: its target is left alone and unread.
  const std::string target = cache.str() + "/target";
  std::ofstream(target) << "not an order";
  fs::remove(file);
  fs::create_symlink(target, file);
  EpochPlan linked(shuffled(1'000, folder));
  EXPECT_EQ(linked.order(0), want);
  std::ifstream in(target);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "not an order");
}

TEST(SharedOrder, RanksComputingAtOnceEndWithOneFileAndTheSameOrder) {
  test::TempDir cache;
  const std::string folder = order_folder(cache.str());
  const std::vector<std::int64_t> want = EpochPlan(shuffled(200'000, "")).order(3);
  std::vector<std::vector<std::int64_t>> got(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = EpochPlan(shuffled(200'000, folder)).order(3); });
  for (std::thread& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
  EXPECT_EQ(order_files(folder).size(), 1u);  // no temporary file left either
}

TEST(SharedOrder, ASharedOrderCostsTheProcessNoMemoryOfItsOwn) {
  // 1 M samples: 4 MB of order. Shared, the process's anonymous memory does not grow by it.
#ifdef STOKE_TEST_SANITIZED
  GTEST_SKIP() << "the sanitizers' shadow memory grows with every byte read";
#endif
  test::TempDir cache;
  const std::string folder = order_folder(cache.str());
  const std::int64_t n = 1'000'000;
  EpochPlan own(shuffled(n, ""));
  std::int64_t before = rss_anon();
  own.order_shared(0);  // (computes it)
  const std::int64_t own_growth = rss_anon() - before;
  EpochPlan shared(shuffled(n, folder));
  before = rss_anon();
  EXPECT_TRUE(shared.order_shared(0));
  const std::int64_t shared_growth = rss_anon() - before;
  EXPECT_GE(own_growth, 4 * n * 9 / 10) << own_growth;
  EXPECT_LT(shared_growth, 4 * n / 10) << shared_growth;
}

TEST(SharedOrder, WithoutAUsableFolderEachPlanKeepsItsOwn) {
  EXPECT_EQ(order_folder(""), "");
  test::TempDir cache;
  // A cache root below a regular file cannot be made; one writable by every user is refused.
  std::ofstream(cache.str() + "/file") << "x";
  EXPECT_EQ(order_folder(cache.str() + "/file/cache"), "");
  fs::create_directory(cache.str() + "/open");
  fs::permissions(cache.str() + "/open", fs::perms::all);
  EXPECT_EQ(order_folder(cache.str() + "/open"), "");
  EXPECT_FALSE(fs::exists(cache.str() + "/open/orders"));
  EpochPlan plan(shuffled(1'000, ""));
  EXPECT_EQ(plan.order(0), EpochPlan(shuffled(1'000, "")).order(0));
  EXPECT_FALSE(plan.order_shared(0));
}

TEST(SharedOrder, AnUnshuffledOrderIsTheIdentityAndNoFile) {
  test::TempDir cache;
  const std::string folder = order_folder(cache.str());
  PlanConfig c = shuffled(100, folder);
  c.shuffle = false;
  EpochPlan plan(c);
  std::vector<std::int64_t> ids(10);
  std::vector<std::uint8_t> valid(10);
  plan.batch(0, 3, ids, valid);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{30, 31, 32, 33, 34, 35, 36, 37, 38, 39}));
  EXPECT_EQ(plan.sample_at(1, 77), 77);
  EXPECT_TRUE(order_files(folder).empty());
}

}  // namespace
}  // namespace stoke::detail
