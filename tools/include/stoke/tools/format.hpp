#pragma once
// Number formatting for the tools' reports. Thread-safety: pure functions.

#include <cstdint>
#include <string>

namespace stoke::tools {

// Thousands separators, the loader's own formatter (its verdicts and log lines use it too):
// 1234567.4 -> "1,234,567", -1500 -> "-1,500", the same on every machine (no locale).
std::string with_commas(double value);

// Bytes in the largest binary unit that keeps a leading digit, as the loader writes them:
// 17179869184 -> "16 GiB", 1572864 -> "1.5 MiB", 512 -> "512 B".
std::string bytes_text(std::uint64_t bytes);

// Short, for axis labels: 2.3M, 45k (from 10,000 on), 950.
std::string short_number(double value);

// "%.1f", for building strings.
std::string fixed1(double value);

}  // namespace stoke::tools
