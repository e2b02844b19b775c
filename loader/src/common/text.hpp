#pragma once
// Small string helpers shared by the loader's parsers (list files, tar members, HTTP headers,
// the driver's /proc files) and by every message that shows a name it did not choose.
// Thread-safety: pure functions.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/number_text.hpp"

namespace stoke::detail {

// Seconds as a message shows them: 2, 0.5, 1e-06 (printf's %g).
inline std::string seconds_text(double s) {
  return decimal_text(s);
}

// `s` without leading and trailing white space.
inline std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// `s` with ASCII letters in lower case.
inline std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

namespace text_detail {
inline void hex_byte(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}
// The length of the well-formed UTF-8 sequence at s[i] (1 to 4), or 0 when there is none; `cp`
// gets its code point.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  if (b >= 0xc2 && b <= 0xdf) {
    n = 2;
    cp = b & 0x1f;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 3;
    cp = b & 0x0f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4;
    cp = b & 0x07;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (c & 0x3f);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not well formed.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}
}  // namespace text_detail

// `s` made safe to print: a name, path or URL taken from data or a server can hold a newline or
// a terminal escape that would forge a log line. C0 and C1 control characters, DEL and bytes
// that are not well-formed UTF-8 become \xNN (\n, \r, \t as themselves escaped); printable
// UTF-8 (names in any script) stays as it is. Every message that shows such a name passes it
// through here.
inline std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n' || c == '\r' || c == '\t') {
      out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
      ++i;
    } else if (c < 0x80) {
      text_detail::hex_byte(out, c);
      ++i;
    } else {
      std::uint32_t cp = 0;
      const std::size_t n = text_detail::utf8_sequence(s, i, cp);
      if (n == 0 || (cp >= 0x80 && cp <= 0x9f)) {  // not UTF-8, or a C1 control
        const std::size_t bytes = n == 0 ? 1 : n;
        for (std::size_t k = 0; k < bytes; ++k)
          text_detail::hex_byte(out, static_cast<unsigned char>(s[i + k]));
        i += bytes;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
    }
  }
  return out;
}

// A URL as it may be shown in a message or a log: userinfo ("user:pass@") becomes "***@", and
// the value of every query parameter that carries a signature or a credential (presigned S3 and
// GCS URLs, tokens) becomes "REDACTED"; then printable(). Names that are not URLs pass through
// printable() alone.
inline std::string redact_url(std::string_view url) {
  std::string out(url);
  const std::size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const std::size_t host = scheme + 3;
    const std::size_t end = std::min(out.find_first_of("/?#", host), out.size());
    const std::size_t at = out.rfind('@', end == 0 ? 0 : end - 1);
    if (at != std::string::npos && at >= host && at < end) out.replace(host, at - host, "***");
  }
  const std::size_t query = out.find('?');
  if (query != std::string::npos) {
    static constexpr std::string_view kSecret[] = {"x-amz-signature",
                                                   "x-amz-credential",
                                                   "x-amz-security-token",
                                                   "x-goog-signature",
                                                   "x-goog-credential",
                                                   "signature",
                                                   "sig",
                                                   "awsaccesskeyid",
                                                   "token",
                                                   "access_token",
                                                   "password",
                                                   "secret"};
    std::string rebuilt = out.substr(0, query + 1);
    const std::size_t fragment = std::min(out.find('#', query), out.size());
    for (std::size_t from = query + 1; from < fragment;) {
      const std::size_t amp = std::min(out.find('&', from), fragment);
      const std::string param = out.substr(from, amp - from);
      const std::size_t eq = param.find('=');
      const std::string key = lowercase(param.substr(0, eq));
      const bool secret =
          std::find(std::begin(kSecret), std::end(kSecret), key) != std::end(kSecret);
      rebuilt += secret && eq != std::string::npos ? param.substr(0, eq + 1) + "REDACTED" : param;
      if (amp < fragment) rebuilt += '&';
      from = amp + 1;
    }
    rebuilt += out.substr(fragment);
    out = std::move(rebuilt);
  }
  return printable(out);
}

}  // namespace stoke::detail
