// Shards on real servers on 127.0.0.1: nginx over HTTP and SeaweedFS over S3 (SigV4) give the
// same batches as the same shards on local disk, resume exactly, survive a restart and a rate
// limit (429s) unchanged, keep what precedes the cut of a shard truncated on the server, and
// fail clearly: a wrong secret names the bucket and the 403, an endpoint nobody listens on ends
// within the deadline.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "common/time_source.hpp"
#include "loader_environment.hpp"
#include "servers.hpp"
#include "stoke/error.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;

using test::ScopedEnv;

using test::run;
using test::shard_options;

// testdata/jpeg (96 images) as shards of `samples` in dir/www; by default 3 shards, the third
// without its sidecar, so that one is indexed by walking its headers over the network.
fs::path pack_shards(const test::TempDir& dir, int samples = 40) {
  const fs::path www = dir.path() / "www";
  test::pack_jpeg_shards(www, samples);
  if (samples == 40) fs::remove(www / "train-2.tar.idx");
  return www;
}

// pack_shards' shards served by nginx from dir/www, and what a loader reading them from local
// disk delivers.
struct ServedShards {
  test::TempDir dir;
  fs::path www = pack_shards(dir);
  test::Nginx nginx{www, dir.path() / "nginx"};
  test::Delivered local() {
    Loader loader(shard_options((www / "train-{0..2}.tar").string(), dir));
    return test::collect(loader);
  }
};

TEST(RemoteShards, FromNginxTheSameBatchesAsFromLocalDisk) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  ServedShards served;
  const test::TempDir& dir = served.dir;
  const test::Nginx& nginx = served.nginx;
  ASSERT_TRUE(nginx.started()) << "nginx did not start: see " << dir.str() << "/nginx";
  const test::Delivered expected = served.local();
  // The cache's entries and when they were written, by name.
  const auto entries = [&] {
    std::map<std::string, fs::file_time_type> out;
    for (const auto& e : fs::directory_iterator(dir.path() / "cache/index"))
      out[e.path().filename().string()] = e.last_write_time();
    return out;
  };
  std::map<std::string, fs::file_time_type> written;
  for (int pass = 0; pass < 2; ++pass) {  // the second indexes from the local index cache
    Loader remote(shard_options(nginx.url() + "/train-{0..2}.tar", dir));
    EXPECT_EQ(remote.dataset_size(), 96);
    EXPECT_TRUE(test::collect(remote) == expected) << "pass " << pass;
    if (pass == 0) written = entries();
  }
  EXPECT_EQ(written.size(), 3u);
  EXPECT_TRUE(entries() == written) << "an index read from the cache was written again";
}

// A dataset-level index naming shards on nginx (a wids JSON on local disk): the same batches as
// the shards on local disk, each shard indexed over the network by the worker that first reads
// it (the third without its sidecar, so by a walk of its headers), and its samples read by
// ranged GETs.
TEST(RemoteShards, ADatasetLevelIndexOfShardsOnNginxDeliversWhatTheShardsDeliver) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  ServedShards shards;
  const test::TempDir& dir = shards.dir;
  test::Nginx& nginx = shards.nginx;
  const fs::path& www = shards.www;
  ASSERT_TRUE(nginx.started()) << "nginx did not start: see " << dir.str() << "/nginx";
  Loader local(shard_options((www / "train-{0..2}.tar").string(), dir));
  const test::Delivered expected = test::collect(local);
  const fs::path index = dir.path() / "remote.wids.json";
  std::ofstream(index) << R"({"__kind__": "wids-shard-index-v1", "shardlist": [)"
                       << R"({"url": ")" << nginx.url() << R"(/train-0.tar", "nsamples": 40}, )"
                       << R"({"url": ")" << nginx.url() << R"(/train-1.tar", "nsamples": 40}, )"
                       << R"({"url": ")" << nginx.url() << R"(/train-2.tar", "nsamples": 16}]})";
  std::uintmax_t shard_bytes = 0;
  for (int i = 0; i < 3; ++i)
    shard_bytes += fs::file_size(www / ("train-" + std::to_string(i) + ".tar"));
  Loader remote(shard_options(index.string(), dir));
  EXPECT_EQ(remote.dataset_size(), 96);
  EXPECT_TRUE(test::collect(remote) == expected);
  const Stats stats = remote.stats();
  EXPECT_EQ(stats.skipped, 0);
  // The shard cache fetched each shard whole, once (each looked up on the server first).
  EXPECT_EQ(stats.shard_cache, "on: " + (dir.path() / "cache/shards").string() + ", limit 16 GiB");
  EXPECT_EQ(static_cast<std::uintmax_t>(stats.cache_bytes_fetched), shard_bytes);
  EXPECT_EQ(stats.cache_misses, 3);
  std::uintmax_t copies = 0;
  for (const auto& e : fs::directory_iterator(dir.path() / "cache/shards"))
    if (e.path().extension() == ".tar") copies += fs::file_size(e.path());
  EXPECT_EQ(copies, shard_bytes);
  // The index on the server too, naming its shards relative to itself (as stoke-pack writes):
  // the same URLs, so the same copies, fetched no more.
  std::ofstream(www / "sizes.json")
      << R"({"train-0.tar": 40, "train-1.tar": 40, "train-2.tar": 16})";
  Loader served(shard_options(nginx.url() + "/sizes.json", dir));
  EXPECT_TRUE(test::collect(served) == expected);
  EXPECT_EQ(served.stats().cache_bytes_fetched, 0);
  EXPECT_EQ(served.stats().cache_misses, 0);
  // A shard missing from its server is a bad shard, as without the cache: its look-up fails,
  // the workers try the server, and its samples are skipped; the other shards are cached.
  const fs::path gone = dir.path() / "gone.wids.json";
  std::ofstream(gone) << R"({"__kind__": "wids-shard-index-v1", "shardlist": [)"
                      << R"({"url": ")" << nginx.url() << R"(/train-0.tar", "nsamples": 40}, )"
                      << R"({"url": ")" << nginx.url() << R"(/gone.tar", "nsamples": 16}, )"
                      << R"({"url": ")" << nginx.url() << R"(/train-2.tar", "nsamples": 16}]})";
  {
    test::LogLines log;
    Options o = shard_options(gone.string(), dir);
    o.log = log.sink();
    Loader l(o);
    test::collect(l);
    EXPECT_EQ(l.stats().skipped, 16);
    EXPECT_TRUE(log.contains("shard cache: cannot look up " + nginx.url() + "/gone.tar: "));
    EXPECT_EQ(l.stats().cache_bytes_fetched, 0);  // (train-0 and train-2 were cached above)
  }
  // Under a full shuffle every batch reads every shard, whose sizes are not known: no cache.
  Options all = shard_options(index.string(), dir);
  all.shuffle_window = 0;
  Loader unwindowed(all);
  EXPECT_EQ(unwindowed.stats().shard_cache,
            "off: shuffle_window 0 reads every shard of the dataset-level index at once, and their "
            "sizes are not known before they are read; workers read byte ranges from the server "
            "(set shuffle_window to a few shards to cache them)");
  // (Another order, the same samples, read from the server.)
  const test::Delivered read = test::collect(unwindowed);
  std::vector<std::int64_t> ids = read.ids, want = expected.ids;
  std::sort(ids.begin(), ids.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ids, want);
  EXPECT_EQ(unwindowed.stats().skipped, 0);
  EXPECT_EQ(unwindowed.stats().cache_bytes_fetched, 0);
  try {
    Loader missing(shard_options(nginx.url() + "/nothing.json", dir));
    ADD_FAILURE() << "a missing index was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), nginx.url() + "/nothing.json: not found on its server (404)");
  }
  // The server goes away: the first loader's next epoch is read from the copies alone (its
  // workers keep the shards' tables, its prefetcher their look-ups).
  nginx.stop();
  EXPECT_TRUE(test::collect(remote) == test::collect(local));
  EXPECT_EQ(remote.stats().skipped, 0);
  EXPECT_EQ(remote.stats().cache_misses, 3);
}

// Two loaders made at the same time on one index cache folder (ranks of one machine, here two
// threads): both index the shards, the cache ends with one whole entry per shard and no
// temporary file, and a third loader indexing from the cache delivers the same batches.
TEST(RemoteShards, LoadersSharingTheIndexCacheAgree) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  const Options o = shard_options(nginx.url() + "/train-{0..2}.tar", dir);
  test::Delivered first, second;
  std::int64_t fetched[2] = {0, 0};
  std::thread a([&] {
    Loader l(o);
    first = test::collect(l);
    fetched[0] = l.stats().cache_bytes_fetched;
  });
  std::thread b([&] {
    Loader l(o);
    second = test::collect(l);
    fetched[1] = l.stats().cache_bytes_fetched;
  });
  a.join();
  b.join();
  EXPECT_TRUE(first == second);
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir.path() / "cache/index"))
    entries.push_back(e.path().filename().string());
  EXPECT_EQ(entries.size(), 3u);
  for (const auto& e : entries) EXPECT_EQ(e.find(".tmp"), std::string::npos) << e;
  // The shard cache too: one whole copy per shard, each downloaded once between the two (the
  // second loader waits for the first one's download, then finds the copy), no partial file left.
  std::uintmax_t shards = 0, copies = 0;
  for (int i = 0; i < 3; ++i)
    shards += fs::file_size(www / ("train-" + std::to_string(i) + ".tar"));
  for (const auto& e : fs::directory_iterator(dir.path() / "cache/shards")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".part"), std::string::npos) << name;
    if (name.ends_with(".tar")) copies += fs::file_size(e.path());
  }
  EXPECT_EQ(copies, shards);
  EXPECT_EQ(static_cast<std::uintmax_t>(fetched[0] + fetched[1]), shards);
  Loader third(o);
  EXPECT_TRUE(test::collect(third) == first);
}

// The server goes away mid-epoch and comes back: without a shard cache the workers' ranged
// reads retry until it answers, and the epoch is the one an undisturbed run delivers, byte
// for byte.
TEST(RemoteShards, AServerRestartedMidEpochLosesNothing) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  Loader local(shard_options((www / "train-{0..2}.tar").string(), dir));
  const test::Delivered expected = test::collect(local);
  Options o = shard_options(nginx.url() + "/train-{0..2}.tar", dir);
  o.prefetch = 2;
  o.cache_limit = 0;  // no local copies: the workers read byte ranges from the server
  Loader remote(o);
  test::Delivered got = test::collect(remote, 1);
  nginx.stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // reads fail meanwhile
  nginx.start();
  ASSERT_TRUE(nginx.started());
  while (auto b = remote.next()) test::append(got, *b);
  EXPECT_TRUE(got == expected);
  EXPECT_EQ(remote.stats().skipped, 0);
}

// A server that turns most requests away (nginx's rate limit answering 429 with Retry-After)
// slows the epoch down and changes nothing in it: every refused read is retried.
TEST(RemoteShards, ARateLimitingServerIsRetriedAndChangesNothing) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::Nginx nginx(www, dir.path() / "nginx",
                    "  limit_req_zone $binary_remote_addr zone=few:1m rate=50r/s;\n",
                    "limit_req zone=few; limit_req_status 429; "
                    "add_header Retry-After 0.05 always;");
  ASSERT_TRUE(nginx.started());
  Loader local(shard_options((www / "train-{0..2}.tar").string(), dir));
  const test::Delivered expected = test::collect(local);
  Options o = shard_options(nginx.url() + "/train-{0..2}.tar", dir);
  o.cache_limit = 0;  // every sample a ranged request of its own
  Loader remote(o);
  EXPECT_TRUE(test::collect(remote) == expected);
  EXPECT_EQ(remote.stats().skipped, 0);
  // The limit did refuse requests: the error log records each one.
  std::ifstream log(dir.path() / "nginx/error.log");
  const std::string text{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  EXPECT_NE(text.find("limiting requests"), std::string::npos);
}

// A shard cut short on the server (its sidecar, made for the whole shard, now stale): the
// members before the cut are read, the damage is counted once, nothing else changes.
TEST(RemoteShards, AShardTruncatedOnTheServerKeepsWhatPrecedesTheCut) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  const auto whole = fs::file_size(www / "train-1.tar");
  fs::resize_file(www / "train-1.tar", whole / 2);
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  test::LogLines log;
  Options o = shard_options(nginx.url() + "/train-{0..2}.tar", dir);
  o.log = log.sink();
  Loader remote(o);
  EXPECT_GT(remote.dataset_size(), 40 + 16);  // shard 0, about half of shard 1, shard 2
  EXPECT_LT(remote.dataset_size(), 96);
  EXPECT_TRUE(log.contains("train-1.tar.idx does not describe"));
  EXPECT_TRUE(log.contains("is cut short by the shard's end"));
  test::collect(remote);
  EXPECT_EQ(remote.stats().skipped_by_reason.at("corrupt"), 1);
}

std::uintmax_t shard_bytes(const fs::path& www, std::initializer_list<int> shards) {
  std::uintmax_t n = 0;
  for (int i : shards) n += fs::file_size(www / ("train-" + std::to_string(i) + ".tar"));
  return n;
}

// The bytes of the shard copies in a cache folder (the loader may evict one while it is read).
std::uintmax_t copies_bytes(const fs::path& folder) {
  std::uintmax_t n = 0;
  for (const auto& e : fs::directory_iterator(folder)) {
    std::error_code ec;
    const std::uintmax_t bytes = fs::file_size(e.path(), ec);
    if (!ec && e.path().extension() == ".tar") n += bytes;
  }
  return n;
}

// Waits up to 10 s for the loader's cache to have fetched `bytes`.
bool fetched_at_least(const Loader& loader, std::uintmax_t bytes) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (static_cast<std::uintmax_t>(loader.stats().cache_bytes_fetched) < bytes) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Waits up to 10 s for the loader's cache hits to reach `hits`; false if they do not, or pass it.
bool hits_reach(const Loader& loader, std::int64_t hits) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (loader.stats().cache_hits < hits) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a count past it would show now
  return loader.stats().cache_hits == hits;
}

// The first epoch fetches each shard once; the second finds them all on disk, and its workers
// read only local bytes: it is delivered whole, byte for byte, with the server gone.
TEST(RemoteShards, TheShardCacheFetchesEachShardOnceAndWorkersReadTheLocalCopies) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  Loader local(shard_options((www / "train-{0..2}.tar").string(), dir));
  const test::Delivered epoch0 = test::collect(local);
  const test::Delivered epoch1 = test::collect(local);
  Loader remote(shard_options(nginx.url() + "/train-{0..2}.tar", dir));
  EXPECT_EQ(remote.stats().shard_cache.rfind("on: " + (dir.path() / "cache/shards").string(), 0),
            0u)
      << remote.stats().shard_cache;
  EXPECT_TRUE(test::collect(remote) == epoch0);
  Stats s = remote.stats();
  EXPECT_EQ(static_cast<std::uintmax_t>(s.cache_bytes_fetched), shard_bytes(www, {0, 1, 2}));
  EXPECT_EQ(s.cache_misses, 3);
  // Each shard counts once an epoch, when the consumer's epoch first wants it. Once the consumer
  // has the epoch's last batch it wants the next epoch's, so the prefetcher's walk counts all 3
  // next-epoch uses as hits (the copies are on disk), and no more: 0 hits for the first epoch.
  EXPECT_TRUE(hits_reach(remote, 3)) << remote.stats().cache_hits;
  nginx.stop();
  EXPECT_TRUE(test::collect(remote) == epoch1);
  // The second epoch's 3 were counted before it began; then the third epoch's 3.
  EXPECT_TRUE(hits_reach(remote, 6)) << remote.stats().cache_hits;
  s = remote.stats();
  EXPECT_EQ(s.cache_misses, 3);
  EXPECT_EQ(s.skipped, 0);
}

// A cache that holds two of the three shards: each window of one shard is fetched while the
// one before is read, the least recently used copy makes room, the folder never holds more
// than the limit, and the batches are the local ones. A limit below one shard turns the cache
// off, with the reason, and changes nothing either.
TEST(RemoteShards, ASmallShardCacheEvictsWithinItsLimitAndChangesNothing) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  Options lo = shard_options((www / "train-{0..2}.tar").string(), dir);
  lo.shuffle_window = 1;
  Loader local(lo);
  const test::Delivered epoch0 = test::collect(local);
  const test::Delivered epoch1 = test::collect(local);
  Options o = shard_options(nginx.url() + "/train-{0..2}.tar", dir);
  o.shuffle_window = 1;
  o.cache_limit = shard_bytes(www, {0, 1});  // the two largest (shard 2 holds 16 samples)
  {
    Loader remote(o);
    test::Delivered got;
    for (int epoch = 0; epoch < 2; ++epoch) {
      while (auto b = remote.next()) {
        test::append(got, *b);
        EXPECT_LE(copies_bytes(dir.path() / "cache/shards"), o.cache_limit);
      }
    }
    test::Delivered both = epoch0;
    both.pixels.insert(both.pixels.end(), epoch1.pixels.begin(), epoch1.pixels.end());
    both.ids.insert(both.ids.end(), epoch1.ids.begin(), epoch1.ids.end());
    EXPECT_TRUE(got.pixels == both.pixels);
    EXPECT_TRUE(got.ids == both.ids);
    const Stats s = remote.stats();
    EXPECT_GT(s.cache_evictions, 0);
    EXPECT_GT(static_cast<std::uintmax_t>(s.cache_bytes_fetched), shard_bytes(www, {0, 1, 2}));
    EXPECT_EQ(s.skipped, 0);
  }
  // With the cache off, a file at a copy's name is never read, even one of the copy's size that
  // stoke did not write there: the workers read the server's bytes.
  for (const auto& e : fs::directory_iterator(dir.path() / "cache/shards")) {
    if (e.path().extension() != ".tar") continue;
    const auto size = fs::file_size(e.path());
    fs::remove(e.path());
    std::ofstream(e.path(), std::ios::binary) << std::string(size, 'x');
  }
  o.cache_limit = fs::file_size(www / "train-0.tar") - 1;
  test::LogLines log;
  o.log = log.sink();
  Loader uncached(o);
  EXPECT_EQ(uncached.stats().shard_cache.rfind("off: cache_limit", 0), 0u)
      << uncached.stats().shard_cache;
  EXPECT_TRUE(log.contains("raise cache_limit, or lower shuffle_window"));
  EXPECT_TRUE(test::collect(uncached) == epoch0);
  EXPECT_EQ(uncached.stats().cache_bytes_fetched, 0);
}

// Ten shards, shuffle windows of two, a cache that holds four of them: several fetches run at
// once and the folder still never holds more than the limit. set_epoch() back and forth, with
// the pipeline in worker processes and in-process, gives what the same calls give from local
// disk.
TEST(RemoteShards, TheShardCacheFollowsSetEpochWithinItsLimitWithAndWithoutWorkers) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir, 10);
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  std::vector<std::uintmax_t> sizes;
  for (int i = 0; i < 10; ++i) sizes.push_back(shard_bytes(www, {i}));
  std::sort(sizes.rbegin(), sizes.rend());
  const std::uintmax_t limit = sizes[0] + sizes[1] + sizes[2] + sizes[3];
  const fs::path folder = dir.path() / "cache/shards";
  // Three batches of epoch 0, all of epoch 1, then epoch 0 again from its start.
  const auto run_sequence = [&](Loader& l, bool check_limit) {
    test::Delivered d;
    const auto take = [&](std::int64_t n) {
      for (std::int64_t i = 0; n < 0 || i < n; ++i) {
        auto b = l.next();
        if (!b) break;
        test::append(d, *b);
        if (!check_limit) continue;
        EXPECT_LE(copies_bytes(folder), limit);
      }
    };
    take(3);
    l.set_epoch(1);
    take(-1);
    l.set_epoch(0);
    take(-1);
    return d;
  };
  for (int workers : {2, 0}) {
    Options lo = shard_options((www / "train-{0..9}.tar").string(), dir);
    lo.workers = workers;
    lo.shuffle_window = 2;
    Loader local(lo);
    const test::Delivered expected = run_sequence(local, false);
    Options o = lo;
    o.data = nginx.url() + "/train-{0..9}.tar";
    o.cache_limit = limit;
    {
      Loader remote(o);
      EXPECT_TRUE(run_sequence(remote, true) == expected) << workers << " workers";
      const Stats s = remote.stats();
      EXPECT_GT(s.cache_evictions, 0) << workers << " workers";
      EXPECT_EQ(s.skipped, 0) << workers << " workers";
    }
    fs::remove_all(dir.path() / "cache");
  }
}

// The server goes down for good mid-epoch: the batches whose shards are on disk are delivered,
// then the loader stops with an error naming the shard it could not fetch and why, within the
// deadline; never a sample skipped as if the data were bad.
TEST(RemoteShards, AServerThatStaysDownStopsTheLoaderWithAnErrorNamingTheShard) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  const ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", "2");
  Options lo = shard_options((www / "train-{0..2}.tar").string(), dir);
  lo.shuffle = false;  // shards in order: 0, 1, then 2 once 0 is done and evicted
  Loader local(lo);
  const test::Delivered expected = test::collect(local);
  Options o = lo;
  o.data = nginx.url() + "/train-{0..2}.tar";
  o.cache_limit = shard_bytes(www, {0, 1});
  Loader remote(o);
  test::Delivered got = test::collect(remote, 1);
  ASSERT_TRUE(fetched_at_least(remote, shard_bytes(www, {0, 1})));
  nginx.stop();
  const auto stopped = std::chrono::steady_clock::now();
  try {
    while (auto b = remote.next()) test::append(got, *b);
    FAIL() << "the epoch ended without shard 2";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot fetch shard " + nginx.url() + "/train-2.tar: "), std::string::npos)
        << what;
    EXPECT_NE(what.find("gave up after"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, std::chrono::seconds(8));
  // Batches 0..4 read shards 0 and 1 only (40 + 40 samples, batches of 16).
  ASSERT_EQ(got.ids.size(), 5u * 16);
  EXPECT_TRUE(std::equal(got.pixels.begin(), got.pixels.end(), expected.pixels.begin()));
  EXPECT_EQ(remote.stats().skipped, 0);
  // The consumer waited for batch 5's shard until the fetch gave up (the 2 s deadline).
  EXPECT_GT(remote.stats().cache_fetch_wait_s, 1.0);
}

// The consumer's wait for its batch's shards is measured on the loader's time
// (LoaderEnvironment::time): on a ManualTime that never moves it is none, though the first
// batch waits for a fetch that a slow server makes last a good fraction of a second (on the
// steady clock this loader measures 0.25 to 0.3 s).
TEST(RemoteShards, TheFetchWaitIsMeasuredOnTheLoadersTime) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::Nginx nginx(www, dir.path() / "nginx", "", "limit_rate 4m;");
  ASSERT_TRUE(nginx.started());
  Loader local(shard_options((www / "train-{0..2}.tar").string(), dir));
  const test::Delivered expected = test::collect(local);
  detail::LoaderEnvironment env;
  env.time = std::make_shared<detail::ManualTime>();
  Loader remote =
      detail::LoaderAccess::make(shard_options(nginx.url() + "/train-{0..2}.tar", dir), env);
  EXPECT_TRUE(test::collect(remote) == expected);
  EXPECT_GT(remote.stats().cache_bytes_fetched, 0);
  EXPECT_EQ(remote.stats().cache_fetch_wait_s, 0.0);
}

TEST(RemoteShards, AnEndpointNobodyListensOnFailsWithinTheDeadline) {
  test::TempDir dir;
  const ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", "2");
  const std::string url = "http://127.0.0.1:" + std::to_string(test::free_port()) + "/x.tar";
  const auto start = std::chrono::steady_clock::now();
  try {
    Loader loader(shard_options(url, dir));
    FAIL() << "a shard nobody serves was indexed";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(url + ": gave up after"), std::string::npos) << what;
    EXPECT_NE(what.find("STOKE_REMOTE_DEADLINE_S = 2 s"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(6));
}

class SeaweedFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    STOKE_SKIP_WITHOUT(!test::SeaweedS3::binary().empty(), "SeaweedFS (weed)");
    www_ = pack_shards(dir_);
    s3_ = std::make_unique<test::SeaweedS3>(dir_.path() / "weed");
    ASSERT_TRUE(s3_->started()) << "weed did not start within 60 s; the end of " << s3_->log()
                                << ":" << s3_->log_tail();
    run(s3_->curl("-X PUT " + s3_->endpoint() + "/stoke-test > /dev/null"));
    for (const auto& f : fs::directory_iterator(www_))
      run(s3_->curl("-T " + f.path().string() + " " + s3_->endpoint() + "/stoke-test/data/" +
                    f.path().filename().string() + " > /dev/null"));
    env_.push_back(std::make_unique<ScopedEnv>("AWS_ENDPOINT_URL", s3_->endpoint()));
    env_.push_back(std::make_unique<ScopedEnv>("AWS_ACCESS_KEY_ID", test::SeaweedS3::kAccessKey));
    env_.push_back(
        std::make_unique<ScopedEnv>("AWS_SECRET_ACCESS_KEY", test::SeaweedS3::kSecretKey));
    env_.push_back(std::make_unique<ScopedEnv>("AWS_REGION", "us-east-1"));
  }

  test::TempDir dir_;
  fs::path www_;
  std::unique_ptr<test::SeaweedS3> s3_;
  std::vector<std::unique_ptr<ScopedEnv>> env_;
};

TEST_F(SeaweedFixture, TheSameBatchesAsFromLocalDiskAndAnExactResume) {
  Loader local(shard_options((www_ / "train-{0..2}.tar").string(), dir_));
  const test::Delivered expected = test::collect(local);
  const std::string shards = "s3://stoke-test/data/train-{0..2}.tar";
  Loader remote(shard_options(shards, dir_));
  EXPECT_TRUE(test::collect(remote) == expected);

  // Two batches, then a new loader from the saved state: the rest of the epoch exactly.
  Options first = shard_options(shards, dir_);
  test::Delivered head;
  LoaderState saved;
  {
    Loader l(first);
    head = test::collect(l, 2);
    saved = l.state();
  }
  Options rest = first;
  rest.resume = saved;
  Loader resumed(rest);
  const test::Delivered tail = test::collect(resumed);
  const std::size_t split = head.pixels.size();
  ASSERT_EQ(split + tail.pixels.size(), expected.pixels.size());
  EXPECT_TRUE(std::equal(tail.pixels.begin(), tail.pixels.end(), expected.pixels.begin() + split));
  EXPECT_TRUE(std::equal(tail.ids.begin(), tail.ids.end(),
                         expected.ids.begin() + static_cast<std::ptrdiff_t>(head.ids.size())));

  // A dataset-level index in the bucket, naming the shards beside it: the same batches, each
  // shard looked up (a signed HEAD) and fetched whole into a cache folder of its own.
  const fs::path sizes = dir_.path() / "sizes.json";
  std::ofstream(sizes) << R"({"train-0.tar": 40, "train-1.tar": 40, "train-2.tar": 16})";
  run(s3_->curl("-T " + sizes.string() + " " + s3_->endpoint() +
                "/stoke-test/data/sizes.json > /dev/null"));
  Options indexed = shard_options("s3://stoke-test/data/sizes.json", dir_);
  indexed.cache_dir = (dir_.path() / "indexed-cache").string();
  Loader by_index(indexed);
  EXPECT_TRUE(test::collect(by_index) == expected);
  std::uintmax_t shard_bytes = 0;
  for (int i = 0; i < 3; ++i)
    shard_bytes += fs::file_size(www_ / ("train-" + std::to_string(i) + ".tar"));
  EXPECT_EQ(static_cast<std::uintmax_t>(by_index.stats().cache_bytes_fetched), shard_bytes);
  EXPECT_EQ(by_index.stats().cache_misses, 3);
}

// The S3 server is killed mid-epoch while a shard is still to be fetched, and started again
// on the same ports and data: the fetch retries until it answers, and the epoch is the one an
// undisturbed run delivers.
TEST_F(SeaweedFixture, KillingAndRestartingTheServerMidEpochLosesNothing) {
  Options lo = shard_options((www_ / "train-{0..2}.tar").string(), dir_);
  lo.shuffle = false;  // shards in order: 0, 1, then 2 once 0 is done and evicted
  Loader local(lo);
  const test::Delivered expected = test::collect(local);
  Options o = lo;
  o.data = "s3://stoke-test/data/train-{0..2}.tar";
  o.cache_limit = shard_bytes(www_, {0, 1});
  Loader remote(o);
  test::Delivered got = test::collect(remote, 1);
  ASSERT_TRUE(fetched_at_least(remote, shard_bytes(www_, {0, 1})));
  const std::int64_t before = remote.stats().cache_bytes_fetched;
  s3_->kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  s3_->start();
  ASSERT_TRUE(s3_->started()) << "weed did not start again; the end of " << s3_->log() << ":"
                              << s3_->log_tail();
  while (auto b = remote.next()) test::append(got, *b);
  EXPECT_TRUE(got == expected);
  EXPECT_EQ(remote.stats().skipped, 0);
  // Shard 2 came after the restart (and, when the loader looked ahead into the next epoch
  // meanwhile, the first shard again).
  EXPECT_GE(remote.stats().cache_bytes_fetched - before,
            static_cast<std::int64_t>(fs::file_size(www_ / "train-2.tar")));
}

TEST_F(SeaweedFixture, AWrongSecretNamesTheBucketAndThe403) {
  const ScopedEnv wrong("AWS_SECRET_ACCESS_KEY", "not-the-secret");
  try {
    Loader loader(shard_options("s3://stoke-test/data/train-0.tar", dir_));
    FAIL() << "a wrong secret was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("HEAD s3://stoke-test/data/train-0.tar: HTTP status 403"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("bucket 'stoke-test'"), std::string::npos) << what;
  }
}

TEST_F(SeaweedFixture, AMissingObjectIsNamed) {
  try {
    Loader loader(shard_options("s3://stoke-test/data/train-9.tar", dir_));
    FAIL() << "a missing shard was indexed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("s3://stoke-test/data/train-9.tar: HTTP status 404"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace stoke
