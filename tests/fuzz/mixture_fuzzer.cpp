// libFuzzer target: the input is a mixture's text, as a user writes it in a mixture file or
// passes it as Options::sources' JSON (api/mixture_text.hpp) -> parse_sources, and the same text
// as a mixture file's -> parse_mixture_file.
//
// Checks beyond the sanitizers:
//   * each returns sources or a ConfigError, nothing else;
//   * what parse_sources accepts, sources_text writes back as text that parses to the same
//     sources (every field), and writes again identically;
//   * a mixture file that parses names at least one source, each with data, and clears data;
//     its relative paths are under the file's folder.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/mixture_text.hpp"
#include "fuzz_support.hpp"
#include "stoke/error.hpp"

namespace {

bool same(const stoke::MixtureSource& a, const stoke::MixtureSource& b) {
  return a.data == b.data && a.weight == b.weight && a.samples == b.samples &&
         a.repeat == b.repeat && a.label_offset == b.label_offset && a.split == b.split &&
         a.label_field == b.label_field && a.image_column == b.image_column &&
         a.label_column == b.label_column && a.image_root == b.image_root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto sources = stoke::detail::parse_sources(text, "sources");
    const std::string again = stoke::detail::sources_text(sources);
    std::vector<stoke::MixtureSource> back;
    try {
      back = stoke::detail::parse_sources(again, "sources");
    } catch (const stoke::ConfigError& e) {
      stoke::fuzz::fail("written sources do not parse", e.what());
    }
    STOKE_FUZZ_CHECK(back.size() == sources.size(), again);
    for (std::size_t i = 0; i < back.size(); ++i)
      STOKE_FUZZ_CHECK(same(back[i], sources[i]), again);
    STOKE_FUZZ_CHECK(stoke::detail::sources_text(back) == again, again);
  } catch (const stoke::ConfigError&) {
  }
  stoke::Options o;
  o.data = "/runs/mix.json";
  try {
    if (stoke::detail::parse_mixture_file(text, o.data, o)) {
      STOKE_FUZZ_CHECK(!o.sources.empty() && o.data.empty(), std::string(text));
      for (const stoke::MixtureSource& s : o.sources)
        STOKE_FUZZ_CHECK(!s.data.empty(), std::string(text));
    } else {
      STOKE_FUZZ_CHECK(o.sources.empty() && o.data == "/runs/mix.json", std::string(text));
    }
  } catch (const stoke::ConfigError&) {
  }
  return 0;
}
