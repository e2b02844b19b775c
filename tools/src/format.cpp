#include "stoke/tools/format.hpp"

#include <cmath>
#include <cstdio>

#include "common/number_text.hpp"

namespace stoke::tools {

std::string with_commas(double value) {
  return detail::with_commas(value);
}

std::string bytes_text(std::uint64_t bytes) {
  return detail::bytes_text(bytes);
}

std::string short_number(double v) {
  char buf[32];
  if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  else if (v >= 1e4)
    std::snprintf(buf, sizeof buf, "%.0fk", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string fixed1(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", value);
  return buf;
}

}  // namespace stoke::tools
