#pragma once
// Which shards a dataset string names, in the forms WebDataset users write: one shard
// ("train-000000.tar"), brace ranges and alternatives ("train-{000000..000255}.tar",
// "{train,extra}-{0..3}.tar"), several of those separated by commas, or a list file that names
// one shard per line (relative paths are relative to the list). A shard is a local path or a
// URL: http://, https:// or s3://bucket/key.
//
// Thread-safety: functions are reentrant.

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace stoke::detail {

// Expands the brace groups of `pattern` left to right: "{A..B}" (integers, ascending or
// descending; zero-padded to the wider end when either is written with a leading zero) and
// "{x,y,z}". Throws ConfigError for an unmatched or nested brace, a pattern over
// kMaxShardNameBytes, more than kMaxShards names or more than kMaxShardListBytes of them.
std::vector<std::string> expand_braces(const std::string& pattern);

inline constexpr std::size_t kMaxShards = 1000000;
// A name or pattern is at most kMaxShardNameBytes; the names a pattern, a comma list or a list
// file expand to are at most kMaxShardListBytes in all (a million 4 KiB names would be 4 GiB).
inline constexpr std::size_t kMaxShardNameBytes = 4096;
inline constexpr std::size_t kMaxShardListBytes = std::size_t{256} << 20;

// `s`'s comma-separated parts, commas inside braces excepted ("a/{0,1}.tar,b.tar": two).
std::vector<std::string> split_top_level(const std::string& s);

// The names `spec` stands for: its comma-separated parts (commas inside braces excepted), each
// through expand_braces. Throws ConfigError as expand_braces does, or for more than kMaxShards
// names or kMaxShardListBytes of them in all.
std::vector<std::string> expand_names(const std::string& spec);

// True for http://, https:// and s3:// names.
bool is_url(const std::string& name);

// A list file's shards, read from `in`: the list's first entry (not blank, not a comment) is a
// shard name and has no TAB (an image list's lines are "path<TAB>label"), else std::nullopt;
// relative names resolve under `base` (the list's folder). Throws ConfigError naming `source`
// and the line for a later line that is not a shard, or a malformed pattern. Reads nothing but
// `in` (the fuzz target feeds it text).
std::optional<std::vector<std::string>> parse_shard_list_file(std::istream& in,
                                                              const std::string& base,
                                                              const std::string& source);

// parse_shard_list_file for lists of other files: `names` says whether a line's names are what
// the list holds, `expected` what they are in a message ("a Parquet file").
std::optional<std::vector<std::string>> parse_name_list_file(std::istream& in,
                                                             const std::string& base,
                                                             const std::string& source,
                                                             bool (*names)(const std::string&),
                                                             const char* expected);

// The shards `data` names, or std::nullopt when it names another kind of dataset (an image
// folder, a list of images, IDX files). Throws ConfigError for a malformed pattern, or for more
// than kMaxShards shards in all (a list file's lines or a comma list's patterns together).
std::optional<std::vector<std::string>> shard_list(const std::string& data);

}  // namespace stoke::detail
