#pragma once
// A dataset-level index: one small JSON file that names every shard of a dataset and how many
// samples it holds, so a loader can plan epochs without opening any shard. Two forms are read:
//
//   wids (webdataset's shard index, also what stoke-pack writes):
//     {"__kind__": "wids-shard-index-v1", "wids_version": 1, "name": "train",
//      "shardlist": [{"url": "train-000000.tar", "nsamples": 5000, "filesize": 123456}, ...]}
//   sizes.json (OpenCLIP's): {"train-000000.tar": 5000, "train-000001.tar": 5000, ...}
//
// Relative shard names are relative to the JSON file's folder (or, for an index on a server,
// its URL's); absolute paths and URLs (http://, https://, s3://) stay as they are. Other keys are
// ignored.
//
// Thread-safety: functions are reentrant.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "remote/remote.hpp"

namespace stoke::detail {

struct ShardCount {
  std::string name;           // a path or URL
  std::uint64_t samples = 0;  // the samples the shard holds
  std::uint64_t bytes = 0;    // its size, 0 where the index does not give it
};

struct ShardCounts {
  enum class Form { kWids, kSizes };
  Form form = Form::kWids;
  std::vector<ShardCount> shards;
};

// The most samples one shard may claim, and all shards together (the plan's positions are
// 64-bit, its orders 32-bit per shuffle window).
inline constexpr std::uint64_t kMaxShardSamples = std::uint64_t{1} << 32;
inline constexpr std::uint64_t kMaxDatasetSamples = std::uint64_t{1} << 40;

// Whether the JSON text read from `in` is a dataset-level index, decided by its first member:
// a wids index's "__kind__", "wids_version" or "shardlist" key, or a sizes.json's number. Returns
// std::nullopt for any other JSON (a COCO annotation file) after reading only up to that member.
// Throws ConfigError naming `source` (and the entry) for a malformed index: bad JSON, a missing
// or non-integer count, a count over kMaxShardSamples or a total over kMaxDatasetSamples, a
// name that is empty or over kMaxShardNameBytes, more than kMaxShards shards, nesting deeper
// than 16, no shards at all, or more than kMaxShardListBytes of text. Relative names resolve
// under `base`. Reads nothing but `in` (the
// fuzz target feeds it text).
std::optional<ShardCounts> parse_shard_counts(std::istream& in, const std::string& base,
                                              const std::string& source);

// parse_shard_counts of the file at `path` (a ".json" data path): std::nullopt when it is other
// JSON. Throws ConfigError when the file cannot be read, and what parse_shard_counts throws.
std::optional<ShardCounts> read_shard_counts(const std::string& path);

// parse_shard_counts of the object at `url` (http(s):// or s3://), its relative names resolved
// under the URL's folder: std::nullopt when it is other JSON. Throws ConfigError when it does not
// exist (naming the URL without its secrets), Error when it cannot be fetched within `policy`'s
// deadline or is over kMaxShardListBytes, and what parse_shard_counts throws.
std::optional<ShardCounts> fetch_shard_counts(const std::string& url, const RemotePolicy& policy);

// A wids index of `shards` (names as given, e.g. relative to the index's folder), as stoke-pack
// writes it.
std::string format_wids_index(const std::string& name, const std::vector<ShardCount>& shards);

}  // namespace stoke::detail
