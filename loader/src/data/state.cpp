#include "stoke/state.hpp"

#include <charconv>
#include <sstream>

#include "stoke/error.hpp"

namespace stoke {

namespace {
constexpr std::string_view kTag = "stoke-state/1";
}

std::string LoaderState::serialize() const {
  std::ostringstream out;
  out << kTag << " seed=" << seed << " epoch=" << epoch << " next_batch=" << next_batch
      << " dataset_size=" << dataset_size << " global_batch=" << global_batch;
  return out.str();
}

LoaderState LoaderState::parse(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string word;
  if (!(in >> word) || word != kTag)
    throw ConfigError("not a saved loader state (expected it to start with '" + std::string(kTag) +
                      "'): '" + std::string(text) + "'");
  LoaderState s;
  int seen = 0;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) throw ConfigError("loader state: malformed field '" + word + "'");
    const std::string key = word.substr(0, eq);
    const char* b = word.data() + eq + 1;
    const char* e = word.data() + word.size();
    std::from_chars_result r{};
    if (key == "seed")
      r = std::from_chars(b, e, s.seed);
    else if (key == "epoch")
      r = std::from_chars(b, e, s.epoch);
    else if (key == "next_batch")
      r = std::from_chars(b, e, s.next_batch);
    else if (key == "dataset_size")
      r = std::from_chars(b, e, s.dataset_size);
    else if (key == "global_batch")
      r = std::from_chars(b, e, s.global_batch);
    else
      throw ConfigError("loader state: unknown field '" + key + "'");
    if (r.ec != std::errc() || r.ptr != e)
      throw ConfigError("loader state: field '" + word + "' is not a number");
    ++seen;
  }
  if (seen != 5) throw ConfigError("loader state: expected 5 fields, got " + std::to_string(seen));
  return s;
}

}  // namespace stoke
