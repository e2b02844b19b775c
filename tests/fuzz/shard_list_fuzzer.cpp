// libFuzzer target: the input is a dataset string or the text of a list file.
//   * one line: a dataset string -> shard_list (comma-separated patterns, brace ranges and
//     alternatives; not a list file: a text that names an existing path, or holds a NUL, goes to
//     expand_braces instead, so nothing on the machine is read);
//   * several lines: a list file -> parse_shard_list_file (one pattern a line, comments, CRLF,
//     relative names under the list's folder, the first-entry test that tells a shard list from
//     an image list).
//
// Checks beyond the sanitizers:
//   * each returns names or a ConfigError, nothing else (std::bad_alloc, std::length_error and
//     libFuzzer's -rss_limit_mb / -malloc_limit_mb count as findings);
//   * no result holds more than kMaxShards names, however many lines or patterns made it;
//   * every name is a shard (a .tar path or a URL), and a list file's relative names were made
//     absolute under its folder.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>

#include "data/shard_list.hpp"
#include "fuzz_support.hpp"
#include "stoke/error.hpp"

namespace {

using stoke::detail::kMaxShards;

constexpr const char* kBase = "/stoke-fuzz/lists";

bool names_shard(const std::string& name) {
  return stoke::detail::is_url(name) || name.ends_with(".tar");
}

void check_count(std::size_t n, const char* what) {
  STOKE_FUZZ_CHECK(n <= kMaxShards, std::string(what) + " gave " + std::to_string(n) + " names");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // One expansion per input (a pattern may name up to kMaxShards names, ~1 s under ASan): a
  // text of several lines is a list file, one line a dataset string.
  if (text.find('\n') != std::string::npos) {
    try {
      std::istringstream in(text);
      if (const auto shards = stoke::detail::parse_shard_list_file(in, kBase, "fuzz.txt")) {
        check_count(shards->size(), "a list file");
        for (const std::string& s : *shards) {
          STOKE_FUZZ_CHECK(names_shard(s), s);
          STOKE_FUZZ_CHECK(stoke::detail::is_url(s) || s.starts_with('/'), s);
        }
      }
    } catch (const stoke::ConfigError&) {
    }
    return 0;
  }
  std::error_code ec;
  try {
    if (text.find('\0') != std::string::npos || std::filesystem::exists(text, ec)) {
      check_count(stoke::detail::expand_braces(text).size(), "expand_braces");
    } else if (const auto shards = stoke::detail::shard_list(text)) {
      check_count(shards->size(), "shard_list");
      for (const std::string& s : *shards) STOKE_FUZZ_CHECK(names_shard(s), s);
    }
  } catch (const stoke::ConfigError&) {
  }
  return 0;
}
