#include "remote/remote.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "common/text.hpp"
#include "remote/http_headers.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

using Clock = std::chrono::steady_clock;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// Where a name is fetched from and how it is signed.
struct Target {
  std::string shown;  // the name as the user wrote it, redacted, for messages
  std::string url;
  std::string sigv4;  // libcurl's CURLOPT_AWS_SIGV4, or "" for plain HTTP
  std::string userpwd;
  std::vector<std::string> headers;  // signed along with the request
  std::string bucket;
  std::string bearer;  // a Bearer token for the URL's own origin (HF_TOKEN), or ""
};

// "scheme://authority" of a URL as written (for a relative link's base).
std::string origin_url(const std::string& url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  return url.substr(0, url.find('/', scheme_end + 3));
}

// "scheme://host:port" of an http(s) URL, the port written out; "" for another URL.
std::string origin_of(const std::string& url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return {};
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return {};
  const std::size_t host_begin = scheme_end + 3;
  std::string authority = url.substr(host_begin, url.find_first_of("/?#", host_begin) - host_begin);
  if (const std::size_t at = authority.rfind('@'); at != std::string::npos)
    authority = authority.substr(at + 1);
  for (char& c : authority) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t colon = authority.rfind(':');
  const bool has_port = colon != std::string::npos && authority.find(']', colon) == std::string::npos;
  return scheme + "://" + (has_port ? authority : authority + (scheme == "https" ? ":443" : ":80"));
}

bool is_ipv4_form(const std::string& s) {
  int parts = 0;
  for (std::size_t from = 0; from <= s.size(); ++parts) {
    const std::size_t dot = std::min(s.find('.', from), s.size());
    if (dot == from || dot - from > 3) return false;
    for (std::size_t i = from; i < dot; ++i)
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    from = dot + 1;
  }
  return parts == 4;
}

// Why `b` is not a bucket name by AWS's rules for general purpose buckets, or "" when it is one.
// The name becomes part of a host name (bucket.s3.REGION.amazonaws.com) or of the path, so
// nothing outside the rules may pass: not ':' (a port), not '#', '/', '@' or '%'.
std::string bucket_problem(const std::string& b) {
  if (b.size() < 3 || b.size() > 63)
    return "it has " + std::to_string(b.size()) + " characters (3 to 63)";
  for (unsigned char c : b)
    if (!(std::islower(c) || std::isdigit(c) || c == '.' || c == '-'))
      return "'" + std::string(1, static_cast<char>(c)) +
             "' is not a lowercase letter, digit, dot or hyphen";
  const auto alnum = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c));
  };
  if (!alnum(b.front()) || !alnum(b.back())) return "it must begin and end with a letter or digit";
  if (b.find("..") != std::string::npos) return "it has two dots in a row";
  if (is_ipv4_form(b)) return "it is an IP address";
  for (const char* prefix : {"xn--", "sthree-", "amzn-s3-demo-"})
    if (b.starts_with(prefix)) return std::string("it begins with '") + prefix + "'";
  for (const char* suffix : {"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"})
    if (b.ends_with(suffix)) return std::string("it ends with '") + suffix + "'";
  return "";
}

// The region goes into the host name of AWS's endpoint.
bool is_region_name(const std::string& r) {
  return !r.empty() && r.size() <= 32 && std::all_of(r.begin(), r.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '-';
  });
}

// S3's longest key.
constexpr std::size_t kMaxKeyBytes = 1024;

Target resolve(const std::string& name) {
  Target t;
  t.shown = redact_url(name);
  if (!name.starts_with("s3://")) {
    t.url = name;
    const std::string token = env("HF_TOKEN");
    if (!token.empty()) {
      const std::string origin = origin_of(name);
      if (!origin.empty() && origin == origin_of(hf_endpoint())) t.bearer = token;
    }
    return t;
  }
  const std::string rest = name.substr(5);
  const std::size_t slash = rest.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size())
    throw ConfigError(t.shown + ": expected s3://bucket/key");
  t.bucket = rest.substr(0, slash);
  if (const std::string why = bucket_problem(t.bucket); !why.empty())
    throw ConfigError(t.shown + ": '" + t.bucket + "' is not an S3 bucket name: " + why +
                      " (a bucket name has 3 to 63 lowercase letters, digits, dots and hyphens, "
                      "begins and ends with a letter or digit, and is not an IP address)");
  const std::string key = rest.substr(slash + 1);
  if (key.size() > kMaxKeyBytes)
    throw ConfigError(t.shown + ": the key has " + std::to_string(key.size()) +
                      " bytes; S3 keys have at most " + std::to_string(kMaxKeyBytes));
  std::string region = env("AWS_REGION");
  if (region.empty()) region = env("AWS_DEFAULT_REGION");
  if (region.empty()) region = "us-east-1";
  if (!is_region_name(region))
    throw ConfigError(t.shown + ": AWS_REGION '" + region +
                      "' is not a region name (lowercase letters, digits and hyphens, such as "
                      "us-east-1)");
  std::string endpoint = env("AWS_ENDPOINT_URL_S3");
  if (endpoint.empty()) endpoint = env("AWS_ENDPOINT_URL");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  t.url = endpoint.empty() ? "https://" + t.bucket + ".s3." + region + ".amazonaws.com/" +
                                 percent_encoded_path(key)
                           : endpoint + "/" + t.bucket + "/" + percent_encoded_path(key);
  const std::string id = env("AWS_ACCESS_KEY_ID");
  const std::string secret = env("AWS_SECRET_ACCESS_KEY");
  if (id.empty() || secret.empty())
    throw ConfigError(t.shown +
                      ": no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  t.sigv4 = "aws:amz:" + region + ":s3";
  t.userpwd = id + ":" + secret;
  // AWS S3 refuses a request whose signature does not cover the payload's hash; libcurl signs
  // this header when it is given (the body of a GET or HEAD is empty, and never checked).
  t.headers.push_back("x-amz-content-sha256: UNSIGNED-PAYLOAD");
  const std::string token = env("AWS_SESSION_TOKEN");
  if (!token.empty()) t.headers.push_back("x-amz-security-token: " + token);
  return t;
}

// Where a transfer's body goes: a fixed buffer (a range) or a string of at most `limit` bytes.
struct Sink {
  unsigned char* dst = nullptr;
  std::size_t capacity = 0;
  std::size_t got = 0;
  std::string* text = nullptr;
  std::size_t limit = 0;
  bool overflow = false;    // the server sent more than asked (it ignored the Range)
  bool over_limit = false;  // the body for `text` is longer than `limit`
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const std::size_t n = size * count;
  if (sink->text != nullptr) {
    if (n > sink->limit - sink->text->size()) {
      sink->over_limit = true;
      return 0;  // abandons the transfer before the string grows past the limit
    }
    sink->text->append(data, n);
    return n;
  }
  const std::size_t take = std::min(n, sink->capacity - sink->got);
  if (take > 0) std::memcpy(sink->dst + sink->got, data, take);
  sink->got += take;
  if (take < n) {
    sink->overflow = true;
    return 0;  // stop the transfer: all that was asked for is here
  }
  return n;
}

struct Response {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string curl_error;
  HttpHeaders headers;
  std::string redirect_url;  // where the last response pointed (absolute), "" when nowhere
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* r = static_cast<Response*>(user);
  const std::size_t n = size * count;
  return r->headers.feed(std::string_view(data, n)) ? n : 0;  // 0 abandons the transfer
}

// One handle per thread, so that connections are kept alive between requests.
class Handle {
 public:
  Handle() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl_ = curl_easy_init();
  }
  ~Handle() {
    if (curl_ != nullptr) curl_easy_cleanup(curl_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  CURL* get() const { return curl_; }

 private:
  CURL* curl_ = nullptr;
};

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancel = static_cast<const std::atomic<bool>*>(user);
  return cancel->load(std::memory_order_relaxed) ? 1 : 0;  // nonzero aborts the transfer
}

bool cancelled(const RemotePolicy& policy) {
  return policy.cancel != nullptr && policy.cancel->load(std::memory_order_relaxed);
}

// Redirects: a plain HTTP(S) request follows at most this many, never from https to http, and
// libcurl sends the URL's user:password only to the host (and port and scheme) it came with
// (CURLOPT_UNRESTRICTED_AUTH stays 0). A signed S3 request follows none: its credentials,
// session token and signature are for the endpoint alone.
constexpr long kMaxRedirects = 5;

// One attempt, ended by libcurl after `time_limit_ms` at the latest.
Response perform(const Target& t, bool head, const std::string& range, Sink& sink,
                 const RemotePolicy& policy, long time_limit_ms) {
  thread_local Handle handle;
  CURL* c = handle.get();
  Response r;
  if (c == nullptr) {
    r.code = CURLE_FAILED_INIT;
    r.curl_error = "cannot create a libcurl handle";
    return r;
  }
  curl_easy_reset(c);
  char error[CURL_ERROR_SIZE] = {};
  const bool https = t.url.starts_with("https://");
  curl_easy_setopt(c, CURLOPT_URL, t.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  const bool follow = t.sigv4.empty();
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, follow ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, kMaxRedirects);
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https");
  curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   std::min(static_cast<long>(policy.connect_timeout_s * 1000), time_limit_ms));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, time_limit_ms);
  // A transfer that stalls (under 1 byte/s for 30 s) is a timeout, like a refused connection.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  if (policy.cancel != nullptr) {
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(policy.cancel));
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  }
  if (head) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (!range.empty()) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  curl_slist* headers = nullptr;
  if (!t.bearer.empty()) {
    // As credentials, not a header: libcurl keeps them to the URL's origin (UNRESTRICTED_AUTH 0).
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, t.bearer.c_str());
  }
  if (!t.sigv4.empty()) {
    // The key is sent byte for byte as percent_encoded_path() wrote it: no dot segment is resolved.
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, t.sigv4.c_str());
    curl_easy_setopt(c, CURLOPT_USERPWD, t.userpwd.c_str());
    for (const std::string& h : t.headers) headers = curl_slist_append(headers, h.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  }
  r.code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  char* redirect = nullptr;
  if (curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &redirect) == CURLE_OK && redirect != nullptr)
    r.redirect_url = redirect;
  if (r.code != CURLE_OK) r.curl_error = error[0] != 0 ? error : curl_easy_strerror(r.code);
  curl_slist_free_all(headers);
  return r;
}

bool transient(const Response& r) {
  if (!r.headers.error().empty()) return false;
  switch (r.code) {
    case CURLE_OK:
      return r.status >= 500 || r.status == 429 || r.status == 408;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// Where the server pointed, for a message: absolute when libcurl could make it so.
std::string redirect_target(const Response& r) {
  return redact_url(!r.redirect_url.empty() ? r.redirect_url : r.headers.location());
}

std::string describe(const Response& r, const Target& t, const Sink& sink) {
  if (!r.headers.error().empty())
    return "the server's response is not one stoke reads: " + r.headers.error();
  if (sink.over_limit)
    return "the body is over " + std::to_string(sink.limit) +
           " bytes, the most stoke reads into memory for it";
  if (r.code == CURLE_TOO_MANY_REDIRECTS)
    return "redirected more than " + std::to_string(kMaxRedirects) +
           " times (a redirect loop?), last to " + redirect_target(r);
  if (r.code == CURLE_UNSUPPORTED_PROTOCOL && !r.redirect_url.empty())
    return "the server redirects to " + redirect_target(r) +
           ", which stoke does not follow (never from https to http, only to http or https)";
  if (r.code != CURLE_OK) return r.curl_error;
  std::string out = "HTTP status " + std::to_string(r.status);
  if (r.status >= 300 && r.status < 400 && !t.sigv4.empty())
    out += ", a redirect to " + redirect_target(r) +
           ", which stoke does not follow for a signed S3 request (its credentials are for the "
           "endpoint alone): set AWS_ENDPOINT_URL or AWS_REGION to the server that holds the "
           "bucket";
  return out;
}

// Runs one request with retries. `accept(status)` says which statuses end it. Every attempt,
// and the waits between them, end by the policy's deadline.
template <class Accept>
Response with_retries(const Target& t, bool head, const std::string& range, Sink& sink,
                      const RemotePolicy& policy, Accept accept) {
  const auto start = Clock::now();
  const auto elapsed_s = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  double backoff = 0.1;
  for (int attempt = 1;; ++attempt) {
    if (cancelled(policy)) throw Error(t.shown + ": cancelled (the loader is shutting down)");
    sink.got = 0;
    sink.overflow = false;
    sink.over_limit = false;
    if (sink.text != nullptr) sink.text->clear();
    // What is left of the deadline, in 1 ms to 30 days (a huge STOKE_REMOTE_DEADLINE_S must not
    // overflow the conversion).
    const double left_s = std::clamp(policy.deadline_s - elapsed_s(), 0.001, 30.0 * 86400);
    const long left_ms = static_cast<long>(left_s * 1000);
    Response r = perform(t, head, range, sink, policy, left_ms);
    if (cancelled(policy)) throw Error(t.shown + ": cancelled (the loader is shutting down)");
    // A body cut short on purpose (the Range was ignored and all asked for arrived) is fine.
    if (r.code == CURLE_WRITE_ERROR && sink.overflow) r.code = CURLE_OK;
    if (r.code == CURLE_OK && accept(r.status)) return r;
    if (!transient(r)) {
      std::string hint;
      if (r.code == CURLE_OK && (r.status == 401 || r.status == 403) && !t.bucket.empty())
        hint = " (the S3 server refused the credentials for bucket '" + t.bucket +
               "': check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION)";
      if (r.code == CURLE_OK && r.status == 404) hint = " (no such object)";
      throw Error(std::string(head ? "HEAD " : "GET ") + t.shown + ": " + describe(r, t, sink) +
                  hint);
    }
    double wait = backoff;
    if (r.code == CURLE_OK && r.status == 429 && r.headers.retry_after_s() &&
        *r.headers.retry_after_s() > 0)
      wait = *r.headers.retry_after_s();
    backoff = std::min(backoff * 2, policy.max_backoff_s);
    const double elapsed = elapsed_s();
    if (wait > policy.deadline_s - elapsed)
      throw Error(t.shown + ": gave up after " + std::to_string(attempt) + " attempt(s) in " +
                  std::to_string(static_cast<int>(elapsed + 0.5)) +
                  " s (the deadline is STOKE_REMOTE_DEADLINE_S = " +
                  std::to_string(static_cast<int>(policy.deadline_s)) +
                  " s); last: " + describe(r, t, sink));
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(wait));
    for (auto now = Clock::now(); now < until && !cancelled(policy); now = Clock::now())
      std::this_thread::sleep_for(
          std::min<Clock::duration>(until - now, std::chrono::milliseconds(20)));
  }
}

}  // namespace

RemotePolicy remote_policy_from_environment() {
  RemotePolicy p;
  const std::string deadline = env("STOKE_REMOTE_DEADLINE_S");
  if (!deadline.empty()) {
    const double v = std::atof(deadline.c_str());
    if (v > 0) p.deadline_s = v;
  }
  return p;
}

RemoteObject remote_stat(const std::string& url, const RemotePolicy& policy) {
  const Target t = resolve(url);
  Sink sink;  // a HEAD has no body: capacity 0
  const Response r =
      with_retries(t, true, "", sink, policy, [](long status) { return status == 200; });
  if (!r.headers.content_length())
    throw Error("HEAD " + t.shown + ": the server did not say the object's size (Content-Length)");
  return {*r.headers.content_length(), r.headers.etag()};
}

std::size_t remote_read(const std::string& url, std::uint64_t offset, void* dst, std::size_t n,
                        const RemotePolicy& policy) {
  if (n == 0) return 0;
  const Target t = resolve(url);
  Sink sink;
  sink.dst = static_cast<unsigned char*>(dst);
  sink.capacity = n;
  const std::string range = std::to_string(offset) + "-" + std::to_string(offset + n - 1);
  const Response r = with_retries(t, false, range, sink, policy, [&](long status) {
    // 200 is the whole object: good only when the range starts at 0.
    return status == 206 || (status == 200 && offset == 0) || status == 416;
  });
  if (r.status == 416) return 0;  // the range starts past the end
  return sink.got;
}

bool remote_get_if_exists(const std::string& url, std::string& into, std::size_t max_bytes,
                          const RemotePolicy& policy, std::string* next) {
  const Target t = resolve(url);
  Sink sink;
  sink.text = &into;
  sink.limit = max_bytes;
  const Response r = with_retries(t, false, "", sink, policy,
                                  [](long status) { return status == 200 || status == 404; });
  if (next != nullptr) {
    *next = r.headers.next_link();
    // A relative target is the endpoint's own.
    if (!next->empty() && next->starts_with("/")) *next = origin_url(url) + *next;
  }
  if (r.status == 404) {
    into.clear();
    return false;
  }
  return true;
}

std::string percent_encoded_path(const std::string& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string hf_endpoint() {
  std::string e = env("HF_ENDPOINT");
  if (e.empty()) e = "https://huggingface.co";
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

}  // namespace stoke::detail
