// Hostile annotation files and options one sample sizes: a COCO file read as a stream, in memory
// that follows what is kept and not the file, with its depth, tokens, counts and category ids
// bounded; a max_boxes or max_bytes of 0 that the data would size past memory_budget refused
// before the arena is allocated; stoke-pack's --out pattern checked before anything is written.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "data/coco.hpp"
#include "stoke/error.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

using detail::CocoDataset;
using detail::read_coco;

// The peak resident memory of this process from construction on: VmHWM, reset through
// /proc/self/clear_refs, less the resident memory then.
class PeakMemory {
 public:
  PeakMemory() {
    std::ofstream("/proc/self/clear_refs") << "5";
    start_ = field("VmRSS:");
  }
  double grown_mib() const { return static_cast<double>(field("VmHWM:") - start_) / 1024.0; }

 private:
  static long field(const std::string& name) {  // KiB
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind(name, 0) == 0) return std::stol(line.substr(name.size()));
    return 0;
  }
  long start_ = 0;
};

std::string write(const test::TempDir& dir, const std::string& text,
                  const std::string& name = "instances.json") {
  const std::string path = (dir.path() / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A COCO file shaped as instances_train2017.json (bench/make_coco_instances.py): URLs and dates
// per image, a 26-point polygon per annotation, the categories last. Image k is 640x480; its
// annotations are those with (index % images) == k, each box [1, 2, 30, 40].
std::string coco_like(int images, int annotations) {
  std::string polygon = "[[";
  for (int i = 0; i < 52; ++i) {
    if (i > 0) polygon += ',';
    polygon += std::to_string(100 + i * 7);
    polygon += ".25";
  }
  polygon += "]]";
  std::string text = R"({"info":{"description":"test","year":2017},"licenses":[],"images":[)";
  for (int k = 0; k < images; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "%012d.jpg", k);
    text += std::string(k ? "," : "") + R"({"license":3,"file_name":")" + name +
            R"(","coco_url":"http://images.cocodataset.org/train2017/)" + name +
            R"(","height":480,"width":640,"date_captured":"2013-11-14 11:18:45","id":)" +
            std::to_string(k + 1) + "}";
  }
  text += R"(],"annotations":[)";
  for (int a = 0; a < annotations; ++a)
    text += std::string(a ? "," : "") + R"({"segmentation":)" + polygon +
            R"(,"area":1200.5,"iscrowd":0,"image_id":)" + std::to_string(a % images + 1) +
            R"(,"bbox":[1,2,30,40],"category_id":)" + std::to_string(1 + a % 80) + R"(,"id":)" +
            std::to_string(a + 1) + "}";
  text += R"(],"categories":[)";
  for (int c = 1; c <= 80; ++c)
    text += std::string(c > 1 ? "," : "") + R"({"supercategory":"thing","id":)" +
            std::to_string(c) + R"(,"name":"class)" + std::to_string(c) + R"("})";
  return text + "]}";
}

// The what() of the exception `read` throws, or "no error".
template <class E, class Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const E& e) {
    return e.what();
  }
  return "no error";
}

TEST(HostileCoco, AThirtyMegabyteFileIsReadInMemoryThatFollowsWhatIsKept) {
  test::TempDir dir;
  const std::string json = write(dir, coco_like(8600, 62500));
  ASSERT_GT(std::filesystem::file_size(json), 28u << 20);
  const PeakMemory peak;
  const CocoDataset d = read_coco(json, "", OnError::kError);
  // Kept: 8,600 paths and 62,500 boxes, a few MiB; the whole document would be hundreds.
  EXPECT_LT(peak.grown_mib(), 48 * test::kMemoryFactor)
      << "MiB for a " << std::filesystem::file_size(json) << "-byte file";
  ASSERT_EQ(d.images.size(), 8600u);
  ASSERT_EQ(d.boxes.size(), 62500u);
  EXPECT_EQ(d.class_names.size(), 80u);
  EXPECT_EQ(d.images[5].path, (dir.path() / "000000000005.jpg").string());
  EXPECT_EQ(d.images[5].box_count, 8u);  // annotations 5, 8605, ... 60205
  const detail::SampleBox& b = d.boxes[d.images[5].first_box];
  EXPECT_FLOAT_EQ(b.x2, 31);
  EXPECT_FLOAT_EQ(b.y2, 42);
  EXPECT_EQ(b.label, 5);  // category id 6, the sixth in id order
}

TEST(HostileCoco, NestingPastTheBoundIsADataErrorNamingTheFileInLittleMemory) {
  test::TempDir dir;
  constexpr int kLevels = 2'000'000;
  const std::string json =
      write(dir, R"({"info": )" + std::string(kLevels, '[') + std::string(kLevels, ']') +
                     R"(, "images": [], "annotations": [], "categories": []})");
  const PeakMemory peak;
  const auto start = std::chrono::steady_clock::now();
  const std::string what = error_of<DataError>([&] { read_coco(json, "", OnError::kError); });
  EXPECT_EQ(what, json +
                      ": more than 64 levels of nested arrays and objects at byte 73 (COCO "
                      "annotation files nest 5 deep): not a COCO annotation file");
  EXPECT_LT(peak.grown_mib(), 16 * test::kMemoryFactor);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(HostileCoco, ATokenPastTheBoundIsADataErrorBeforeItIsHeld) {
  test::TempDir dir;
  const std::string json =
      write(dir, R"({"info": ")" + std::string(40u << 20, 'x') +
                     R"(", "images": [], "annotations": [], "categories": []})");
  const PeakMemory peak;
  EXPECT_EQ(error_of<DataError>([&] { read_coco(json, "", OnError::kError); }),
            json +
                ": more than 4 MiB from byte 7 without a complete JSON token (a string or number "
                "that long, or that much white space, is not a COCO annotation file)");
  EXPECT_LT(peak.grown_mib(),
            24 * test::kMemoryFactor);  // the parser's token buffers, up to the bound
}

constexpr const char* kTwoCategories = R"({
  "images": [{"id": 1, "file_name": "a.jpg", "width": 64, "height": 48}],
  "annotations": [
    {"id": 1, "image_id": 1, "category_id": 2147483647, "bbox": [1, 1, 10, 10]},
    {"id": 2, "image_id": 1, "category_id": 3, "bbox": [2, 2, 10, 10]}
  ],
  "categories": [{"id": 2147483647, "name": "last"}, {"id": 3, "name": "three"}]
})";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(HostileCoco, CategoryIdsAreMappedSparselyAndBoundedWithADataError) {
  test::TempDir dir;
  const PeakMemory peak;
  const CocoDataset d = read_coco(write(dir, kTwoCategories), "", OnError::kError);
  EXPECT_LT(peak.grown_mib(), 16 * test::kMemoryFactor);  // nothing sized by an id's value
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"three", "last"}));
  EXPECT_EQ(d.category_ids, (std::vector<std::int64_t>{3, 2147483647}));
  ASSERT_EQ(d.boxes.size(), 2u);
  EXPECT_EQ(d.boxes[0].label, 1);
  EXPECT_EQ(d.boxes[1].label, 0);

  for (const std::string id : {"2147483648", "-1", "99999999999999"}) {
    const std::string json = write(dir, replaced(kTwoCategories, R"({"id": 2147483647, "name")",
                                                 R"({"id": )" + id + R"(, "name")"));
    EXPECT_EQ(error_of<DataError>([&] { read_coco(json, "", OnError::kError); }),
              json + ": categories[0].id: category id " + id + " is outside 0..2147483647");
  }
  // More categories than any taxonomy has.
  std::string many = R"({"images": [], "annotations": [], "categories": [)";
  for (int c = 0; c <= 65536; ++c)
    many += std::string(c ? "," : "") + R"({"id":)" + std::to_string(c) + R"(,"name":"c"})";
  const std::string json = write(dir, many + "]}");
  EXPECT_EQ(error_of<DataError>([&] { read_coco(json, "", OnError::kError); }),
            json + ": more than 65536 categories (the most a COCO file may list)");
  // An id past 64 bits is not read as another one.
  EXPECT_NE(error_of<ConfigError>([&] {
              read_coco(write(dir, replaced(kTwoCategories, "\"category_id\": 3,",
                                            "\"category_id\": 18446744073709551615,")),
                        "", OnError::kError);
            })
                .find("annotations[1].category_id: expected an integer of at most "
                      "9223372036854775807"),
            std::string::npos);
}

TEST(HostileCoco, NamesSizesAndBadBoxNotesAreBounded) {
  test::TempDir dir;
  const auto config_error = [&](const std::string& from, const std::string& to) {
    return error_of<ConfigError>(
        [&] { read_coco(write(dir, replaced(kTwoCategories, from, to)), "", OnError::kError); });
  };
  EXPECT_NE(config_error("\"a.jpg\"", "\"" + std::string(5000, 'a') + "\"")
                .find("images[0].file_name: longer than 4096 bytes"),
            std::string::npos);
  EXPECT_NE(config_error("\"width\": 64", "\"width\": 4294967360")
                .find("images[0]: width and height must be at most 2147483647"),
            std::string::npos);
  // A number past double's range is a syntax error like any other, not nlohmann's exception.
  EXPECT_NE(config_error("\"width\": 64", "\"width\": 1e999")
                .find("line 2, column 59: not valid JSON (number overflow parsing '1e999')"),
            std::string::npos)
      << config_error("\"width\": 64", "\"width\": 1e999");
  // 1,500 boxes outside their image under skip: the first 1,000 described, then a count.
  std::string text = R"({"images": [{"id": 1, "file_name": "a.jpg", "width": 8, "height": 8}],
    "categories": [{"id": 1, "name": "c"}], "annotations": [)";
  for (int a = 0; a < 1500; ++a)
    text +=
        std::string(a ? "," : "") + R"({"image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50]})";
  const std::string json = write(dir, text + "]}");
  const CocoDataset d = read_coco(json, "", OnError::kSkip);
  ASSERT_EQ(d.dropped.size(), 1001u);
  EXPECT_NE(d.dropped[999].find("annotations[999], on "), std::string::npos) << d.dropped[999];
  EXPECT_EQ(d.dropped[1000], json + ": 500 more bad box(es), not listed one by one");
  EXPECT_EQ(d.boxes.size(), 0u);
}

// Options for a loader that is only constructed: no workers, a small output.
Options constructed_only(const std::string& data, test::LogLines& log) {
  Options o;
  o.data = data;
  o.batch = 64;
  o.workers = 0;
  o.height = o.width = 32;
  o.augment = Augment::kEvaluation;
  o.log = log.sink();
  return o;
}

TEST(HostileSizes, OneImageWithAMillionBoxesCannotSizeEverySlot) {
  test::TempDir dir;
  std::string text =
      R"({"images": [{"id": 1, "file_name": "small.jpg", "width": 64, "height": 64},
    {"id": 2, "file_name": "crowded.jpg", "width": 64, "height": 64}],
    "categories": [{"id": 1, "name": "c"}], "annotations": [{"image_id": 1, "category_id": 1,
    "bbox": [0, 0, 5, 5]})";
  for (int a = 0; a < 1'000'000; ++a) text += R"(,{"image_id":2,"category_id":1,"bbox":[0,0,5,5]})";
  const std::string json = write(dir, text + "]}");
  text = {};
  test::LogLines log;
  Options o = constructed_only(json, log);
  const PeakMemory peak;
  const std::string what = error_of<ConfigError>([&] { Loader loader(o); });
  EXPECT_EQ(what, (dir.path() / "crowded.jpg").string() +
                      " has 1000000 boxes, the most of any sample, and "
                      "max_boxes 0 sizes every "
                      "slot by them: 2 slots of 64 samples would need 2.4 GiB "
                      "for boxes, more "
                      "than memory_budget 2.0 GiB; set max_boxes to the boxes "
                      "a sample needs "
                      "(with on_error=skip a sample with more keeps its first "
                      "max_boxes) or "
                      "raise memory_budget");
  // The index (a million boxes, 20 MiB) and nothing the size of the slots.
  EXPECT_LT(peak.grown_mib(), 256 * test::kMemoryFactor);
  o.max_boxes = 100;
  o.on_error = OnError::kSkip;
  Loader loader(o);
  EXPECT_TRUE(log.contains("1 image(s) have more boxes than max_boxes 100"));
}

TEST(HostileSizes, OneLongBytesMemberCannotSizeEverySlotPastTheBudget) {
  test::TempDir dir;
  const std::string jpeg = test::read_file(test::testdata("jpeg") + "/c00-aqua/00000.jpg");
  ASSERT_FALSE(jpeg.empty());
  std::vector<std::pair<std::string, std::string>> members;
  for (int i = 0; i < 8; ++i) {
    const std::string key = "00000" + std::to_string(i);
    members.push_back({key + ".jpg", jpeg});
    members.push_back({key + ".cls", "1"});
    members.push_back({key + ".txt", i == 3 ? std::string(12u << 20, 't') : "a caption"});
  }
  const std::string shard = (dir.path() / "s.tar").string();
  std::ofstream(shard, std::ios::binary) << test::tar_archive(members);
  members = {};
  test::LogLines log;
  Options o = constructed_only(shard, log);
  o.batch = 16;
  o.bytes_field = "txt";
  o.memory_budget = std::size_t{64} << 20;
  const PeakMemory peak;
  EXPECT_EQ(error_of<ConfigError>([&] { Loader loader(o); }),
            shard +
                ":000003.txt carries 12582912 bytes, the most of any "
                "sample, and max_bytes 0 "
                "sizes every slot by them: 2 slots of 16 samples would "
                "need 384.0 MiB for bytes, "
                "more than memory_budget 64.0 MiB; set max_bytes to the "
                "bytes a sample needs "
                "(with on_error=skip a sample with more is cut to its "
                "first max_bytes) or "
                "raise memory_budget");
  EXPECT_LT(peak.grown_mib(), 32 * test::kMemoryFactor);
  o.max_bytes = 4096;
  o.on_error = OnError::kSkip;
  Loader loader(o);
  EXPECT_TRUE(log.contains("1 sample(s) carry more than max_bytes 4096 bytes"));
}

// stoke-pack's exit status for `pattern`, its stderr in `err`; it must leave `dir` empty.
int pack(const test::TempDir& dir, const std::string& pattern, std::string& err) {
  const std::filesystem::path out = dir.path() / "out";
  std::filesystem::create_directories(out);
  const std::string err_file = (dir.path() / "err.txt").string();
  const int status =
      std::system((std::string(STOKE_PACK) + " --no-progress --data " + test::testdata("jpeg") +
                   " --out '" + (out / pattern).string() + "' > /dev/null 2> " + err_file)
                      .c_str());
  err = test::read_file(err_file);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(HostilePack, AnOutPatternThatWouldNotNameTarShardsIsAUsageError) {
  const struct {
    const char* pattern;
    const char* says;
  } cases[] = {
      {"s-%40d.tar", "'%40d' pads with spaces: use %d or %0Nd with N 1..12 (e.g. %06d)"},
      {"s-%013d.tar", "'%013d' is wider than 12 digits: use %d or %0Nd with N 1..12"},
      {"s-%00d.tar", "'%00d' has no width: use %d or %0Nd with N 1..12"},
      {"s-%06d", "the shards' names must end in .tar"},
      {"s-%06d.tar.gz", "the shards' names must end in .tar"},
      {"x-%d/s.tar",
       "the integer conversion must be in the shards' file name, "
       "not in a folder"},
      {"s-%d-%d.tar", "needs exactly one integer conversion"},
      {"s.tar", "needs exactly one integer conversion"},
      {"s-%ld.tar", "needs exactly one integer conversion"},
  };
  for (const auto& c : cases) {
    test::TempDir dir;
    std::string err;
    EXPECT_EQ(pack(dir, c.pattern, err), 2) << c.pattern;
    EXPECT_NE(err.find("--out"), std::string::npos) << c.pattern << ": " << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << c.pattern << ": " << err;
    EXPECT_TRUE(std::filesystem::is_empty(dir.path() / "out")) << c.pattern;
  }
  test::TempDir dir;
  std::string err;
  ASSERT_EQ(pack(dir, "s-%03d.tar", err), 0) << err;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "out/s-000.tar"));
}

}  // namespace
}  // namespace stoke
