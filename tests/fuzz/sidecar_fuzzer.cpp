// libFuzzer target: the input is a sidecar index (<shard>.idx, as format_sidecar writes it and a
// server or the index cache hands back) -> parse_sidecar. The shard size it is checked against
// is the one its own first line claims (so the fuzzer reaches the member lines), or 1 MiB when
// that line does not parse.
//
// Checks beyond the sanitizers:
//   * parse_sidecar returns an index, std::nullopt or a ConfigError, nothing else;
//   * every member it accepts lies inside the shard after a header: offset >= 512 and
//     size <= shard_bytes - offset (walk_tar's promise, which the readers of a member's bytes
//     rely on);
//   * what it accepts survives format_sidecar -> parse_sidecar unchanged.

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "data/tar_index.hpp"
#include "fuzz_support.hpp"
#include "stoke/error.hpp"

namespace {

using stoke::detail::ShardIndex;

std::uint64_t claimed_shard_bytes(std::string_view text) {
  constexpr std::string_view kMagic = "# stoke shard index 1 ";
  std::uint64_t bytes = std::uint64_t{1} << 20;
  if (text.starts_with(kMagic))
    std::from_chars(text.data() + kMagic.size(), text.data() + text.size(), bytes);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::uint64_t shard_bytes = claimed_shard_bytes(text);
  std::optional<ShardIndex> index;
  try {
    index = stoke::detail::parse_sidecar(text, shard_bytes, "fuzz.tar.idx");
  } catch (const stoke::ConfigError&) {
    return 0;
  }
  if (!index) return 0;
  STOKE_FUZZ_CHECK(index->shard_bytes == shard_bytes);
  for (const auto& m : index->members) {
    STOKE_FUZZ_CHECK(m.offset >= 512 && m.offset <= shard_bytes && m.size <= shard_bytes - m.offset,
                     "offset " + std::to_string(m.offset) + ", size " + std::to_string(m.size) +
                         " in a shard of " + std::to_string(shard_bytes));
  }
  std::optional<ShardIndex> back;
  try {
    back = stoke::detail::parse_sidecar(stoke::detail::format_sidecar(*index), shard_bytes,
                                        "fuzz.tar.idx");
  } catch (const stoke::ConfigError& e) {
    stoke::fuzz::fail("an accepted sidecar, written again, does not parse", e.what());
  }
  STOKE_FUZZ_CHECK(back && back->members.size() == index->members.size());
  for (std::size_t i = 0; i < index->members.size(); ++i) {
    const auto& a = index->members[i];
    const auto& b = back->members[i];
    STOKE_FUZZ_CHECK(a.name == b.name && a.offset == b.offset && a.size == b.size &&
                     a.value == b.value);
  }
  return 0;
}
