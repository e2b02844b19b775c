#include "data/tar_index.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>
#include <string_view>

#include "common/text.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

constexpr std::size_t kBlock = 512;
// Headers are read a window at a time, so walking a shard of small members takes one read per
// window rather than one per member (what makes a walk over HTTP range requests affordable).
constexpr std::size_t kWindow = std::size_t{1} << 20;
constexpr char kSidecarMagic[] = "# stoke shard index 1 ";

// The zero bytes that follow `n` bytes of member data up to the next block boundary. (Not
// `round_up(n) - n`: rounding up a size near 2^64 would wrap.)
std::uint64_t padding(std::uint64_t n) {
  return (kBlock - n % kBlock) % kBlock;
}

// The shard's bytes through a sliding window of read_at calls.
class Window {
 public:
  Window(const ReadAt& read_at, std::uint64_t total) : read_at_(read_at), total_(total) {}

  // Bytes [offset, offset + n), or nullptr when the shard ends before offset + n. (Written so
  // that no offset or size a header claims can wrap.)
  const std::uint8_t* at(std::uint64_t offset, std::size_t n) {
    if (offset >= start_ && offset - start_ <= bytes_.size() &&
        n <= bytes_.size() - (offset - start_))
      return bytes_.data() + (offset - start_);
    if (offset > total_ || n > total_ - offset) return nullptr;
    const auto want =
        static_cast<std::size_t>(std::min<std::uint64_t>(std::max(n, kWindow), total_ - offset));
    bytes_.resize(want);
    bytes_.resize(read_at_(offset, bytes_.data(), want));
    start_ = offset;
    return bytes_.size() >= n ? bytes_.data() : nullptr;
  }

 private:
  const ReadAt& read_at_;
  std::uint64_t total_;
  std::uint64_t start_ = 0;
  std::vector<std::uint8_t> bytes_;
};

// A numeric header field: octal digits padded with spaces or NULs, or GNU's base-256 (first
// byte's high bit set) for sizes of 8 GiB and more.
std::optional<std::uint64_t> parse_number(const std::uint8_t* field, std::size_t n) {
  if (field[0] & 0x80) {
    if (field[0] & 0x40) return std::nullopt;  // negative
    std::uint64_t v = field[0] & 0x3f;
    for (std::size_t i = 1; i < n; ++i) {
      if (v >> 56) return std::nullopt;
      v = v << 8 | field[i];
    }
    return v;
  }
  std::size_t i = 0;
  while (i < n && (field[i] == ' ' || field[i] == 0)) ++i;
  std::uint64_t v = 0;
  bool digits = false;
  for (; i < n && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v >> 61) return std::nullopt;
    v = v * 8 + static_cast<std::uint64_t>(field[i] - '0');
    digits = true;
  }
  for (; i < n; ++i) {
    if (field[i] != ' ' && field[i] != 0) return std::nullopt;
  }
  if (!digits) return std::nullopt;
  return v;
}

// The header checksum: the sum of its bytes with the checksum field read as spaces (unsigned,
// or signed as some old writers computed it).
bool checksum_ok(const std::uint8_t* h) {
  const auto stored = parse_number(h + 148, 8);
  if (!stored) return false;
  std::uint64_t unsigned_sum = 0;
  std::int64_t signed_sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const std::uint8_t b = (i >= 148 && i < 156) ? ' ' : h[i];
    unsigned_sum += b;
    signed_sum += static_cast<signed char>(b);
  }
  return *stored == unsigned_sum || static_cast<std::int64_t>(*stored) == signed_sum;
}

std::string field_string(const std::uint8_t* field, std::size_t n) {
  const auto* c = reinterpret_cast<const char*>(field);
  return std::string(c, strnlen(c, n));
}

// A pax extended header's records, "<length> <key>=<value>\n": the path and size it sets.
struct PaxOverrides {
  std::optional<std::string> path;
  std::optional<std::uint64_t> size;
};
bool parse_pax(const std::uint8_t* data, std::size_t n, PaxOverrides& out) {
  const auto* p = reinterpret_cast<const char*>(data);
  std::size_t at = 0;
  while (at < n) {
    if (p[at] == 0) break;  // padding
    std::size_t length = 0;
    const auto [end, ec] = std::from_chars(p + at, p + n, length);
    // The record, [at, at + length), must hold its digits, the space and the newline, and end
    // within the header (a length near 2^64 would wrap `at + length` back into it).
    const auto digits = static_cast<std::size_t>(end - (p + at));
    if (ec != std::errc() || end >= p + n || *end != ' ' || length > n - at ||
        length < digits + 2 || p[at + length - 1] != '\n')
      return false;
    const std::string_view record(end + 1, length - digits - 2);
    const auto eq = record.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string_view key = record.substr(0, eq);
    const std::string_view value = record.substr(eq + 1);
    if (key == "path") out.path = std::string(value);
    if (key == "size") {
      std::uint64_t v = 0;
      const auto [vend, vec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (vec != std::errc() || vend != value.data() + value.size()) return false;
      out.size = v;
    }
    at += length;
  }
  return true;
}

// A ustar or GNU header's own name: POSIX ustar ("ustar\0" "00") splits long names into
// prefix/name; GNU's magic ("ustar  \0") uses that area for other things.
std::string header_name(const std::uint8_t* h) {
  std::string name = field_string(h, 100);
  if (std::memcmp(h + 257, "ustar\0", 6) == 0) {
    const std::string prefix = field_string(h + 345, 155);
    if (!prefix.empty()) name = prefix + "/" + name;
  }
  return name;
}

bool is_file_type(char type) {
  return type == '0' || type == '\0' || type == '7';
}

bool all_zero(const std::uint8_t* block) {
  return std::all_of(block, block + kBlock, [](std::uint8_t b) { return b == 0; });
}

bool is_label_extension(std::string_view ext) {
  return ext == "cls";
}

std::string at_byte(std::uint64_t offset) {
  return "at byte " + std::to_string(offset);
}

// Sidecar fields escape the three characters that would break a line: '%', TAB, newline.
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%')
      out += "%25";
    else if (c == '\t')
      out += "%09";
    else if (c == '\n')
      out += "%0A";
    else
      out += c;
  }
  return out;
}

std::optional<std::string> unescape(std::string_view s) {
  if (s.find('%') == std::string_view::npos) return std::string(s);  // (nearly every field)
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const std::string_view code = s.substr(i + 1, 2);
    if (code == "25")
      out += '%';
    else if (code == "09")
      out += '\t';
    else if (code == "0A")
      out += '\n';
    else
      return std::nullopt;
    i += 2;
  }
  return out;
}

}  // namespace

std::pair<std::string_view, std::string_view> split_member_view(std::string_view name) {
  const std::size_t slash = name.rfind('/');
  const std::size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const std::size_t dot = name.find('.', base);
  if (dot == std::string_view::npos || dot == base || dot + 1 == name.size()) return {name, {}};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

std::pair<std::string, std::string> split_member_name(const std::string& name) {
  const auto [key, ext] = split_member_view(name);
  return {std::string(key), std::string(ext)};
}

bool same_extension(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

ShardIndex walk_tar(const ReadAt& read_at, std::uint64_t shard_bytes) {
  ShardIndex index;
  index.shard_bytes = shard_bytes;
  Window window(read_at, shard_bytes);
  std::uint64_t at = 0;
  PaxOverrides pax;
  std::optional<std::string> long_name;
  for (;;) {
    if (at == shard_bytes) {
      index.damage = "the shard ends " + at_byte(at) +
                     " without tar's end-of-archive blocks: it may have been cut short";
      return index;
    }
    const std::uint8_t* h = window.at(at, kBlock);
    if (h == nullptr) {
      index.damage = "a member header " + at_byte(at) + " is cut short by the shard's end " +
                     at_byte(shard_bytes);
      return index;
    }
    if (all_zero(h)) return index;  // end of archive
    const auto size = parse_number(h + 124, 12);
    if (!checksum_ok(h) || !size) {
      index.damage = "the member header " + at_byte(at) + " is corrupt (bad checksum or size)";
      return index;
    }
    const char type = static_cast<char>(h[156]);
    // The header was read, so at + kBlock <= shard_bytes; every size below is checked against
    // what is left of the shard, never added to an offset first (a claimed size near 2^64,
    // base-256 or pax, would wrap the sum back to this header and walk it forever).
    const std::uint64_t data = at + kBlock;
    const std::uint64_t data_size = type == 'x' || type == 'L' || !pax.size ? *size : *pax.size;
    const std::uint64_t left = shard_bytes - data;
    if (data_size > left) {
      index.damage = "the member " + at_byte(at) + " (" + std::to_string(data_size) +
                     " bytes) is cut short by the shard's end " + at_byte(shard_bytes);
      return index;
    }
    // The shard's end when the padding is cut off (the walk then reports the missing end).
    const std::uint64_t next =
        padding(data_size) > left - data_size ? shard_bytes : data + data_size + padding(data_size);
    if (type == 'x' || type == 'L') {
      if (data_size > kWindow) {
        index.damage = "the extended header " + at_byte(at) + " is implausibly large";
        return index;
      }
      const std::uint8_t* body = window.at(data, static_cast<std::size_t>(data_size));
      if (body == nullptr) {
        index.damage = "the extended header " + at_byte(at) + " is cut short";
        return index;
      }
      if (type == 'L') {
        long_name = field_string(body, static_cast<std::size_t>(data_size));
      } else if (!parse_pax(body, static_cast<std::size_t>(data_size), pax)) {
        index.damage = "the pax header " + at_byte(at) + " is malformed";
        return index;
      }
      at = next;
      continue;
    }
    if (is_file_type(type)) {
      TarMember m;
      if (pax.path)
        m.name = *pax.path;
      else if (long_name)
        m.name = *long_name;
      else
        m.name = header_name(h);
      m.offset = data;
      m.size = data_size;
      if (m.size <= kMaxInlineValue && is_label_extension(split_member_view(m.name).second)) {
        const std::uint8_t* body = window.at(data, static_cast<std::size_t>(m.size));
        if (body != nullptr)
          m.value = trim(std::string(reinterpret_cast<const char*>(body), m.size));
      }
      index.members.push_back(std::move(m));
    }
    // Directories, links, devices and global pax headers ('g') carry no sample bytes.
    pax = {};
    long_name.reset();
    at = next;
  }
}

std::string member_name_before(const ReadAt& read_at, std::uint64_t data) {
  constexpr std::uint64_t kExtendedBlocks = 16;  // a pax or long-name header of up to 8 KiB
  if (data < kBlock || data % kBlock != 0) return "";
  const std::uint64_t from = data - std::min(data, (kExtendedBlocks + 2) * kBlock);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(data - from));
  if (read_at(from, bytes.data(), bytes.size()) != bytes.size()) return "";
  const std::size_t at = bytes.size() - kBlock;
  const std::uint8_t* header = bytes.data() + at;
  if (!checksum_ok(header) || !is_file_type(static_cast<char>(header[156]))) return "";
  // An extended header right before it, whose data ends where the member's header starts.
  for (std::size_t k = 1; k * kBlock <= at; ++k) {
    const std::uint8_t* h = header - k * kBlock;
    const char type = static_cast<char>(h[156]);
    if ((type != 'x' && type != 'L') || !checksum_ok(h)) continue;
    const auto size = parse_number(h + 124, 12);
    if (!size || (*size + kBlock - 1) / kBlock != k - 1) continue;
    if (type == 'L') return field_string(h + kBlock, static_cast<std::size_t>(*size));
    PaxOverrides pax;
    if (parse_pax(h + kBlock, static_cast<std::size_t>(*size), pax) && pax.path) return *pax.path;
    break;
  }
  return header_name(header);
}

std::vector<ShardSample> group_samples(const ShardIndex& index) {
  std::vector<ShardSample> samples;
  std::vector<std::string_view> extensions;  // of the current sample (views into its names)
  for (std::size_t i = 0; i < index.members.size(); ++i) {
    const std::pair<std::string_view, std::string_view> split =
        split_member_view(index.members[i].name);
    const std::string_view key = split.first, ext = split.second;  // (a lambda uses ext)
    if (ext.empty()) continue;  // WebDataset ignores members without an extension
    // A new key starts a sample; so does an extension the current sample already has (two
    // members that would both be its ".jpg"), compared in lower case.
    if (samples.empty() || samples.back().key != key ||
        std::any_of(extensions.begin(), extensions.end(),
                    [&](std::string_view e) { return same_extension(e, ext); })) {
      samples.push_back({std::string(key), {}});
      extensions.clear();
    }
    samples.back().members.push_back(i);
    extensions.push_back(ext);
  }
  return samples;
}

namespace {

void put_octal(char* field, std::size_t width, std::uint64_t v) {
  // width - 1 digits and a NUL, as GNU tar and Python write them.
  for (std::size_t i = width - 1; i-- > 0;) {
    field[i] = static_cast<char>('0' + (v & 7));
    v >>= 3;
  }
  field[width - 1] = 0;
}

std::string ustar_block(const std::string& name, std::uint64_t size, char type) {
  std::string h(kBlock, '\0');
  std::memcpy(h.data(), name.data(), std::min<std::size_t>(name.size(), 100));
  put_octal(h.data() + 100, 8, 0644);
  put_octal(h.data() + 108, 8, 0);
  put_octal(h.data() + 116, 8, 0);
  put_octal(h.data() + 124, 12, size);
  put_octal(h.data() + 136, 12, 0);
  h[156] = type;
  std::memcpy(h.data() + 257,
              "ustar\0"
              "00",
              8);
  std::memset(h.data() + 148, ' ', 8);
  std::uint64_t sum = 0;
  for (unsigned char c : h) sum += c;
  put_octal(h.data() + 148, 7, sum);  // six digits, a NUL, and the space already there
  return h;
}

// One pax record, "<length> key=value\n", its length counting its own digits.
std::string pax_record(const std::string& key, const std::string& value) {
  const std::size_t body = 1 + key.size() + 1 + value.size() + 1;
  std::size_t length = body + 1;
  while (std::to_string(length).size() + body != length) ++length;
  return std::to_string(length) + " " + key + "=" + value + "\n";
}

}  // namespace

std::size_t tar_padding(std::uint64_t size) {
  return static_cast<std::size_t>(padding(size));
}

std::string tar_member_header(const std::string& name, std::uint64_t size) {
  constexpr std::uint64_t kMaxUstarSize = (std::uint64_t{1} << 33) - 1;  // 11 octal digits
  if (name.size() <= 100 && size <= kMaxUstarSize) return ustar_block(name, size, '0');
  std::string records;
  if (name.size() > 100) records += pax_record("path", name);
  if (size > kMaxUstarSize) records += pax_record("size", std::to_string(size));
  std::string out = ustar_block("PaxHeader/" + name.substr(0, 80), records.size(), 'x');
  out += records;
  out.append(tar_padding(records.size()), '\0');
  out += ustar_block(name.substr(0, 100), std::min(size, kMaxUstarSize), '0');
  return out;
}

std::string format_sidecar(const ShardIndex& index) {
  std::string out = kSidecarMagic + std::to_string(index.shard_bytes) + "\n";
  for (const TarMember& m : index.members) {
    // A member without a name is in no sample, and parse_sidecar refuses a line without one.
    if (m.name.empty()) continue;
    out += escape(m.name) + '\t' + std::to_string(m.offset) + '\t' + std::to_string(m.size);
    if (!m.value.empty()) out += '\t' + escape(m.value);
    out += '\n';
  }
  return out;
}

std::optional<ShardIndex> parse_sidecar(const std::string& text, std::uint64_t shard_bytes,
                                        const std::string& source) {
  const std::size_t first_end = text.find('\n');
  const std::string_view first(text.data(),
                               first_end == std::string::npos ? text.size() : first_end);
  const std::size_t magic = sizeof(kSidecarMagic) - 1;
  if (first.substr(0, magic) != std::string_view(kSidecarMagic, magic)) return std::nullopt;
  std::uint64_t bytes = 0;
  const auto [end, ec] = std::from_chars(first.data() + magic, first.data() + first.size(), bytes);
  if (ec != std::errc() || end != first.data() + first.size() || bytes != shard_bytes)
    return std::nullopt;
  ShardIndex index;
  index.shard_bytes = shard_bytes;
  std::size_t at = first_end == std::string::npos ? text.size() : first_end + 1;
  for (int line_no = 2; at < text.size(); ++line_no) {
    const std::size_t eol = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, eol - at);
    at = eol + 1;
    if (line.empty()) continue;
    const auto fail = [&] {
      return ConfigError(source + ":" + std::to_string(line_no) +
                         ": expected 'name<TAB>offset<TAB>size[<TAB>value]', got '" +
                         std::string(line) + "' (delete the file to rebuild it)");
    };
    std::array<std::string_view, 4> fields;
    std::size_t count = 0;
    for (std::size_t from = 0;;) {
      const std::size_t tab = line.find('\t', from);
      if (count == fields.size()) throw fail();
      fields[count++] =
          line.substr(from, tab == std::string_view::npos ? line.size() - from : tab - from);
      if (tab == std::string_view::npos) break;
      from = tab + 1;
    }
    if (count < 3) throw fail();
    TarMember m;
    auto name = unescape(fields[0]);
    if (!name || name->empty()) throw fail();
    m.name = std::move(*name);
    for (auto [field, out] : {std::pair{fields[1], &m.offset}, std::pair{fields[2], &m.size}}) {
      const auto [fend, fec] = std::from_chars(field.data(), field.data() + field.size(), *out);
      if (fec != std::errc() || fend != field.data() + field.size()) throw fail();
    }
    // Within the shard, after its first header (checked so that no offset and size can wrap).
    if (m.offset < kBlock || m.offset > shard_bytes || m.size > shard_bytes - m.offset)
      throw fail();
    if (count == 4) {
      auto value = unescape(fields[3]);
      if (!value) throw fail();
      m.value = std::move(*value);
    }
    index.members.push_back(std::move(m));
  }
  return index;
}

}  // namespace stoke::detail
