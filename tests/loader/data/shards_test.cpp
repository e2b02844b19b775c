// WebDataset tar shards: the member table of shards written by GNU tar and Python's tarfile
// (ustar, pax, GNU long names), truncated and corrupt shards, sidecar indexes, the shard-list
// forms, locality-aware shuffling, and a loader over shards delivering exactly what it delivers
// over the same images in a folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <opencv2/imgcodecs.hpp>
#include <set>
#include <string>
#include <vector>

#include "data/dataset_index.hpp"
#include "data/shard_list.hpp"
#include "data/tar_index.hpp"
#include "decode/decode.hpp"
#include "plan/epoch_plan.hpp"
#include "stoke/error.hpp"
#include "stoke/pipeline.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

using test::read_file;

namespace fs = std::filesystem;
using detail::ShardIndex;

using test::run;

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

ShardIndex walk(const std::string& bytes) {
  return detail::walk_tar(
      [&](std::uint64_t offset, void* dst, std::size_t n) {
        const std::size_t got = std::min<std::size_t>(n, bytes.size() - offset);
        std::memcpy(dst, bytes.data() + offset, got);
        return got;
      },
      bytes.size());
}

// Shards of testdata/jpeg written by Python's tarfile in `format`.
std::vector<std::string> python_shards(const test::TempDir& dir, const std::string& format,
                                       int shards, bool long_names = false) {
  const std::string prefix = (dir.path() / ("py-" + format)).string();
  run("python3 " STOKE_SOURCE_DIR "/tests/loader/make_shards.py " + test::testdata("jpeg") + " " +
      prefix + " --shards " + std::to_string(shards) + " --format " + format +
      (long_names ? " --long-names" : ""));
  std::vector<std::string> out;
  for (int s = 0; s < shards; ++s) {
    char name[32];
    std::snprintf(name, sizeof name, "-%06d.tar", s);
    out.push_back(prefix + name);
  }
  return out;
}

TEST(TarIndex, GnuTarMembersHaveTheirNamesOffsetsAndSizes) {
  test::TempDir dir;
  write_file(dir.path() / "in/000001.jpg", std::string(1000, 'a'));
  write_file(dir.path() / "in/000001.cls", "7\n");
  write_file(dir.path() / "in/000002.jpg", std::string(513, 'b'));
  write_file(dir.path() / "in/000002.cls", "12");
  write_file(dir.path() / ("in/" + std::string(150, 'x') + ".jpg"), "long");
  run("tar --sort=name --format=gnu -cf " + (dir.path() / "s.tar").string() + " -C " +
      (dir.path() / "in").string() + " .");
  const std::string bytes = read_file(dir.path() / "s.tar");
  const ShardIndex index = walk(bytes);
  EXPECT_EQ(index.damage, "");
  ASSERT_EQ(index.members.size(), 5u);  // the "./" folder entry is not a member
  EXPECT_EQ(index.members[0].name, "./000001.cls");
  EXPECT_EQ(index.members[0].value, "7");
  EXPECT_EQ(index.members[1].name, "./000001.jpg");
  EXPECT_EQ(index.members[1].size, 1000u);
  EXPECT_EQ(bytes.substr(index.members[1].offset, 1000), std::string(1000, 'a'));
  EXPECT_EQ(index.members[2].value, "12");
  EXPECT_EQ(bytes.substr(index.members[3].offset, 513), std::string(513, 'b'));
  EXPECT_EQ(index.members[4].name, "./" + std::string(150, 'x') + ".jpg");  // GNU long name
  EXPECT_EQ(bytes.substr(index.members[4].offset, 4), "long");

  const auto samples = detail::group_samples(index);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].key, "./000001");
  EXPECT_EQ(samples[0].members, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(samples[2].key, "./" + std::string(150, 'x'));
}

TEST(TarIndex, PythonTarfileFormatsAgree) {
  test::TempDir dir;
  std::vector<std::vector<std::string>> names;
  for (const char* format : {"ustar", "pax", "gnu"}) {
    const std::string shard = python_shards(dir, format, 1, /*long_names=*/true).front();
    const ShardIndex index = walk(read_file(shard));
    EXPECT_EQ(index.damage, "") << format;
    std::vector<std::string> n;
    for (const auto& m : index.members) n.push_back(m.name);
    names.push_back(n);
  }
  ASSERT_FALSE(names[0].empty());
  EXPECT_EQ(names[0].front(), std::string(120, 'd') + "/000000.jpg");  // ustar's prefix field
  EXPECT_EQ(names[0], names[1]);                                       // pax path records
  EXPECT_EQ(names[0], names[2]);                                       // GNU long names
}

// The index keeps no member names: a message reads one back from the headers before the data
// (ustar's name and prefix, a pax path record, a GNU long name), as the walk read it. Shards
// written by GNU tar (gnu, posix and ustar formats) and Python's tarfile (ustar, pax, gnu).
TEST(TarIndex, AMembersNameIsReadBackFromTheHeadersBeforeItsData) {
  test::TempDir dir;
  write_file(dir.path() / "in/000001.jpg", std::string(1000, 'a'));
  write_file(dir.path() / "in/000001.cls", "7\n");
  write_file(dir.path() / ("in/" + std::string(150, 'x') + ".jpg"), "long");
  write_file(dir.path() / ("in/" + std::string(120, 'p') + "/" + std::string(90, 'q') + ".jpg"),
             "deep");
  std::vector<std::string> shards;
  for (const char* format : {"gnu", "posix", "ustar"}) {
    const std::string shard = (dir.path() / (std::string("gnu-") + format + ".tar")).string();
    // (ustar cannot hold the 150-character name: GNU tar leaves that member out and says so.)
    run("tar --sort=name --format=" + std::string(format) + " -cf " + shard + " -C " +
        (dir.path() / "in").string() + " . 2>/dev/null || true");
    shards.push_back(shard);
  }
  for (const char* format : {"ustar", "pax", "gnu"})
    shards.push_back(python_shards(dir, format, 1, /*long_names=*/true).front());
  for (const std::string& shard : shards) {
    const std::string bytes = read_file(shard);
    const detail::ReadAt read_at = [&](std::uint64_t offset, void* dst, std::size_t n) {
      const std::size_t got = std::min<std::size_t>(n, bytes.size() - offset);
      std::memcpy(dst, bytes.data() + offset, got);
      return got;
    };
    const ShardIndex index = walk(bytes);
    ASSERT_GE(index.members.size(), 2u) << shard;
    for (const auto& m : index.members)
      EXPECT_EQ(detail::member_name_before(read_at, m.offset), m.name) << shard;
    // Not a member's data: no name.
    EXPECT_EQ(detail::member_name_before(read_at, 0), "") << shard;
    EXPECT_EQ(detail::member_name_before(read_at, index.members[0].offset + 1), "") << shard;
  }
}

TEST(TarIndex, MemberNamesSplitLikeWebDataset) {
  using detail::split_member_name;
  EXPECT_EQ(split_member_name("a/b.seg.png"),
            (std::pair<std::string, std::string>{"a/b", "seg.png"}));
  EXPECT_EQ(split_member_name("x.y/000001.jpg"),
            (std::pair<std::string, std::string>{"x.y/000001", "jpg"}));
  EXPECT_EQ(split_member_name("README").second, "");
  EXPECT_EQ(split_member_name("a/.hidden").second, "");
  EXPECT_EQ(split_member_name("trailing.").second, "");
}

TEST(TarIndex, ATruncatedShardKeepsTheMembersBeforeTheCut) {
  test::TempDir dir;
  const std::string shard = python_shards(dir, "pax", 1).front();
  const std::string whole = read_file(shard);
  const ShardIndex full = walk(whole);
  ASSERT_GE(full.members.size(), 10u);
  // Cut in the middle of the 6th member's data.
  const auto& sixth = full.members[5];
  const std::string cut = whole.substr(0, sixth.offset + sixth.size / 2);
  const ShardIndex index = walk(cut);
  EXPECT_EQ(index.members.size(), 5u);
  EXPECT_NE(
      index.damage.find("is cut short by the shard's end at byte " + std::to_string(cut.size())),
      std::string::npos)
      << index.damage;
}

TEST(TarIndex, ACorruptHeaderEndsTheWalkThere) {
  test::TempDir dir;
  const std::string shard = python_shards(dir, "ustar", 1).front();
  std::string bytes = read_file(shard);
  const ShardIndex full = walk(bytes);
  const std::uint64_t third_header = full.members[2].offset - 512;
  bytes[third_header + 10] ^= 0x55;  // inside the name: the checksum no longer matches
  const ShardIndex index = walk(bytes);
  EXPECT_EQ(index.members.size(), 2u);
  EXPECT_EQ(index.damage, "the member header at byte " + std::to_string(third_header) +
                              " is corrupt (bad checksum or size)");
}

TEST(TarIndex, SidecarRoundTripsAndAStaleOneIsIgnored) {
  test::TempDir dir;
  const std::string bytes = read_file(python_shards(dir, "pax", 1).front());
  const ShardIndex index = walk(bytes);
  const std::string text = detail::format_sidecar(index);
  EXPECT_EQ(text.rfind("# stoke shard index 1 " + std::to_string(bytes.size()) + "\n", 0), 0u);
  const auto back = detail::parse_sidecar(text, bytes.size(), "s.tar.idx");
  ASSERT_TRUE(back);
  ASSERT_EQ(back->members.size(), index.members.size());
  for (std::size_t i = 0; i < index.members.size(); ++i) {
    EXPECT_EQ(back->members[i].name, index.members[i].name);
    EXPECT_EQ(back->members[i].offset, index.members[i].offset);
    EXPECT_EQ(back->members[i].size, index.members[i].size);
    EXPECT_EQ(back->members[i].value, index.members[i].value);
  }
  EXPECT_FALSE(detail::parse_sidecar(text, bytes.size() + 512, "s.tar.idx"));  // another size
  EXPECT_FALSE(detail::parse_sidecar("not an index\n", bytes.size(), "s.tar.idx"));
  const std::string broken = text + "name-without-fields\n";
  try {
    detail::parse_sidecar(broken, bytes.size(), "s.tar.idx");
    FAIL() << "a malformed line was accepted";
  } catch (const ConfigError& e) {
    const int last_line = static_cast<int>(std::count(broken.begin(), broken.end(), '\n'));
    EXPECT_NE(std::string(e.what()).find("s.tar.idx:" + std::to_string(last_line) + ":"),
              std::string::npos)
        << e.what();
  }
}

TEST(ShardList, BracesCommasAndListFiles) {
  using detail::expand_braces;
  EXPECT_EQ(expand_braces("t-{000..002}.tar"),
            (std::vector<std::string>{"t-000.tar", "t-001.tar", "t-002.tar"}));
  EXPECT_EQ(expand_braces("t-{9..11}.tar"),
            (std::vector<std::string>{"t-9.tar", "t-10.tar", "t-11.tar"}));
  EXPECT_EQ(expand_braces("{a,b}-{1..0}.tar"),
            (std::vector<std::string>{"a-1.tar", "a-0.tar", "b-1.tar", "b-0.tar"}));
  EXPECT_EQ(expand_braces("{3..3}"), (std::vector<std::string>{"3"}));
  EXPECT_THROW(expand_braces("t-{1..2.tar"), ConfigError);
  EXPECT_THROW(expand_braces("t-{{1,2}}.tar"), ConfigError);
  EXPECT_THROW(expand_braces("t-{0..99999999}.tar"), ConfigError);

  const auto urls = detail::shard_list("s3://bucket/train-{0..1}.tar,http://h/x.tar");
  ASSERT_TRUE(urls);
  EXPECT_EQ(*urls, (std::vector<std::string>{"s3://bucket/train-0.tar", "s3://bucket/train-1.tar",
                                             "http://h/x.tar"}));
  EXPECT_FALSE(detail::shard_list(test::testdata("jpeg")));  // an image folder
  EXPECT_FALSE(detail::shard_list("/nonexistent/folder"));

  test::TempDir dir;
  write_file(dir.path() / "shards.txt", "# the training shards\na-{0..1}.tar\n/abs/b.tar\n");
  const auto listed = detail::shard_list((dir.path() / "shards.txt").string());
  ASSERT_TRUE(listed);
  EXPECT_EQ(*listed, (std::vector<std::string>{(dir.path() / "a-0.tar").string(),
                                               (dir.path() / "a-1.tar").string(), "/abs/b.tar"}));
  write_file(dir.path() / "images.txt", "x.jpg\t3\n");
  EXPECT_FALSE(detail::shard_list((dir.path() / "images.txt").string()));  // a list of images
}

// Shard windows: each epoch is still a permutation; every run of K shards of the shard order
// holds the samples of exactly K shards; the order depends on (seed, epoch) only.
TEST(EpochPlan, ShuffleWindowsKeepSamplesOfAFewShardsTogether) {
  detail::PlanConfig c{1000, 10, 1, 0, 1, 7, true, LastBatch::kPad, {}, 2};
  for (int s = 0; s <= 20; ++s) c.shard_starts.push_back(s * 50);  // 20 shards of 50
  detail::EpochPlan plan(c);
  const std::vector<std::int64_t> order = plan.order(0);
  std::vector<std::int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> all(1000);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
  for (int w = 0; w < 10; ++w) {
    std::set<std::int64_t> shards;
    for (int i = w * 100; i < (w + 1) * 100; ++i) shards.insert(order[i] / 50);
    EXPECT_EQ(shards.size(), 2u) << "window " << w;
  }
  // Not just the shards in their own order.
  EXPECT_NE(order, all);
  EXPECT_EQ(detail::EpochPlan(c).order(0), order);
  EXPECT_NE(detail::EpochPlan(c).order(1), order);
  // A window of every shard is the full permutation, the same as for a dataset without shards.
  detail::PlanConfig whole = c;
  whole.shuffle_window = 0;
  detail::PlanConfig plain = c;
  plain.shard_starts.clear();
  EXPECT_EQ(detail::EpochPlan(whole).order(3), detail::EpochPlan(plain).order(3));
}

// A loader over `shards` (testdata/jpeg packed in the folder's order) delivers exactly what a
// loader over the folder delivers: the same batches, bytes and labels for the same seed.
void expect_same_as_jpeg_folder(const std::string& shards, int size) {
  Options folder = test::fashion_options(2, 32);
  folder.data = test::testdata("jpeg");
  folder.height = folder.width = size;
  Options sharded = folder;
  sharded.data = shards;
  Loader a(folder);
  Loader b(sharded);
  ASSERT_EQ(a.dataset_size(), b.dataset_size());
  EXPECT_TRUE(test::collect(a) == test::collect(b));
}

// The same images in a folder and in shards (written by another program, in the folder's
// order) are the same dataset.
TEST(ShardLoader, ShardsDeliverWhatTheFolderDelivers) {
  test::TempDir dir;
  const std::vector<std::string> shards = python_shards(dir, "pax", 3);
  expect_same_as_jpeg_folder((dir.path() / "py-pax-{000000..000002}.tar").string(), 64);
}

// Bad samples of a shard are bad input like bad files: a sample without a label is left out
// while indexing, a member that does not decode is skipped when its batch is made; the first
// is named by shard and member, the second by shard and place.
TEST(ShardLoader, BadSamplesAreSkippedAndNamedByShardAndMember) {
  test::TempDir dir;
  const std::string jpeg = read_file(test::testdata("jpeg") + "/c00-aqua/00000.jpg");
  write_file(dir.path() / "in/000000.jpg", jpeg);
  write_file(dir.path() / "in/000000.cls", "0");
  write_file(dir.path() / "in/000001.jpg", "this is not a JPEG");
  write_file(dir.path() / "in/000001.cls", "1");
  write_file(dir.path() / "in/000002.jpg", jpeg);  // no .cls
  write_file(dir.path() / "in/000003.jpg", jpeg);
  write_file(dir.path() / "in/000003.cls", " 1\n");
  const std::string shard = (dir.path() / "bad.tar").string();
  run("tar --sort=name -cf " + shard + " -C " + (dir.path() / "in").string() +
      " 000000.cls 000000.jpg 000001.cls 000001.jpg 000002.jpg 000003.cls 000003.jpg");
  test::LogLines log;
  Options o = test::fashion_options(1, 3);
  o.data = shard;
  o.height = o.width = 32;
  o.shuffle = false;
  o.log = log.sink();
  Loader loader(o);
  EXPECT_EQ(loader.dataset_size(), 3);
  EXPECT_TRUE(log.contains("skipped " + shard + ":000002 (no cls label) while indexing: no_label"));
  auto b = loader.next();
  ASSERT_TRUE(b);
  EXPECT_NE(b->sample_ids()[1], 1);  // the undecodable sample, replaced by another one
  // (Named by its place: the index keeps no member names, and the loader reads none back while
  // it holds its lock.)
  EXPECT_TRUE(log.contains("skipped " + shard + " (sample 1, number 1 of the shard): undecodable"))
      << log.lines().back();
  const Stats s = loader.stats();
  EXPECT_EQ(s.skipped_by_reason.at("no_label"), 1);
  EXPECT_EQ(s.skipped_by_reason.at("undecodable"), 1);
}

// stoke-pack writes what stoke, GNU tar and Python's tarfile read back: the folder's samples in
// its order, each shard with a sidecar that matches what a walk of its headers finds.
TEST(StokePack, ShardsHoldTheFolderInItsOrderWithSidecars) {
  test::TempDir dir;
  run(std::string(STOKE_PACK) + " --no-progress --data " + test::testdata("jpeg") + " --out " +
      (dir.path() / "out/train-%04d.tar").string() + " --shard-samples 40 > " +
      (dir.path() / "summary.txt").string());
  EXPECT_EQ(read_file(dir.path() / "summary.txt").rfind("packed 96 samples into 3 shard(s)", 0), 0u)
      << read_file(dir.path() / "summary.txt");
  for (int s = 0; s < 3; ++s) {
    char name[32];
    std::snprintf(name, sizeof name, "out/train-%04d.tar", s);
    const std::string bytes = read_file(dir.path() / name);
    const ShardIndex walked = walk(bytes);
    EXPECT_EQ(walked.damage, "");
    EXPECT_EQ(walked.members.size(), s < 2 ? 80u : 32u);
    const auto sidecar = detail::parse_sidecar(read_file(dir.path() / (std::string(name) + ".idx")),
                                               bytes.size(), name);
    ASSERT_TRUE(sidecar);
    ASSERT_EQ(sidecar->members.size(), walked.members.size());
    for (std::size_t i = 0; i < walked.members.size(); ++i) {
      EXPECT_EQ(sidecar->members[i].name, walked.members[i].name);
      EXPECT_EQ(sidecar->members[i].offset, walked.members[i].offset);
      EXPECT_EQ(sidecar->members[i].value, walked.members[i].value);
    }
  }
  run("tar -tf " + (dir.path() / "out/train-0001.tar").string() + " | head -2 > " +
      (dir.path() / "list.txt").string());
  EXPECT_EQ(read_file(dir.path() / "list.txt"), "000040.jpg\n000040.cls\n");
  run("python3 -c \"import tarfile; t = tarfile.open('" +
      (dir.path() / "out/train-0002.tar").string() +
      "'); m = t.getmembers(); assert len(m) == 32 and m[-1].name == '000095.cls', m[-1].name\"");
  expect_same_as_jpeg_folder((dir.path() / "out/train-{0000..0002}.tar").string(), 48);
}

// stoke-pack re-lays out every JPEG losslessly by default: the shards give the folder's batches
// byte for byte (random-resized-crop 224 + flip, and TrivialAugmentWide + erasing), a progressive
// file becomes baseline, a PNG and a damaged JPEG are stored as they are (the latter named), and
// the summary says so; --no-relayout keeps every byte.
TEST(StokePack, JpegsAreReLaidOutLosslesslyAndTheBatchesStayTheFolders) {
  test::TempDir dir;
  const fs::path in = dir.path() / "in";
  std::vector<fs::path> corpus;
  for (const auto& e : fs::recursive_directory_iterator(test::testdata("jpeg")))
    if (e.path().extension() == ".jpg") corpus.push_back(e.path());
  std::sort(corpus.begin(), corpus.end());
  for (std::size_t i = 0; i < 16; ++i) {
    const fs::path to = in / (i < 8 ? "a" : "b") / corpus[i * 5].filename();
    fs::create_directories(to.parent_path());
    fs::copy_file(corpus[i * 5], to);
  }
  const cv::Mat photo = cv::imread(corpus[3].string());
  cv::imwrite((in / "a/progressive.jpg").string(), photo, {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  cv::imwrite((in / "b/lossless.png").string(), photo);
  const std::string whole = read_file(corpus[7]);
  write_file(in / "b/cut.jpg", whole.substr(0, whole.size() / 2));
  run(std::string(STOKE_PACK) + " --no-progress --data " + in.string() + " --out " +
      (dir.path() / "out/s-%d.tar").string() + " --shard-samples 8 > " +
      (dir.path() / "said.txt").string() + " 2>&1");
  const std::string said = read_file(dir.path() / "said.txt");
  EXPECT_NE(said.find("stoke-pack: kept " + (in / "b/cut.jpg").string() + " as it is: damaged"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("packed 19 samples into 3 shard(s)"), std::string::npos) << said;
  EXPECT_NE(said.find("re-laid out 17 JPEG(s) losslessly (1 progressive), 1 kept as they were"),
            std::string::npos)
      << said;
  Pipeline rrc(224, 224, 3);
  rrc.random_resized_crop(224, 224).horizontal_flip(0.5f);
  Pipeline v2(64, 64, 3);
  v2.random_resized_crop(64, 64).horizontal_flip(0.5f).trivial_augment_wide().random_erasing(0.5f);
  for (const Pipeline& p : {rrc, v2}) {
    Options folder = test::fashion_options(2, 4);
    folder.data = in.string();
    folder.pipeline = p;
    Options shards = folder;
    shards.data = (dir.path() / "out/s-{0..2}.tar").string();
    Loader a(folder), b(shards);
    EXPECT_TRUE(test::collect(a) == test::collect(b));
  }
  run(std::string(STOKE_PACK) + " --no-progress --no-relayout --data " + in.string() + " --out " +
      (dir.path() / "kept/s-%d.tar").string() + " > /dev/null");
  const ShardIndex kept = walk(read_file(dir.path() / "kept/s-0.tar"));
  const std::string shard = read_file(dir.path() / "kept/s-0.tar");
  EXPECT_EQ(shard.substr(kept.members[0].offset, kept.members[0].size),
            read_file(in / "a" / corpus[0].filename()));
}

// A shard member's extension comes from what its bytes are, and only images a shard is read with
// are packed: a PPM goes in as .pnm, a JPEG named .png as .jpg; a Radiance file (decoded from a
// folder, carried by no shard) and garbage named .png are skipped and named.
TEST(StokePack, AMembersExtensionIsWhatItsBytesAre) {
  const auto ext = [](const std::string& bytes) {
    return std::string(detail::shard_image_extension(
        reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  };
  EXPECT_EQ(ext("\xff\xd8\xff\xe0"), "jpg");
  EXPECT_EQ(ext("\x89PNG\r\n\x1a\n...."), "png");
  EXPECT_EQ(ext("BM......"), "bmp");
  EXPECT_EQ(ext(std::string("II*\0....", 8)), "tiff");
  EXPECT_EQ(ext("RIFF....WEBPVP8 "), "webp");
  EXPECT_EQ(ext("P6\n2 2\n255\n"), "pnm");
  EXPECT_EQ(ext("GIF89a......"), "");  // stoke decodes no GIF
  EXPECT_EQ(ext("#?RADIANCE\n"), "");  // decoded from a folder, but no shard member carries it
  EXPECT_EQ(ext("hello"), "");

  test::TempDir dir;
  const fs::path in = dir.path() / "in";
  fs::create_directories(in / "a");
  fs::create_directories(in / "b");
  std::vector<fs::path> corpus;
  for (const auto& e : fs::recursive_directory_iterator(test::testdata("jpeg")))
    if (e.path().extension() == ".jpg") corpus.push_back(e.path());
  std::sort(corpus.begin(), corpus.end());
  const cv::Mat photo = cv::imread(corpus[0].string());
  fs::copy_file(corpus[1], in / "a/photo.png");  // a JPEG, named .png
  cv::imwrite((in / "a/photo.ppm").string(), photo);
  cv::Mat hdr;
  photo.convertTo(hdr, CV_32FC3, 1.0 / 255);
  cv::imwrite((in / "b/light.hdr").string(), hdr);
  write_file(in / "b/garbage.png", "not an image at all");
  fs::copy_file(corpus[2], in / "b/plain.jpg");
  run(std::string(STOKE_PACK) + " --no-progress --no-relayout --data " + in.string() + " --out " +
      (dir.path() / "out/s-%d.tar").string() + " > " + (dir.path() / "said.txt").string() +
      " 2>&1");
  const std::string said = read_file(dir.path() / "said.txt");
  for (const char* skipped : {"b/light.hdr", "b/garbage.png"})
    EXPECT_NE(said.find("stoke-pack: skipped " + (in / skipped).string() +
                        ": not an image shards carry (jpg, png, bmp, tiff, webp, pnm)"),
              std::string::npos)
        << said;
  EXPECT_NE(said.find("packed 3 samples into 1 shard(s)"), std::string::npos) << said;
  const detail::ShardIndex index = walk(read_file(dir.path() / "out/s-0.tar"));
  std::vector<std::string> names;
  for (const auto& m : index.members) names.push_back(m.name);
  // (Keys are the folder's index positions: b/garbage.png and b/light.hdr were 2 and 3.)
  EXPECT_EQ(names, (std::vector<std::string>{"000000.jpg", "000000.cls", "000001.pnm", "000001.cls",
                                             "000004.jpg", "000004.cls"}));
  Options o = test::fashion_options(1, 3);
  o.data = (dir.path() / "out/s-0.tar").string();
  o.height = o.width = 32;
  Loader loader(o);
  EXPECT_EQ(loader.dataset_size(), 3);
  EXPECT_EQ(test::collect(loader).labels.size(), 3u);
}

TEST(StokePack, RefusesABadPatternAndAnExistingShard) {
  test::TempDir dir;
  const std::string pack =
      std::string(STOKE_PACK) + " --no-progress --data " + test::testdata("jpeg") + " --out ";
  EXPECT_EQ(std::system((pack + (dir.path() / "x.tar").string() + " 2>/dev/null").c_str()) >> 8, 2);
  EXPECT_EQ(std::system((pack + (dir.path() / "x-%s.tar").string() + " 2>/dev/null").c_str()) >> 8,
            2);
  write_file(dir.path() / "x-0.tar", "");
  EXPECT_EQ(std::system((pack + (dir.path() / "x-%d.tar").string() + " > /dev/null 2> " +
                         (dir.path() / "err.txt").string())
                            .c_str()) >>
                8,
            1);
  EXPECT_NE(read_file(dir.path() / "err.txt").find("x-0.tar exists already"), std::string::npos);
}

TEST(StokePack, MaxSideShrinksLargeImagesOnce) {
  test::TempDir dir;
  run(std::string(STOKE_PACK) + " --no-progress --data " + test::testdata("jpeg") + " --out " +
      (dir.path() / "small-%d.tar").string() + " --max-side 100 --quality 80 > /dev/null");
  Options o = test::fashion_options(1, 32);
  o.data = (dir.path() / "small-0.tar").string();
  o.augment = Augment::kEvaluation;
  o.height = o.width = 64;
  Loader loader(o);
  EXPECT_EQ(loader.dataset_size(), 96);
  const ShardIndex index = walk(read_file(dir.path() / "small-0.tar"));
  const std::string shard = read_file(dir.path() / "small-0.tar");
  const auto& first = index.members.front();
  const cv::Mat image = cv::imdecode(cv::Mat(1, static_cast<int>(first.size), CV_8U,
                                             const_cast<char*>(shard.data() + first.offset)),
                                     cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty());
  EXPECT_EQ(std::max(image.cols, image.rows), 100);
}

TEST(ShardLoader, ALabelFromAJsonMember) {
  test::TempDir dir;
  const std::string jpeg = read_file(test::testdata("jpeg") + "/c00-aqua/00000.jpg");
  for (int i = 0; i < 4; ++i) {
    const std::string key = "s" + std::to_string(i);
    write_file(dir.path() / ("in/" + key + ".jpg"), jpeg);
    write_file(dir.path() / ("in/" + key + ".json"),
               "{\"caption\": \"x\", \"class\": " + std::to_string(10 + i) + "}");
  }
  const std::string shard = (dir.path() / "j.tar").string();
  run("tar --sort=name -cf " + shard + " -C " + (dir.path() / "in").string() + " .");
  Options o = test::fashion_options(1, 4);
  o.data = shard;
  o.height = o.width = 16;
  o.shuffle = false;
  o.label_field = "json:class";
  Loader loader(o);
  auto b = loader.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(std::vector<std::int32_t>(b->labels().begin(), b->labels().end()),
            (std::vector<std::int32_t>{10, 11, 12, 13}));
  o.label_field = "yaml";
  EXPECT_THROW(Loader{o}, ConfigError);
  o.data = test::testdata("jpeg");  // not shards: its labels are its class folders
  o.label_field = "json:class";
  EXPECT_THROW(Loader{o}, ConfigError);
}

}  // namespace
}  // namespace stoke
