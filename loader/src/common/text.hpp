#pragma once
// Small string helpers shared by the loader's parsers (list files, tar members, HTTP headers,
// the driver's /proc files). Thread-safety: pure functions.

#include <algorithm>
#include <cctype>
#include <string>

namespace stoke::detail {

// `s` without leading and trailing white space.
inline std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// `s` with ASCII letters in lower case.
inline std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace stoke::detail
