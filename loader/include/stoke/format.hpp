#pragma once
// How stoke writes numbers for people: the loader's verdicts and log lines and the tools'
// reports share this one formatter. Thread-safety: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stoke {

// Rounded to an integer with thousands separators: 1234567.4 -> "1,234,567", -1500 -> "-1,500".
// Not std::locale / fmt's "{:L}": their grouping depends on a locale being installed, and
// stoke's output must read the same on every machine.
std::string with_commas(double value);

// Bytes in the largest binary unit that keeps a leading digit, with one decimal below 10:
// 17179869184 -> "16 GiB", 1572864 -> "1.5 MiB", 512 -> "512 B".
std::string bytes_text(std::uint64_t bytes);

// A size as people write it: "256MiB", "16GiB", "500MB", "4096" (bytes); binary (KiB, MiB,
// GiB, TiB) and decimal (KB, MB, GB, TB) units. nullopt for anything else, or past 2^64.
std::optional<std::uint64_t> parse_bytes(std::string_view text);

// A name (a path, a shard pattern, a URL) as stoke shows it: a URL without its userinfo and
// with signature and credential query values as REDACTED; control characters, terminal escapes
// and broken UTF-8 as \xNN. What the loader's own messages do, for tools that print a name.
std::string shown_name(std::string_view name);

}  // namespace stoke
