// libFuzzer target: the input is a dataset-level index as a user downloads it beside a dataset's
// shards (webdataset's wids JSON, OpenCLIP's sizes.json, or any other JSON such as a COCO file),
// read by parse_shard_counts, the function the loader calls for a .json data path.
//
// Checks beyond the sanitizers:
//   * it returns an index, std::nullopt (other JSON) or a stoke::ConfigError, nothing else
//     (nlohmann's exceptions, std::bad_alloc and libFuzzer's memory limits count as findings);
//   * an index names 1 .. kMaxShards shards, each with a name of 1 .. kMaxShardNameBytes bytes
//     (relative ones under the base folder), at most kMaxShardSamples samples, and at most
//     kMaxDatasetSamples in all.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "data/shard_counts.hpp"
#include "data/shard_list.hpp"
#include "fuzz_support.hpp"
#include "stoke/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stoke::detail;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::optional<ShardCounts> counts;
  try {
    counts = parse_shard_counts(in, "/base", "fuzz.json");
  } catch (const stoke::ConfigError&) {
    return 0;
  }
  if (!counts) return 0;
  STOKE_FUZZ_CHECK(!counts->shards.empty() && counts->shards.size() <= kMaxShards);
  std::uint64_t total = 0;
  for (const ShardCount& s : counts->shards) {
    STOKE_FUZZ_CHECK(!s.name.empty());
    STOKE_FUZZ_CHECK(s.name.size() <= kMaxShardNameBytes + 6);  // (+ "/base/")
    STOKE_FUZZ_CHECK(s.samples <= kMaxShardSamples);
    total += s.samples;
  }
  STOKE_FUZZ_CHECK(total <= kMaxDatasetSamples);
  return 0;
}
