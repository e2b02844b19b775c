#pragma once
// Objects on HTTP(S) servers and S3, read through libcurl: their size and ETag, and byte
// ranges of them. s3://bucket/key is signed with AWS Signature Version 4 (libcurl's own), with
// credentials and endpoint from the usual environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION or AWS_DEFAULT_REGION (default us-east-1), and AWS_ENDPOINT_URL_S3
// or AWS_ENDPOINT_URL for another server (addressed path-style: ENDPOINT/bucket/key); without an
// endpoint, https://bucket.s3.REGION.amazonaws.com/key.
//
// An S3 bucket must be a bucket name by AWS's rules and a key at most 1024 bytes (ConfigError
// otherwise); the key is sent byte for byte (dot segments are part of it, "a/../b" is not "b"),
// every byte outside RFC 3986's unreserved set and '/' percent-encoded, and the request signs
// x-amz-content-sha256 (UNSIGNED-PAYLOAD) as AWS requires.
//
// What a server may make stoke do: a plain HTTP(S) request follows at most 5 redirects, never
// from https to http, and sends a URL's user:password only to its own host; a signed S3 request
// follows none (its credentials and session token go to the endpoint alone), and a redirect is
// an error naming where it pointed. Every attempt ends by the deadline (a server trickling
// bytes cannot hold a transfer open past it), response headers are read within bounds
// (http_headers.hpp) and a body read into memory within a cap the caller sets.
//
// Transient failures (5xx, 429 with its Retry-After, connection resets and refusals, timeouts)
// are retried with capped exponential backoff until the deadline; then, and for a failure that
// a retry cannot mend (403, 404, a redirect loop, ...), an Error names the URL and the last
// status. Every URL in a message is redacted (redact_url(): no user:password, no signature).
//
// Thread-safety: functions are safe to call from any thread (each call uses its own handle).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace stoke::detail {

struct RemotePolicy {
  // Each call (all its attempts, and each attempt's transfer) ends this long after it starts.
  double deadline_s = 60;
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
// other failures, and for a body over `max_bytes` (the transfer stops there: `into` never holds
// more). `next`, when given, gets the target of the answer's Link rel="next" (a paginated
// listing's next page), absolute, or "".
bool remote_get_if_exists(const std::string& url, std::string& into, std::size_t max_bytes,
                          const RemotePolicy& policy, std::string* next = nullptr);

// `path` with every byte outside RFC 3986's unreserved set and '/' percent-encoded: an S3 key as
// SigV4 encodes it (dot segments stay: "a/../b" is a key of its own, not "b"), or a relative path
// joined to an HTTP(S) URL.
std::string percent_encoded_path(const std::string& path);

// The Hugging Face Hub's endpoint: HF_ENDPOINT, else https://huggingface.co (no trailing '/').
// (An endpoint that is not an http:// or https:// URL gets no token: data/hf_hub.cpp refuses it.)
// A plain HTTP(S) request to its scheme, host and port carries HF_TOKEN, when it is set, as a
// Bearer token; libcurl sends it to that origin only, never after a redirect to another (the Hub
// answers file downloads with a redirect to its CDN).
std::string hf_endpoint();

}  // namespace stoke::detail
