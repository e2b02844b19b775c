#pragma once
// Objects on HTTP(S) servers and S3, read through libcurl: their size and ETag, and byte
// ranges of them. s3://bucket/key is signed with AWS Signature Version 4 (libcurl's own), with
// credentials and endpoint from the usual environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION or AWS_DEFAULT_REGION (default us-east-1), and AWS_ENDPOINT_URL_S3
// or AWS_ENDPOINT_URL for another server (addressed path-style: ENDPOINT/bucket/key); without an
// endpoint, https://bucket.s3.REGION.amazonaws.com/key.
//
// Transient failures (5xx, 429 with its Retry-After, connection resets and refusals, timeouts)
// are retried with capped exponential backoff until a deadline; then, and for a failure that a
// retry cannot mend (403, 404, ...), an Error names the URL and the last status.
//
// Thread-safety: functions are safe to call from any thread (each call uses its own handle).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace stoke::detail {

struct RemotePolicy {
  double deadline_s = 60;  // retrying ends this long after the first attempt
  double connect_timeout_s = 10;
  double max_backoff_s = 5;
  // When set and true, a transfer in progress is abandoned and the call throws Error (whoever
  // owns the flag is shutting down): no wait for the rest of the deadline.
  const std::atomic<bool>* cancel = nullptr;
};

// The policy from STOKE_REMOTE_DEADLINE_S (seconds), else the defaults above.
RemotePolicy remote_policy_from_environment();

struct RemoteObject {
  std::uint64_t size = 0;
  std::string etag;  // "" when the server sends none
};

// HEAD: the object's size and ETag. Throws Error.
RemoteObject remote_stat(const std::string& url, const RemotePolicy& policy);

// Bytes [offset, offset + n) into dst (a ranged GET); returns how many arrived, fewer only at
// the object's end. Throws Error.
std::size_t remote_read(const std::string& url, std::uint64_t offset, void* dst, std::size_t n,
                        const RemotePolicy& policy);

// The whole object when it exists (a sidecar index, say), or false for a 404. Throws Error for
// other failures.
bool remote_get_if_exists(const std::string& url, std::string& into, const RemotePolicy& policy);

}  // namespace stoke::detail
