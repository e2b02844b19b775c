#include "remote/http_headers.hpp"

#include <algorithm>
#include <cctype>

namespace stoke::detail {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t';
}

// Without the optional white space (SP, HTAB) around a field value.
std::string_view trim_view(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Without its line end (CRLF, or a bare LF).
std::string_view without_eol(std::string_view s) {
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Retry-After's delta-seconds, with a decimal fraction allowed (servers send "0.05"); the
// HTTP-date form is not read (the caller's own backoff applies).
std::optional<double> parse_seconds(std::string_view s) {
  const std::size_t dot = s.find('.');
  const std::string_view digits = s.substr(0, dot);
  if (digits.empty() ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const std::optional<std::uint64_t> whole = parse_decimal(digits);  // nullopt: past 2^64
  double seconds = !whole || *whole > static_cast<std::uint64_t>(kMaxRetryAfterS)
                       ? kMaxRetryAfterS
                       : static_cast<double>(*whole);
  if (dot != std::string_view::npos) {
    const std::string_view fraction = s.substr(dot + 1);
    if (fraction.empty()) return std::nullopt;
    double scale = 0.1;
    for (char c : fraction) {
      if (c < '0' || c > '9') return std::nullopt;
      seconds += (c - '0') * scale;
      scale /= 10;
    }
  }
  return std::min(seconds, kMaxRetryAfterS);
}

}  // namespace

std::optional<std::uint64_t> parse_decimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return std::nullopt;
    v = v * 10 + digit;
  }
  return v;
}

bool HttpHeaders::fail(std::string why) {
  if (error_.empty()) error_ = std::move(why);
  return false;
}

bool HttpHeaders::feed(std::string_view line) {
  if (!error_.empty()) return false;
  if (line.size() > kMaxHeaderLineBytes)
    return fail("a response header line of " + std::to_string(line.size()) + " bytes (over " +
                std::to_string(kMaxHeaderLineBytes) + ")");
  if (line.starts_with("HTTP/")) {
    if (++responses_ > kMaxResponses)
      return fail("more than " + std::to_string(kMaxResponses) + " responses in one transfer");
    lines_ = 0;
    etag_.clear();
    location_.clear();
    next_link_.clear();
    content_length_.reset();
    content_length_bad_ = false;
    retry_after_s_.reset();
    // "HTTP/1.1 200 OK", "HTTP/2 206": the code is the three digits after the first space.
    status_ = 0;
    const std::size_t space = line.find(' ');
    if (space != std::string_view::npos && line.size() - space > 3) {
      const std::optional<std::uint64_t> code = parse_decimal(line.substr(space + 1, 3));
      if (code) status_ = static_cast<int>(*code);
    }
    return true;
  }
  if (++lines_ > kMaxHeaderLines)
    return fail("more than " + std::to_string(kMaxHeaderLines) + " header lines in one response");
  const std::string_view field = without_eol(line);
  // The blank line that ends the headers, and obsolete folded continuation lines, carry no
  // field stoke reads.
  if (field.empty() || is_space(field.front())) return true;
  const std::size_t colon = field.find(':');
  if (colon == std::string_view::npos || colon == 0) return true;
  header(field.substr(0, colon), trim_view(field.substr(colon + 1)));
  return true;
}

void HttpHeaders::header(std::string_view name, std::string_view value) {
  if (iequals(name, "etag")) {
    etag_.assign(value);
  } else if (iequals(name, "location")) {
    location_.assign(value);
  } else if (iequals(name, "link")) {
    // RFC 8288: entries "<target>; param; param", separated by commas; the one rel="next".
    for (std::size_t at = 0; at < value.size();) {
      const std::size_t open = value.find('<', at);
      if (open == std::string_view::npos) break;
      const std::size_t close = value.find('>', open);
      if (close == std::string_view::npos) break;
      const std::size_t end = std::min(value.find(',', close), value.size());
      const std::string_view params = value.substr(close + 1, end - close - 1);
      if (params.find("rel=\"next\"") != std::string_view::npos ||
          params.find("rel=next") != std::string_view::npos)
        next_link_.assign(value.substr(open + 1, close - open - 1));
      at = end == value.size() ? end : end + 1;
    }
  } else if (iequals(name, "retry-after")) {
    retry_after_s_ = parse_seconds(value);
  } else if (iequals(name, "content-length")) {
    // RFC 9110 8.6: a list of identical values may be taken as one; differing values, or one
    // that is not a number, make the length unknown.
    const std::optional<std::uint64_t> n = parse_decimal(value);
    if (content_length_bad_) return;
    if (!n || (content_length_ && *content_length_ != *n)) {
      content_length_.reset();
      content_length_bad_ = true;
      return;
    }
    content_length_ = n;
  }
}

}  // namespace stoke::detail
