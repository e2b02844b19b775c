#include "data/remote.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/text.hpp"
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
  std::string name;  // as the user wrote it, for messages
  std::string url;
  std::string sigv4;  // libcurl's CURLOPT_AWS_SIGV4, or "" for plain HTTP
  std::string userpwd;
  std::string token_header;
  std::string bucket;
};

// RFC 3986 unreserved characters stay; so does '/', which separates the key's segments.
std::string encode_key(const std::string& key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : key) {
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

Target resolve(const std::string& name) {
  Target t;
  t.name = name;
  if (!name.starts_with("s3://")) {
    t.url = name;
    return t;
  }
  const std::string rest = name.substr(5);
  const std::size_t slash = rest.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size())
    throw ConfigError(name + ": expected s3://bucket/key");
  t.bucket = rest.substr(0, slash);
  const std::string key = rest.substr(slash + 1);
  std::string region = env("AWS_REGION");
  if (region.empty()) region = env("AWS_DEFAULT_REGION");
  if (region.empty()) region = "us-east-1";
  std::string endpoint = env("AWS_ENDPOINT_URL_S3");
  if (endpoint.empty()) endpoint = env("AWS_ENDPOINT_URL");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  t.url = endpoint.empty()
              ? "https://" + t.bucket + ".s3." + region + ".amazonaws.com/" + encode_key(key)
              : endpoint + "/" + t.bucket + "/" + encode_key(key);
  const std::string id = env("AWS_ACCESS_KEY_ID");
  const std::string secret = env("AWS_SECRET_ACCESS_KEY");
  if (id.empty() || secret.empty())
    throw ConfigError(name +
                      ": no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  t.sigv4 = "aws:amz:" + region + ":s3";
  t.userpwd = id + ":" + secret;
  const std::string token = env("AWS_SESSION_TOKEN");
  if (!token.empty()) t.token_header = "x-amz-security-token: " + token;
  return t;
}

// Where a transfer's body goes: a fixed buffer (a range) or a growing string.
struct Sink {
  unsigned char* dst = nullptr;
  std::size_t capacity = 0;
  std::size_t got = 0;
  std::string* text = nullptr;
  bool overflow = false;  // the server sent more than asked (it ignored the Range)
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const std::size_t n = size * count;
  if (sink->text != nullptr) {
    sink->text->append(data, n);
    return n;
  }
  const std::size_t take = std::min(n, sink->capacity - sink->got);
  std::memcpy(sink->dst + sink->got, data, take);
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
  std::string etag;
  std::string retry_after;
  double length = -1;
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* r = static_cast<Response*>(user);
  const std::size_t n = size * count;
  std::string line(data, n);
  const std::size_t colon = line.find(':');
  if (colon != std::string::npos) {
    const std::string key = lowercase(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "etag") r->etag = value;
    if (key == "retry-after") r->retry_after = value;
  }
  return n;
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

Response perform(const Target& t, bool head, const std::string& range, Sink& sink,
                 const RemotePolicy& policy) {
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
  curl_easy_setopt(c, CURLOPT_URL, t.url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(policy.connect_timeout_s * 1000));
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
  if (!t.sigv4.empty()) {
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, t.sigv4.c_str());
    curl_easy_setopt(c, CURLOPT_USERPWD, t.userpwd.c_str());
    if (!t.token_header.empty()) headers = curl_slist_append(headers, t.token_header.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  }
  r.code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_off_t length = -1;
  if (curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK)
    r.length = static_cast<double>(length);
  if (r.code != CURLE_OK) r.curl_error = error[0] != 0 ? error : curl_easy_strerror(r.code);
  curl_slist_free_all(headers);
  return r;
}

bool transient(const Response& r) {
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

std::string describe(const Response& r) {
  if (r.code != CURLE_OK) return r.curl_error;
  return "HTTP status " + std::to_string(r.status);
}

// Runs one request with retries. `accept(status)` says which statuses end it.
template <class Accept>
Response with_retries(const Target& t, bool head, const std::string& range, Sink& sink,
                      const RemotePolicy& policy, Accept accept) {
  const auto start = Clock::now();
  double backoff = 0.1;
  for (int attempt = 1;; ++attempt) {
    if (cancelled(policy)) throw Error(t.name + ": cancelled (the loader is shutting down)");
    sink.got = 0;
    sink.overflow = false;
    if (sink.text != nullptr) sink.text->clear();
    Response r = perform(t, head, range, sink, policy);
    if (cancelled(policy)) throw Error(t.name + ": cancelled (the loader is shutting down)");
    // A body cut short on purpose (the Range was ignored and all asked for arrived) is fine.
    if (r.code == CURLE_WRITE_ERROR && sink.overflow) r.code = CURLE_OK;
    if (r.code == CURLE_OK && accept(r.status)) return r;
    if (!transient(r)) {
      std::string hint;
      if (r.code == CURLE_OK && (r.status == 401 || r.status == 403) && !t.bucket.empty())
        hint = " (the S3 server refused the credentials for bucket '" + t.bucket +
               "': check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION)";
      if (r.code == CURLE_OK && r.status == 404) hint = " (no such object)";
      throw Error(std::string(head ? "HEAD " : "GET ") + t.name + ": " + describe(r) + hint);
    }
    double wait = backoff;
    if (r.code == CURLE_OK && r.status == 429 && !r.retry_after.empty()) {
      const double asked = std::atof(r.retry_after.c_str());
      if (asked > 0) wait = asked;
    }
    backoff = std::min(backoff * 2, policy.max_backoff_s);
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed + wait > policy.deadline_s)
      throw Error(t.name + ": gave up after " + std::to_string(attempt) + " attempt(s) in " +
                  std::to_string(static_cast<int>(elapsed + 0.5)) +
                  " s (the deadline is STOKE_REMOTE_DEADLINE_S = " +
                  std::to_string(static_cast<int>(policy.deadline_s)) +
                  " s); last: " + describe(r));
    const auto until =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
    for (auto now = Clock::now(); now < until && !cancelled(policy); now = Clock::now())
      std::this_thread::sleep_for(std::min<Clock::duration>(until - now, std::chrono::milliseconds(20)));
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
  Sink sink;
  std::string ignored;
  sink.text = &ignored;
  const Response r =
      with_retries(t, true, "", sink, policy, [](long status) { return status == 200; });
  if (r.length < 0)
    throw Error("HEAD " + url + ": the server did not say the object's size (Content-Length)");
  return {static_cast<std::uint64_t>(r.length), r.etag};
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

bool remote_get_if_exists(const std::string& url, std::string& into, const RemotePolicy& policy) {
  const Target t = resolve(url);
  Sink sink;
  sink.text = &into;
  const Response r = with_retries(t, false, "", sink, policy,
                                  [](long status) { return status == 200 || status == 404; });
  if (r.status == 404) {
    into.clear();
    return false;
  }
  return true;
}

}  // namespace stoke::detail
