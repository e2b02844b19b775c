#include "data/shard_list.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>

#include "common/text.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool names_shard(const std::string& name) {
  return is_url(name) || ends_with(name, ".tar");
}

// The alternatives a brace group's body stands for: "A..B" (integers) or "x,y,z".
std::vector<std::string> alternatives(const std::string& body, const std::string& pattern) {
  const std::size_t dots = body.find("..");
  if (dots != std::string::npos) {
    const std::string a = body.substr(0, dots);
    const std::string b = body.substr(dots + 2);
    long long from = 0;
    long long to = 0;
    const auto parse = [](const std::string& s, long long& v) {
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      return !s.empty() && ec == std::errc() && end == s.data() + s.size() && v >= 0;
    };
    if (parse(a, from) && parse(b, to)) {
      // (Unsigned: 0..LLONG_MAX would overflow a signed count.)
      const auto count = static_cast<unsigned long long>(from <= to ? to - from : from - to) + 1;
      if (count > kMaxShards)
        throw ConfigError(redact_url(pattern) + ": {" + body + "} names more than " +
                          std::to_string(kMaxShards) + " shards");
      const bool padded = (a.size() > 1 && a[0] == '0') || (b.size() > 1 && b[0] == '0');
      const std::size_t width = padded ? std::max(a.size(), b.size()) : 0;
      std::vector<std::string> out;
      out.reserve(static_cast<std::size_t>(count));
      for (long long v = from;; v += from <= to ? 1 : -1) {
        std::string s = std::to_string(v);
        if (s.size() < width) s.insert(0, width - s.size(), '0');
        out.push_back(std::move(s));
        if (v == to) break;
      }
      return out;
    }
  }
  std::vector<std::string> out;
  for (std::size_t from = 0;;) {
    const std::size_t comma = body.find(',', from);
    out.push_back(body.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return out;
}

ConfigError too_many_bytes(const std::string& where) {
  return ConfigError(redact_url(where) + ": names more than " +
                     std::to_string(kMaxShardListBytes >> 20) + " MiB of shard names in all");
}

}  // namespace

std::vector<std::string> split_top_level(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string current;
  for (char c : s) {
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(std::move(current));
      current.clear();
      continue;
    }
    current += c;
  }
  out.push_back(std::move(current));
  return out;
}

std::vector<std::string> expand_names(const std::string& spec) {
  std::vector<std::string> out;
  std::size_t bytes = 0;
  for (const std::string& part : split_top_level(spec)) {
    if (part.empty()) continue;
    for (std::string& name : expand_braces(part)) {
      bytes += name.size();
      out.push_back(std::move(name));
    }
    if (out.size() > kMaxShards)
      throw ConfigError(redact_url(spec) + ": names more than " + std::to_string(kMaxShards) +
                        " shards");
    if (bytes > kMaxShardListBytes) throw too_many_bytes(spec);
  }
  return out;
}

std::optional<std::vector<std::string>> parse_shard_list_file(std::istream& in,
                                                              const std::string& base,
                                                              const std::string& source) {
  return parse_name_list_file(in, base, source, names_shard,
                              "a shard (a .tar path or an http://, https:// or s3:// URL)");
}

std::optional<std::vector<std::string>> parse_name_list_file(std::istream& in,
                                                             const std::string& base,
                                                             const std::string& source,
                                                             bool (*names)(const std::string&),
                                                             const char* expected) {
  std::vector<std::string> shards;
  std::size_t bytes = 0;  // of the names in `shards`
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> listed = expand_names(line);
    if (line.find('\t') != std::string::npos || listed.empty() ||
        !std::all_of(listed.begin(), listed.end(), names)) {
      if (shards.empty()) return std::nullopt;
      throw ConfigError(source + ":" + std::to_string(line_no) + ": expected " + expected +
                        ", got '" + redact_url(line) + "'");
    }
    // The cap is on the whole list, not on each line (lines of a million names each would
    // otherwise add up without bound).
    if (listed.size() > kMaxShards - shards.size())
      throw ConfigError(source + ":" + std::to_string(line_no) + ": the list names more than " +
                        std::to_string(kMaxShards) + " shards in all (" +
                        std::to_string(shards.size()) + " on the lines before this one, " +
                        std::to_string(listed.size()) +
                        " on this one); split it into datasets of at most " +
                        std::to_string(kMaxShards) + " shards");
    for (std::string& name : listed) {
      if (!is_url(name) && fs::path(name).is_relative())
        name = (fs::path(base) / name).lexically_normal().string();
      bytes += name.size();
      shards.push_back(std::move(name));
    }
    if (bytes > kMaxShardListBytes) throw too_many_bytes(source + ":" + std::to_string(line_no));
  }
  if (shards.empty()) return std::nullopt;
  return shards;
}

bool is_url(const std::string& name) {
  return name.starts_with("http://") || name.starts_with("https://") || name.starts_with("s3://");
}

std::vector<std::string> expand_braces(const std::string& pattern) {
  if (pattern.size() > kMaxShardNameBytes)
    throw ConfigError(redact_url(pattern.substr(0, 64)) + "...: a shard name or pattern of " +
                      std::to_string(pattern.size()) + " bytes (at most " +
                      std::to_string(kMaxShardNameBytes) + ")");
  const std::size_t open = pattern.find('{');
  if (open == std::string::npos) {
    if (pattern.find('}') != std::string::npos)
      throw ConfigError(redact_url(pattern) + ": '}' without a matching '{'");
    return {pattern};
  }
  const std::size_t close = pattern.find('}', open);
  if (close == std::string::npos)
    throw ConfigError(redact_url(pattern) + ": '{' without a matching '}'");
  const std::string body = pattern.substr(open + 1, close - open - 1);
  if (body.find('{') != std::string::npos)
    throw ConfigError(redact_url(pattern) + ": nested braces are not supported");
  const std::string head = pattern.substr(0, open);
  const std::vector<std::string> tails = expand_braces(pattern.substr(close + 1));
  std::vector<std::string> out;
  std::size_t bytes = 0;
  for (const std::string& alt : alternatives(body, pattern)) {
    for (const std::string& tail : tails) {
      out.push_back(head + alt + tail);
      bytes += out.back().size();
      if (out.size() > kMaxShards)
        throw ConfigError(redact_url(pattern) + ": names more than " + std::to_string(kMaxShards) +
                          " shards");
      if (bytes > kMaxShardListBytes) throw too_many_bytes(pattern);
    }
  }
  return out;
}

std::optional<std::vector<std::string>> shard_list(const std::string& data) {
  if (data.empty()) return std::nullopt;
  std::error_code ec;
  const auto status = fs::status(data, ec);
  if (!ec && fs::is_directory(status)) return std::nullopt;
  if (!ec && fs::is_regular_file(status)) {
    if (ends_with(data, ".tar")) return std::vector<std::string>{data};
    std::ifstream in(data);
    if (!in) return std::nullopt;
    return parse_shard_list_file(in, fs::absolute(data).parent_path().string(), data);
  }
  std::vector<std::string> shards = expand_names(data);
  if (shards.empty() || !std::all_of(shards.begin(), shards.end(), names_shard))
    return std::nullopt;
  return shards;
}

}  // namespace stoke::detail
