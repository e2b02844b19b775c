#pragma once
// Number formatting for the tools' reports. Thread-safety: pure functions.

#include <string>

#include "stoke/format.hpp"

namespace stoke::tools {

// Thousands separators, as the loader writes them (stoke/format.hpp).
using stoke::with_commas;

// Short, for axis labels: 2.3M, 45k (from 10,000 on), 950.
std::string short_number(double value);

// "%.1f", for building strings.
std::string fixed1(double value);

}  // namespace stoke::tools
