#include "stoke/format.hpp"

#include <cctype>
#include <utility>

#include "common/text.hpp"

namespace stoke {

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 15) return std::nullopt;
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < digits; ++i) n = n * 10 + static_cast<std::uint64_t>(text[i] - '0');
  const std::string_view unit = text.substr(digits);
  static constexpr std::pair<const char*, std::uint64_t> kUnits[] = {{"", 1},
                                                                     {"B", 1},
                                                                     {"KiB", 1ull << 10},
                                                                     {"MiB", 1ull << 20},
                                                                     {"GiB", 1ull << 30},
                                                                     {"TiB", 1ull << 40},
                                                                     {"KB", 1000},
                                                                     {"MB", 1000000},
                                                                     {"GB", 1000000000},
                                                                     {"TB", 1000000000000}};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    if (n > UINT64_MAX / scale) return std::nullopt;
    return n * scale;
  }
  return std::nullopt;
}

std::string shown_name(std::string_view name) {
  return detail::redact_url(name);
}

}  // namespace stoke
