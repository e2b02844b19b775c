// libFuzzer target: bytes -> response header lines -> HttpHeaders (loader/src/remote/http_headers),
// the reader of what an HTTP or S3 server answers. The input is split after every '\n', as
// libcurl hands header lines over one at a time (a line may also come without its end).
//
// Checks beyond the sanitizers:
//   * once feed() has refused a line it refuses every later one, and error() says why;
//   * no field it keeps is longer than a line may be (kMaxHeaderLineBytes);
//   * the status is a three-digit code or 0;
//   * a Content-Length it keeps is what std::from_chars reads from the last such header;
//   * a Retry-After it keeps is within [0, kMaxRetryAfterS];
//   * parse_decimal agrees with std::from_chars on every line.

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "remote/http_headers.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "http_headers_fuzzer: %s\n", what);
    std::abort();
  }
}

// What from_chars makes of `s` when all of it is decimal digits.
std::optional<std::uint64_t> reference_decimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  for (char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stoke::detail;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  HttpHeaders h;
  bool refused = false;
  for (std::size_t at = 0; at < input.size();) {
    const std::size_t eol = input.find('\n', at);
    const std::size_t end = eol == std::string_view::npos ? input.size() : eol + 1;
    const std::string_view line = input.substr(at, end - at);
    at = end;
    check(parse_decimal(line) == reference_decimal(line), "parse_decimal differs from from_chars");
    const bool ok = h.feed(line);
    check(!(refused && ok), "a line was read after one was refused");
    check(ok || !h.error().empty(), "a refused line without a reason");
    refused = refused || !ok;
    check(h.etag().size() <= kMaxHeaderLineBytes, "an ETag longer than a line");
    check(h.location().size() <= kMaxHeaderLineBytes, "a Location longer than a line");
    check(h.status() >= 0 && h.status() <= 999, "a status outside 0..999");
    if (const auto r = h.retry_after_s()) check(*r >= 0 && *r <= kMaxRetryAfterS, "Retry-After");
    if (h.content_length()) {
      // The length kept came from a Content-Length line of this response; it must also be the
      // value of this line when this line is one.
      std::string_view t = line;  // without its line end and the white space before it
      if (!t.empty() && t.back() == '\n') t.remove_suffix(1);
      if (!t.empty() && t.back() == '\r') t.remove_suffix(1);
      while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
      if (ok && t.size() > 15 && t.substr(0, 15) == std::string_view("Content-Length:")) {
        std::string_view v = t.substr(15);
        while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
        check(reference_decimal(v) == h.content_length(), "Content-Length differs");
      }
    }
  }
  return 0;
}
