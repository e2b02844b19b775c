// Inputs the parser fuzz targets found (tests/fuzz/reproducers/<target>/), fed to the regular
// build, for the findings that are fixed here: each must give its documented result.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "data/coco.hpp"
#include "data/shard_list.hpp"
#include "data/tar_index.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

std::string reproducer_path(const std::string& target, const std::string& name) {
  return std::string(STOKE_SOURCE_DIR) + "/tests/fuzz/reproducers/" + target + "/" + name;
}

std::string reproducer(const std::string& target, const std::string& name) {
  std::ifstream in(reproducer_path(target, name), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(bytes.empty()) << target << "/" << name;
  return bytes;
}

// Python's tarfile writes a member whose name is empty when asked to; the walk keeps it (it is
// in no sample), and the sidecar written from the walk, which the remote index cache stores and
// reads back on the next start, must still parse.
TEST(ParserRegression, AShardMemberWithoutANameLeavesASidecarThatParsesBack) {
  const std::string shard =
      reproducer("tar", "member_with_empty_name_writes_unparsable_sidecar.tar");
  const ReadAt read_at = [&shard](std::uint64_t offset, void* dst, std::size_t n) {
    const std::size_t take = offset >= shard.size() ? 0 : std::min(n, shard.size() - offset);
    std::memcpy(dst, shard.data() + offset, take);
    return take;
  };
  const ShardIndex walked = walk_tar(read_at, shard.size());
  ASSERT_EQ(walked.members.size(), 3u);
  EXPECT_EQ(walked.members[1].name, "");
  const std::optional<ShardIndex> back =
      parse_sidecar(format_sidecar(walked), shard.size(), "cache/x.idx");
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->members.size(), 2u);
  EXPECT_EQ(back->members[0].name, "s/000000.jpg");
  EXPECT_EQ(back->members[0].offset, 512u);
  EXPECT_EQ(back->members[1].name, "s/000000.cls");
  EXPECT_EQ(back->members[1].value, "3");
  EXPECT_EQ(group_samples(*back).size(), group_samples(walked).size());
}

// nlohmann-json throws out_of_range, not parse_error, for a number beyond a double's range: it
// must still be a ConfigError naming the file, not an exception from inside the parser.
TEST(ParserRegression, ACocoNumberBeyondADoubleIsAConfigErrorNamingTheFile) {
  const std::string path =
      reproducer_path("coco", "bbox_number_1e999_escapes_as_nlohmann_out_of_range.json");
  try {
    read_coco(path, "", OnError::kSkip);
    FAIL() << "read " << path;
  } catch (const ConfigError& e) {
    // Today "PATH: not valid JSON (number overflow parsing '1e999')"; a streaming parser may
    // add where.
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << what;
    EXPECT_NE(what.find("1e999"), std::string::npos) << what;
  }
}

// A list-file line is a comma list whose every name must be a shard, not only its first:
// "a.tar,b-{0..2}.tar#" named files that are not .tar shards. As the first line it makes the
// file no shard list (an image list, say); on a later line it is an error naming the line.
TEST(ParserRegression, EveryNameOfAListFileLineMustBeAShard) {
  std::istringstream found(
      reproducer("shard_list", "list_line_comma_list_with_a_name_that_is_not_a_shard.txt"));
  EXPECT_FALSE(parse_shard_list_file(found, "/base", "fuzz.txt").has_value());
  std::istringstream later("a.tar\nb.tar,c.txt\n");
  try {
    parse_shard_list_file(later, "/base", "list.txt");
    FAIL() << "a line naming c.txt was accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "list.txt:2: expected a shard (a .tar path or an http://, https:// or s3:// "
                 "URL), got 'b.tar,c.txt'");
  }
  std::istringstream good("a.tar,b-{0..1}.tar\nhttps://example.com/c.tar\n");
  const auto shards = parse_shard_list_file(good, "/base", "list.txt");
  ASSERT_TRUE(shards.has_value());
  EXPECT_EQ(*shards, (std::vector<std::string>{"/base/a.tar", "/base/b-0.tar", "/base/b-1.tar",
                                               "https://example.com/c.tar"}));
}

}  // namespace
}  // namespace stoke::detail
