#include "stoke/state.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

#include "stoke/error.hpp"

namespace stoke {

namespace {

constexpr std::string_view kTag = "stoke-state/2";
// Written before states carried a position; still read.
constexpr std::string_view kTagV1 = "stoke-state/1";

// Calls f(key, field) for every serialized field of a state, in the order serialize() writes
// them; v1 has no position.
template <class State, class F>
void for_each_field(State& s, bool v1, F f) {
  f("seed", s.seed);
  f("epoch", s.epoch);
  if (!v1) f("position", s.position);
  f("next_batch", s.next_batch);
  f("dataset_size", s.dataset_size);
  f("global_batch", s.global_batch);
}

}  // namespace

std::string LoaderState::serialize() const {
  std::ostringstream out;
  out << kTag;
  for_each_field(*this, false,
                 [&out](const char* key, const auto& value) { out << ' ' << key << '=' << value; });
  if (repeats != 1) out << " repeats=" << repeats;
  if (!sources.empty()) {
    out << " sources=";
    for (std::size_t k = 0; k < sources.size(); ++k) out << (k > 0 ? "," : "") << sources[k];
  }
  return out.str();
}

std::int64_t LoaderState::plain_position() const {
  if (next_batch <= 0 || global_batch <= 0) return 0;
  // Compared by division first: next_batch x global_batch may not fit in 64 bits.
  if (next_batch > dataset_size / global_batch) return std::max<std::int64_t>(dataset_size, 0);
  return std::min(next_batch * global_batch, dataset_size);
}

LoaderState LoaderState::parse(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string word;
  if (!(in >> word) || (word != kTag && word != kTagV1))
    throw ConfigError("not a saved loader state (expected it to start with '" + std::string(kTag) +
                      "' or '" + std::string(kTagV1) + "'): '" + std::string(text) + "'");
  const bool v1 = word == kTagV1;
  LoaderState s;
  std::set<std::string> seen;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) throw ConfigError("loader state: malformed field '" + word + "'");
    const std::string key = word.substr(0, eq);
    if (!seen.insert(key).second)
      throw ConfigError("loader state: field '" + key + "' appears twice");
    bool known = false;
    const auto read = [&](const char* name, auto& value) {
      if (key != name) return;
      known = true;
      const char* e = word.data() + word.size();
      const auto r = std::from_chars(word.data() + eq + 1, e, value);
      if (r.ec != std::errc() || r.ptr != e)
        throw ConfigError("loader state: field '" + word + "' is not a number");
    };
    for_each_field(s, v1, read);
    if (!v1) read("repeats", s.repeats);  // optional: 1 when absent
    if (!v1 && key == "sources") {        // optional: a mixture's counts, comma-separated
      known = true;
      const char* at = word.data() + eq + 1;
      const char* e = word.data() + word.size();
      while (true) {
        std::int64_t n = 0;
        const auto r = std::from_chars(at, e, n);
        if (r.ec != std::errc() || n < 0 || (r.ptr != e && *r.ptr != ','))
          throw ConfigError("loader state: field '" + word +
                            "' is not a list of sample counts (N,N,...)");
        s.sources.push_back(n);
        if (r.ptr == e) break;
        at = r.ptr + 1;
      }
    }
    if (!known) throw ConfigError("loader state: unknown field '" + key + "'");
  }
  for_each_field(s, v1, [&seen](const char* name, const auto&) {
    if (!seen.contains(name))
      throw ConfigError("loader state: field '" + std::string(name) + "' is missing");
  });
  if (v1) s.position = s.plain_position();
  if (!s.sources.empty()) {
    std::int64_t sum = 0;
    for (std::int64_t n : s.sources)
      if (__builtin_add_overflow(sum, n, &sum))
        throw ConfigError("loader state: its sources' counts add up past 2^63");
    if (sum != s.position)
      throw ConfigError("loader state: its sources' counts add up to " + std::to_string(sum) +
                        ", not its position " + std::to_string(s.position));
  }
  return s;
}

}  // namespace stoke
