#pragma once
// WebDataset shards: POSIX tar files (ustar and pax, as GNU tar, Python's tarfile and
// webdataset.TarWriter write them) whose consecutive members sharing a key (the path up to the
// first dot of its last component: "a/000123.jpg" and "a/000123.cls" share "a/000123") form one
// sample. This reads a shard's member table by walking its headers, without reading the members'
// bytes, and groups the members into samples. It also reads and writes the sidecar index
// (<shard>.idx) that makes the walk unnecessary.
//
// Thread-safety: functions are reentrant; a ShardIndex is a value.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stoke::detail {

// Reads bytes [offset, offset + n) of a shard into dst, returning how many were read (fewer only
// at the end of the shard). Throws Error when the bytes cannot be read.
using ReadAt = std::function<std::size_t(std::uint64_t offset, void* dst, std::size_t n)>;

struct TarMember {
  std::string name;
  std::uint64_t offset = 0;  // of its data, from the start of the shard
  std::uint64_t size = 0;
  std::string value;  // the text of a small label member (.cls), read along with the headers
};

struct ShardIndex {
  std::uint64_t shard_bytes = 0;
  std::vector<TarMember> members;  // regular files, in archive order
  // The shard ends early or a header is damaged: the members from here on are lost. Empty when
  // the shard is whole.
  std::string damage;
};

// Members whose data is at most this large and whose extension is a label's (.cls) have their
// text read into TarMember::value while walking.
inline constexpr std::uint64_t kMaxInlineValue = 256;

// Walks the headers of a shard of `shard_bytes` bytes. A truncated or corrupt shard is not an
// error: what precedes the damage is returned, and `damage` says where and what. Throws Error
// only when read_at does.
ShardIndex walk_tar(const ReadAt& read_at, std::uint64_t shard_bytes);

// The name of the member whose data starts at byte `data_offset` of a shard, read back from its
// header (and the pax or GNU long-name header before it) through read_at: what the index does
// not keep, for messages. "" when no member header is there. Throws what read_at throws.
std::string member_name_before(const ReadAt& read_at, std::uint64_t data_offset);

// WebDataset's split of a member name into (key, extension): "a/b.seg.png" -> ("a/b",
// "seg.png"). No extension: the whole name and "".
std::pair<std::string, std::string> split_member_name(const std::string& name);
// The same split as views into `name` (no copies: the indexing of a shard calls it per member).
std::pair<std::string_view, std::string_view> split_member_view(std::string_view name);
// Whether two extensions are the same with ASCII letters compared in lower case.
bool same_extension(std::string_view a, std::string_view b);

// One sample of a shard: the members sharing a key.
struct ShardSample {
  std::string key;
  std::vector<std::size_t> members;  // into ShardIndex::members, in archive order
};
std::vector<ShardSample> group_samples(const ShardIndex& index);

// Writing shards: the header block(s) of a regular member `name` of `size` bytes (a pax header
// first when the name or size does not fit ustar's fields), mode 0644, owner 0 and mtime 0, so
// the same input always gives the same bytes. The member's data follows, then
// tar_padding(size) zero bytes; kTarEndBytes zero bytes end the archive.
std::string tar_member_header(const std::string& name, std::uint64_t size);
std::size_t tar_padding(std::uint64_t size);
inline constexpr std::size_t kTarEndBytes = 1024;

// The sidecar index, "<shard>.idx": text, one member per line, "name<TAB>offset<TAB>size" and,
// for label members, "<TAB>value"; a first line "# stoke shard index 1 <shard bytes>". Members
// without a name (in no sample) are left out.
std::string format_sidecar(const ShardIndex& index);
// Parses a sidecar; std::nullopt when it is not one or describes a shard of another size (a
// stale index is rebuilt, never trusted). `source` names it in messages. Throws ConfigError for
// a sidecar that claims the right size but is malformed (naming the line).
std::optional<ShardIndex> parse_sidecar(const std::string& text, std::uint64_t shard_bytes,
                                        const std::string& source);

}  // namespace stoke::detail
