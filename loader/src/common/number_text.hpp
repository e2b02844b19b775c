#pragma once
// How stoke writes numbers for people: the loader's verdicts and log lines, and (through
// stoke/tools/format.hpp) the tools' reports share these. Thread-safety: pure functions.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace stoke::detail {

// Rounded to an integer with thousands separators: 1234567.4 -> "1,234,567", -1500 -> "-1,500".
// Not std::locale / fmt's "{:L}": their grouping depends on a locale being installed, and
// stoke's output must read the same on every machine.
inline std::string with_commas(double value) {
  const long long v = std::llround(value);
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// A number as printf's %g writes it: 2, 0.5, 1e-06, 1e+07, nan.
inline std::string decimal_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Bytes in the largest binary unit that keeps a leading digit, with one decimal below 10:
// 17179869184 -> "16 GiB", 1572864 -> "1.5 MiB", 512 -> "512 B".
inline std::string bytes_text(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  char text[32];
  const bool whole = unit == 0 || v >= 10 || v == std::floor(v);
  std::snprintf(text, sizeof text, whole ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return text;
}

}  // namespace stoke::detail
