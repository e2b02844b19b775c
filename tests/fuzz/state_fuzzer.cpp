// libFuzzer target: the input is a saved loader state string (what a training script stores in
// its checkpoint and hands back to resume) -> LoaderState::parse -> serialize -> parse.
//
// Checks beyond the sanitizers:
//   * parse returns a state or a ConfigError, nothing else;
//   * what parse accepts, serialize writes back as a "stoke-state/2" string that parses to the
//     same state (a v1 state's position becomes plain_position());
//   * plain_position() stays within [0, max(dataset_size, 0)], whatever the fields (UBSan
//     catches a product that overflows).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "stoke/error.hpp"
#include "stoke/state.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  stoke::LoaderState s;
  try {
    s = stoke::LoaderState::parse(text);
  } catch (const stoke::ConfigError&) {
    return 0;
  }
  const std::string again = s.serialize();
  STOKE_FUZZ_CHECK(again.starts_with("stoke-state/2 "), again);
  stoke::LoaderState back;
  try {
    back = stoke::LoaderState::parse(again);
  } catch (const stoke::ConfigError& e) {
    stoke::fuzz::fail("a parsed state, serialized, does not parse", e.what());
  }
  STOKE_FUZZ_CHECK(back == s, again);
  const std::int64_t p = s.plain_position();
  STOKE_FUZZ_CHECK(p >= 0 && p <= std::max<std::int64_t>(s.dataset_size, 0), std::to_string(p));
  return 0;
}
