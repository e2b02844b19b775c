// Inputs the parser fuzz targets found (tests/fuzz/reproducers/<target>/), fed to the regular
// build, for the findings that are fixed here: each must give its documented result.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "data/coco.hpp"
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

}  // namespace
}  // namespace stoke::detail
