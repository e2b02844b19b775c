#pragma once
// The response header lines of an HTTP transfer, as libcurl hands them over one at a time, read
// into the few fields stoke acts on: the status, ETag, Retry-After, Content-Length, Location
// and a Link header's rel="next" target (a paginated listing's next page). A server stoke does not control sends them, so the reader is bounded: a line longer
// than kMaxHeaderLineBytes, more than kMaxHeaderLines in one response or more than
// kMaxResponses responses in one transfer (redirects, 1xx) make feed() return false with
// error() saying which limit was passed, and the transfer is abandoned. Nothing it keeps grows
// past kMaxHeaderLineBytes.
//
// A status line ("HTTP/...") starts a new response and forgets the fields of the one before, so
// the fields always describe the last response (a redirect's ETag is not the object's).
//
// Thread-safety: a value; one thread at a time.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stoke::detail {

inline constexpr std::size_t kMaxHeaderLineBytes = 16 * 1024;
inline constexpr int kMaxHeaderLines = 200;
inline constexpr int kMaxResponses = 16;
// A Retry-After beyond this is taken as this (the deadline ends the wait sooner anyway).
inline constexpr double kMaxRetryAfterS = 3600;

class HttpHeaders {
 public:
  // One header line, with or without its CRLF. Returns false (and keeps nothing of the line)
  // when a bound is passed; the fields read so far stay.
  bool feed(std::string_view line);

  // Why feed() returned false; "" while it has not.
  const std::string& error() const { return error_; }

  // The last response's status code from its status line; 0 before one.
  int status() const { return status_; }
  // The last response's fields; empty / nullopt when it sent none (or sent one that is not
  // well formed: a Content-Length that is not one decimal number, or two that differ; a
  // Retry-After that is not a number of seconds).
  const std::string& etag() const { return etag_; }
  const std::string& location() const { return location_; }
  // The target of the last response's Link entry with rel="next", or "".
  const std::string& next_link() const { return next_link_; }
  std::optional<std::uint64_t> content_length() const { return content_length_; }
  std::optional<double> retry_after_s() const { return retry_after_s_; }

 private:
  bool fail(std::string why);
  void header(std::string_view name, std::string_view value);

  std::string error_;
  int responses_ = 0;
  int lines_ = 0;  // in the last response
  int status_ = 0;
  std::string etag_;
  std::string location_;
  std::string next_link_;
  std::optional<std::uint64_t> content_length_;
  bool content_length_bad_ = false;
  std::optional<double> retry_after_s_;
};

// "123" as a number: decimal digits only, no sign or space, nullopt past 2^64 - 1.
std::optional<std::uint64_t> parse_decimal(std::string_view s);

}  // namespace stoke::detail
