#pragma once
// How stoke writes numbers for people: the loader's verdicts and log lines and the tools'
// reports share this one formatter. Thread-safety: pure functions.

#include <string>

namespace stoke {

// Rounded to an integer with thousands separators: 1234567.4 -> "1,234,567", -1500 -> "-1,500".
// Not std::locale / fmt's "{:L}": their grouping depends on a locale being installed, and
// stoke's output must read the same on every machine.
std::string with_commas(double value);

}  // namespace stoke
