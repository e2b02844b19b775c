#pragma once
// Sizes and names as people write and read them, the way stoke itself does: the size words that
// Options::cache_limit takes from Python and the tools' flags, and how a name is shown in a
// message. Thread-safety: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stoke {

// A size as people write it: "256MiB", "16GiB", "500MB", "4096" (bytes); binary (KiB, MiB,
// GiB, TiB) and decimal (KB, MB, GB, TB) units. nullopt for anything else, or past 2^64.
std::optional<std::uint64_t> parse_bytes(std::string_view text);

// A name (a path, a shard pattern, a URL) as stoke shows it: a URL without its userinfo and
// with signature and credential query values as REDACTED; control characters, terminal escapes
// and broken UTF-8 as \xNN. What the loader's own messages do, for code (the tools, a user's
// logs) that prints a name it did not choose.
std::string shown_name(std::string_view name);

}  // namespace stoke
