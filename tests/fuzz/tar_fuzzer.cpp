// libFuzzer target: the input is a whole shard, read through a ReadAt over its bytes ->
// walk_tar (ustar, ustar's prefix field, GNU long names 'L', pax 'x' path= and size=, base-256
// sizes) -> group_samples -> format_sidecar -> parse_sidecar.
//
// Checks beyond the sanitizers (what the rest of the loader assumes of a walk):
//   * every member's data lies inside the shard, after its own header: offset >= 512 and
//     size <= shard_bytes - offset; members come in increasing offset order;
//   * an inline label value is at most kMaxInlineValue bytes;
//   * every sample's member indices are valid and increasing;
//   * a whole shard's index survives its sidecar: parse_sidecar(format_sidecar(index)) gives
//     the same named members (the remote index cache stores exactly that text and reads it
//     back on the next start);
//   * walk_tar throws nothing (the reader here never fails);
//   * member_name_before (a member's name read back for messages), at every member's data and
//     every block boundary, reads nothing outside the shard and throws nothing.
// Each input is walked as it is and, when that differs, with the checksum of every header that
// carries ustar's magic recomputed, so mutations of the size, type and name fields count.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "data/tar_index.hpp"
#include "fuzz_support.hpp"
#include "stoke/error.hpp"

namespace {

using stoke::detail::ShardIndex;
using stoke::detail::TarMember;

void check_sidecar_round_trip(const ShardIndex& index) {
  const std::string text = stoke::detail::format_sidecar(index);
  std::optional<ShardIndex> back;
  try {
    back = stoke::detail::parse_sidecar(text, index.shard_bytes, "fuzz.tar.idx");
  } catch (const stoke::Error& e) {
    stoke::fuzz::fail("the sidecar of a walked shard does not parse", e.what());
  }
  STOKE_FUZZ_CHECK(back.has_value());
  // The sidecar leaves out members without a name (they are in no sample).
  std::vector<const TarMember*> named;
  for (const TarMember& m : index.members) {
    if (!m.name.empty()) named.push_back(&m);
  }
  STOKE_FUZZ_CHECK(back->members.size() == named.size());
  for (std::size_t i = 0; i < named.size(); ++i) {
    const TarMember& a = *named[i];
    const TarMember& b = back->members[i];
    STOKE_FUZZ_CHECK(
        a.name == b.name && a.offset == b.offset && a.size == b.size && a.value == b.value,
        "member " + std::to_string(i));
  }
}

// The input with the checksum of every block that carries ustar's magic (at 257) recomputed:
// a mutated size, type or name field would otherwise almost never reach past checksum_ok.
std::string with_checksums(const std::uint8_t* data, std::size_t size) {
  std::string out(reinterpret_cast<const char*>(data), size);
  for (std::size_t at = 0; size - at >= 512; at += 512) {
    char* h = out.data() + at;
    if (std::memcmp(h + 257, "ustar", 5) != 0) continue;
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (std::size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(h[i]);
    std::snprintf(h + 148, 8, "%06o", sum);  // six digits, a NUL, and the space already there
  }
  return out;
}

void walk(const std::uint8_t* data, std::size_t size) {
  const stoke::detail::ReadAt read_at = [data, size](std::uint64_t offset, void* dst,
                                                     std::size_t n) -> std::size_t {
    if (offset >= size) return 0;
    const std::size_t take = std::min<std::uint64_t>(n, size - offset);
    std::memcpy(dst, data + offset, take);
    return take;
  };
  const ShardIndex index = stoke::detail::walk_tar(read_at, size);
  STOKE_FUZZ_CHECK(index.shard_bytes == size);
  std::uint64_t previous_end = 0;
  for (const TarMember& m : index.members) {
    STOKE_FUZZ_CHECK(m.offset >= 512 && m.offset <= size && m.size <= size - m.offset,
                     m.name + " at " + std::to_string(m.offset) + ", " + std::to_string(m.size) +
                         " bytes, in a shard of " + std::to_string(size));
    STOKE_FUZZ_CHECK(m.offset >= previous_end);
    previous_end = m.offset + m.size;
    STOKE_FUZZ_CHECK(m.value.size() <= stoke::detail::kMaxInlineValue);
  }
  for (const auto& sample : stoke::detail::group_samples(index)) {
    STOKE_FUZZ_CHECK(!sample.members.empty());
    for (std::size_t k = 0; k < sample.members.size(); ++k) {
      STOKE_FUZZ_CHECK(sample.members[k] < index.members.size());
      STOKE_FUZZ_CHECK(k == 0 || sample.members[k] > sample.members[k - 1]);
    }
  }
  if (index.damage.empty()) check_sidecar_round_trip(index);
  std::size_t names = 0;
  for (const TarMember& m : index.members)
    names += stoke::detail::member_name_before(read_at, m.offset).size();
  for (std::uint64_t at = 0; at <= size; at += 512)
    names += stoke::detail::member_name_before(read_at, at).size();
  STOKE_FUZZ_CHECK(names < (std::size_t{1} << 40));  // (keeps the calls)
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  walk(data, size);
  const std::string fixed = with_checksums(data, size);
  if (size >= 512 && std::memcmp(fixed.data(), data, size) != 0)
    walk(reinterpret_cast<const std::uint8_t*>(fixed.data()), size);
  return 0;
}
