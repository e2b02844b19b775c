#pragma once
// Number formatting for the tools' reports. Thread-safety: pure functions.

#include <string>

namespace stoke::tools {

// Rounded to an integer with thousands separators: 1234567.4 -> "1,234,567", -1500 -> "-1,500".
// Not std::locale / fmt's "{:L}": their grouping depends on a locale being installed, and the
// tools' output must read the same on every machine.
std::string with_commas(double value);

// Short, for axis labels: 2.3M, 45k (from 10,000 on), 950.
std::string short_number(double value);

// "%.1f", for building strings.
std::string fixed1(double value);

}  // namespace stoke::tools
