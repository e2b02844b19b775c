// Servers that do not play fair, and names that try to point elsewhere: real nginx, SeaweedFS
// and two small Python servers (tests/loader/sigv4_server.py checks SigV4 with botocore's own
// signer; recording_server.py records whatever reaches it) on 127.0.0.1. A signed request
// follows no redirect and its session token never reaches another host; a redirect loop ends
// after five redirects; an S3 bucket outside AWS's rules is a ConfigError before any connection;
// a key's dot segments are sent as they are; a password or signature in a URL never reaches an
// error or a log line; a trickling server cannot hold indexing past the deadline; a sidecar is
// read into memory only up to a cap; response headers are read within bounds.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "remote/http_headers.hpp"
#include "remote/remote.hpp"
#include "servers.hpp"
#include "stoke/error.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using test::ScopedEnv;

using test::read_file;
using test::run;
using test::shard_options;

std::size_t count_lines(const fs::path& p) {
  std::ifstream in(p);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// testdata/jpeg as 3 shards (40, 40, 16 samples) with sidecars in dir/www.
fs::path pack_shards(const test::TempDir& dir) {
  const fs::path www = dir.path() / "www";
  test::pack_jpeg_shards(www, 40);
  return www;
}

// What constructing a loader on `data` threw ("" when it did not), and how long it took. A
// construction still running after `guard` (the code under test hangs) is ended by calling
// `release` (which stops the server it talks to), and reported as "hung".
struct Outcome {
  std::string error;
  bool config_error = false;
  bool hung = false;
  double seconds = 0;
};
Outcome construct(const Options& o, std::chrono::seconds guard = std::chrono::seconds(20),
                  const std::function<void()>& release = {}) {
  const auto start = Clock::now();
  auto done = std::async(std::launch::async, [o] {
    Outcome out;
    try {
      Loader loader(o);
    } catch (const ConfigError& e) {
      out.error = e.what();
      out.config_error = true;
    } catch (const std::exception& e) {
      out.error = e.what();
    }
    return out;
  });
  bool hung = false;
  if (done.wait_for(guard) != std::future_status::ready) {
    hung = true;
    if (release) release();
  }
  Outcome out = done.get();
  out.hung = hung;
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

// An S3 identity for the tests' servers.
struct S3Env {
  explicit S3Env(const std::string& endpoint,
                 const std::string& secret = test::SeaweedS3::kSecretKey)
      : endpoint_("AWS_ENDPOINT_URL", endpoint),
        endpoint_s3_("AWS_ENDPOINT_URL_S3", std::nullopt),
        id_("AWS_ACCESS_KEY_ID", std::string(test::SeaweedS3::kAccessKey)),
        secret_("AWS_SECRET_ACCESS_KEY", secret),
        region_("AWS_REGION", std::string("us-east-1")),
        token_("AWS_SESSION_TOKEN", std::nullopt) {}
  ScopedEnv endpoint_, endpoint_s3_, id_, secret_, region_, token_;
};

constexpr const char* kToken = "session-token-that-must-stay-home";

// ---- 5: redirects -----------------------------------------------------------------------------

// The S3 endpoint (nginx) answers every request with a 307 to another port, where a listener
// would serve other bytes: stoke follows none of them, the error names where the redirect
// pointed, and the listener never sees a request, nor the session token.
TEST(HostileRemote, AnS3RedirectToAnotherHostIsRefusedAndTheTokenNeverLeaves) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  STOKE_SKIP_WITHOUT(test::PythonServer::available(), "python3");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::PythonServer elsewhere(
      "recording_server.py",
      {"--log", (dir.path() / "elsewhere.log").string(), "--body", (www / "train-1.tar").string()},
      dir.path() / "elsewhere");
  ASSERT_TRUE(elsewhere.started()) << elsewhere.output();
  test::Nginx nginx(www, dir.path() / "nginx", "",
                    "return 307 " + elsewhere.url() + "$request_uri;");
  ASSERT_TRUE(nginx.started());
  const S3Env s3(nginx.url());
  const ScopedEnv token("AWS_SESSION_TOKEN", std::string(kToken));
  const ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", std::string("2"));
  const Outcome out = construct(shard_options("s3://stoke-test/data/train-0.tar", dir));
  EXPECT_FALSE(out.hung);
  EXPECT_NE(
      out.error.find("HEAD s3://stoke-test/data/train-0.tar: HTTP status 307, a redirect to " +
                     elsewhere.url() +
                     "/stoke-test/data/train-0.tar, which stoke does "
                     "not follow for a signed S3 request"),
      std::string::npos)
      << out.error;
  const std::string received = read_file(dir.path() / "elsewhere.log");
  EXPECT_EQ(received.find(kToken), std::string::npos) << received;
  EXPECT_EQ(count_lines(dir.path() / "elsewhere.log"), 0u) << received;
}

// A plain HTTP URL with user:password redirected to another port: the redirect is followed
// (plain HTTP may move), but the password stays with its host.
TEST(HostileRemote, AnHttpRedirectToAnotherPortCarriesNoPassword) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  STOKE_SKIP_WITHOUT(test::PythonServer::available(), "python3");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::PythonServer elsewhere(
      "recording_server.py",
      {"--log", (dir.path() / "elsewhere.log").string(), "--body", (www / "train-0.tar").string()},
      dir.path() / "elsewhere");
  ASSERT_TRUE(elsewhere.started()) << elsewhere.output();
  test::Nginx nginx(www, dir.path() / "nginx", "",
                    "return 307 " + elsewhere.url() + "$request_uri;");
  ASSERT_TRUE(nginx.started());
  const ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", std::string("2"));
  const std::string url =
      "http://user:hunter2@127.0.0.1:" + std::to_string(nginx.port()) + "/train-0.tar";
  const Outcome out = construct(shard_options(url, dir));
  EXPECT_FALSE(out.hung);
  const std::string received = read_file(dir.path() / "elsewhere.log");
  EXPECT_GE(count_lines(dir.path() / "elsewhere.log"), 1u) << "the redirect was not followed";
  EXPECT_EQ(received.find("uthorization"), std::string::npos) << received;
  EXPECT_EQ(received.find("dXNlcjpodW50ZXIy"), std::string::npos) << received;  // user:hunter2
  EXPECT_EQ(out.error.find("hunter2"), std::string::npos) << out.error;
}

// nginx answers /loop/... with a 307 to itself: six requests (the first and five redirects),
// then an error naming the URL (redacted) within the deadline.
TEST(HostileRemote, ARedirectLoopEndsAfterFiveRedirectsWithAnErrorNamingTheUrl) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  const fs::path access = dir.path() / "loop-access.log";
  test::Nginx nginx(
      www, dir.path() / "nginx", "", "",
      "    location /loop/ { access_log " + access.string() + "; return 307 $request_uri; }\n");
  ASSERT_TRUE(nginx.started());
  const ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", std::string("2"));
  const std::string shown =
      "http://***@127.0.0.1:" + std::to_string(nginx.port()) + "/loop/train-0.tar";
  const std::string url =
      "http://user:hunter2@127.0.0.1:" + std::to_string(nginx.port()) + "/loop/train-0.tar";
  const Outcome out =
      construct(shard_options(url, dir), std::chrono::seconds(10), [&] { nginx.stop(); });
  EXPECT_FALSE(out.hung) << "still redirecting after 10 s: " << count_lines(access) << " requests";
  // nginx logs a request after it has answered it: wait until its access log stops growing.
  std::size_t requests = count_lines(access);
  for (auto settled = Clock::now() + std::chrono::milliseconds(300); Clock::now() < settled;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (const std::size_t now = count_lines(access); now != requests) {
      requests = now;
      settled = Clock::now() + std::chrono::milliseconds(300);
    }
  }
  EXPECT_EQ(requests, 6u);
  EXPECT_NE(out.error.find("HEAD " + shown + ": redirected more than 5 times (a redirect loop?)"),
            std::string::npos)
      << out.error;
  EXPECT_EQ(out.error.find("hunter2"), std::string::npos) << out.error;
  EXPECT_LT(out.seconds, 4.0);
  std::cout << "redirect loop: " << requests << " requests, " << out.seconds << " s: " << out.error
            << "\n";
}

// ---- 6: bucket and key ------------------------------------------------------------------------

// s3://127.0.0.1:PORT#/... would put a host and port where the bucket goes: a ConfigError saying
// what is wrong, and no connection to that port.
TEST(HostileRemote, AnS3BucketThatIsAHostIsAConfigErrorAndConnectsNowhere) {
  STOKE_SKIP_WITHOUT(test::PythonServer::available(), "python3");
  test::TempDir dir;
  test::PythonServer elsewhere("recording_server.py",
                               {"--log", (dir.path() / "elsewhere.log").string()},
                               dir.path() / "elsewhere");
  ASSERT_TRUE(elsewhere.started()) << elsewhere.output();
  const ScopedEnv no_endpoint("AWS_ENDPOINT_URL", std::nullopt);
  const ScopedEnv no_endpoint_s3("AWS_ENDPOINT_URL_S3", std::nullopt);
  const ScopedEnv id("AWS_ACCESS_KEY_ID", std::string("id"));
  const ScopedEnv secret("AWS_SECRET_ACCESS_KEY", std::string("secret"));
  const ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", std::string("2"));
  const std::string bucket = "127.0.0.1:" + std::to_string(elsewhere.port()) + "#";
  const Outcome out = construct(shard_options("s3://" + bucket + "/train/good.tar", dir));
  EXPECT_TRUE(out.config_error) << out.error;
  EXPECT_NE(out.error.find("'" + bucket +
                           "' is not an S3 bucket name: ':' is not a lowercase "
                           "letter, digit, dot or hyphen"),
            std::string::npos)
      << out.error;
  EXPECT_EQ(count_lines(dir.path() / "elsewhere.log"), 0u)
      << read_file(dir.path() / "elsewhere.log");
}

TEST(HostileRemote, S3BucketNamesAreCheckedByAwsRules) {
  const ScopedEnv id("AWS_ACCESS_KEY_ID", std::string("id"));
  const ScopedEnv secret("AWS_SECRET_ACCESS_KEY", std::string("secret"));
  const ScopedEnv endpoint("AWS_ENDPOINT_URL", std::string("http://127.0.0.1:9"));
  const std::pair<const char*, const char*> bad[] = {
      {"ab", "it has 2 characters (3 to 63)"},
      {"Upper", "'U' is not a lowercase letter"},
      {"a_b", "'_' is not a lowercase letter"},
      {"-abc", "must begin and end with a letter or digit"},
      {"abc.", "must begin and end with a letter or digit"},
      {"a..b", "two dots in a row"},
      {"192.168.5.4", "it is an IP address"},
      {"xn--abc", "it begins with 'xn--'"},
      {"abc-s3alias", "it ends with '-s3alias'"},
      {"user@host", "'@' is not a lowercase letter"},
  };
  detail::RemotePolicy policy;
  policy.deadline_s = 1;
  for (const auto& [bucket, why] : bad) {
    try {
      detail::remote_stat(std::string("s3://") + bucket + "/key", policy);
      ADD_FAILURE() << bucket << " was taken for a bucket";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << bucket << ": " << e.what();
    }
  }
  const ScopedEnv region("AWS_REGION", std::string("us-east-1.evil.example#"));
  EXPECT_THROW(detail::remote_stat("s3://good-bucket/key", policy), ConfigError);
}

class HostileS3 : public ::testing::Test {
 protected:
  void SetUp() override {
    STOKE_SKIP_WITHOUT(test::PythonServer::can_import("botocore"),
                       "botocore (setup.sh installs it into build/servers)");
    www_ = pack_shards(dir_);
    // The verifier's folder: ROOT/BUCKET/<key percent-encoded whole>.
    const fs::path bucket = dir_.path() / "s3root/stoke-test";
    fs::create_directories(bucket);
    for (const auto& f : fs::directory_iterator(www_))
      fs::copy_file(f.path(), bucket / ("data%2F" + f.path().filename().string()));
  }
  std::unique_ptr<test::PythonServer> verifier(
      const std::string& secret = test::SeaweedS3::kSecretKey, const std::string& token = "") {
    std::vector<std::string> args = {"--root",       (dir_.path() / "s3root").string(),
                                     "--access-key", test::SeaweedS3::kAccessKey,
                                     "--secret-key", secret,
                                     "--log",        (dir_.path() / "sigv4-requests.log").string()};
    if (!token.empty()) args.insert(args.end(), {"--session-token", token});
    auto s = std::make_unique<test::PythonServer>("sigv4_server.py", args, dir_.path() / "sigv4");
    return s;
  }

  test::TempDir dir_;
  fs::path www_;
};

// A key with ".." segments is a key: sent as it is, it fetches that object (from the verifier,
// which keeps keys as they are) and not the one the segments would resolve to.
TEST_F(HostileS3, AKeyWithDotSegmentsIsFetchedAsItself) {
  const fs::path bucket = dir_.path() / "s3root/stoke-test";
  fs::copy_file(www_ / "train-0.tar", bucket / "a%2F..%2Fb%2Ftrain.tar");
  fs::copy_file(www_ / "train-1.tar", bucket / "b%2Ftrain.tar");
  auto s3 = verifier();
  ASSERT_TRUE(s3->started()) << s3->output();
  const S3Env env(s3->url());
  Loader local(shard_options((www_ / "train-0.tar").string(), dir_));
  const test::Delivered expected = test::collect(local);
  Options o = shard_options("s3://stoke-test/a/../b/train.tar", dir_);
  try {
    Loader remote(o);
    EXPECT_TRUE(test::collect(remote) == expected) << "another object's samples";
  } catch (const Error& e) {
    ADD_FAILURE() << e.what() << "\n" << s3->output();
  }
  const std::string requests = read_file(dir_.path() / "sigv4-requests.log");
  EXPECT_NE(requests.find("HEAD /stoke-test/a/../b/train.tar 200"), std::string::npos) << requests;
  EXPECT_EQ(requests.find(" /stoke-test/b/train.tar"), std::string::npos) << requests;
}

// The HEAD that keys the machine's index file (data/index_file.hpp) is the one indexing uses: a
// loader that indexes asks each shard's HEAD once, and one that finds the index file asks it once
// and reads nothing else of the shard's at start-up.
TEST_F(HostileS3, EachShardIsAskedItsHeadOnceWhetherIndexedOrFound) {
  auto s3 = verifier();
  ASSERT_TRUE(s3->started()) << s3->output();
  const S3Env env(s3->url());
  const Options o = shard_options("s3://stoke-test/data/train-{0..2}.tar", dir_);
  const auto count = [&](const std::string& what) {
    const std::string log = read_file(dir_.path() / "sigv4-requests.log");
    std::size_t n = 0;
    for (std::size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  };
  { Loader first(o); }
  for (int s = 0; s < 3; ++s)
    EXPECT_EQ(count("HEAD /stoke-test/data/train-" + std::to_string(s) + ".tar 200"), 1u) << s;
  const std::size_t gets = count("GET ");
  {
    Loader second(o);  // (stopped before any batch: no shard is fetched)
  }
  for (int s = 0; s < 3; ++s)
    EXPECT_EQ(count("HEAD /stoke-test/data/train-" + std::to_string(s) + ".tar 200"), 2u) << s;
  EXPECT_EQ(count("GET "), gets) << read_file(dir_.path() / "sigv4-requests.log");
}

// On SeaweedFS, s3://stoke-test/private/../../other/x.tar once reached bucket "other": now the
// path goes as it is, and SeaweedFS (which keeps no key with ".." segments) refuses it. The
// requests as signed now (x-amz-content-sha256 among the signed headers) still read the same
// batches as local disk from it.
TEST(HostileRemote, AKeyWithDotSegmentsDoesNotReachAnotherBucketOnSeaweedFs) {
  STOKE_SKIP_WITHOUT(!test::SeaweedS3::binary().empty(), "SeaweedFS (weed)");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::SeaweedS3 s3(dir.path() / "weed");
  ASSERT_TRUE(s3.started()) << s3.log_tail();
  run(s3.curl("-X PUT " + s3.endpoint() + "/stoke-test > /dev/null"));
  run(s3.curl("-X PUT " + s3.endpoint() + "/other > /dev/null"));
  run(s3.curl("-T " + (www / "train-1.tar").string() + " " + s3.endpoint() +
              "/other/x.tar > /dev/null"));
  const S3Env env(s3.endpoint());
  const ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", std::string("5"));
  const Outcome out = construct(shard_options("s3://stoke-test/private/../../other/x.tar", dir));
  EXPECT_NE(out.error.find("HEAD s3://stoke-test/private/../../other/x.tar: HTTP status 400"),
            std::string::npos)
      << (out.error.empty() ? "indexed the other bucket's object" : out.error);
  for (int i = 0; i < 3; ++i)
    run(s3.curl("-T " + (www / ("train-" + std::to_string(i) + ".tar")).string() + " " +
                s3.endpoint() + "/stoke-test/data/train-" + std::to_string(i) +
                ".tar > /dev/null"));
  Loader local(shard_options((www / "train-{0..2}.tar").string(), dir));
  Loader remote(shard_options("s3://stoke-test/data/train-{0..2}.tar", dir));
  EXPECT_TRUE(test::collect(remote) == test::collect(local));
}

// ---- 15: SigV4 that AWS accepts ---------------------------------------------------------------

// botocore recomputes every signature (x-amz-content-sha256 and the session token signed): the
// same batches as from local disk through the verifier (and from SeaweedFS:
// AKeyWithDotSegmentsDoesNotReachAnotherBucketOnSeaweedFs). A wrong secret is refused with 403
// by the verifier, so it does check.
TEST_F(HostileS3, AnIndependentSigV4VerifierAcceptsEveryRequest) {
  Loader local(shard_options((www_ / "train-{0..2}.tar").string(), dir_));
  const test::Delivered expected = test::collect(local);
  {
    auto s3 = verifier(test::SeaweedS3::kSecretKey, kToken);
    ASSERT_TRUE(s3->started()) << s3->output();
    const S3Env env(s3->url());
    const ScopedEnv token("AWS_SESSION_TOKEN", std::string(kToken));
    Options o = shard_options("s3://stoke-test/data/train-{0..2}.tar", dir_);
    o.cache_limit = 0;  // the workers read ranges through the verifier too
    try {
      Loader remote(o);
      EXPECT_TRUE(test::collect(remote) == expected);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what() << "\nthe verifier said:\n" << s3->output();
    }
    const std::string requests = read_file(dir_.path() / "sigv4-requests.log");
    EXPECT_EQ(requests.find(" 403"), std::string::npos) << s3->output();
    EXPECT_GT(count_lines(dir_.path() / "sigv4-requests.log"), 3u);
  }
  {
    auto s3 = verifier("the-server-knows-another-secret");
    ASSERT_TRUE(s3->started()) << s3->output();
    const S3Env env(s3->url());
    const ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", std::string("2"));
    const Outcome out = construct(shard_options("s3://stoke-test/data/train-0.tar", dir_));
    EXPECT_NE(out.error.find("HEAD s3://stoke-test/data/train-0.tar: HTTP status 403"),
              std::string::npos)
        << out.error;
    EXPECT_NE(s3->output().find("signature mismatch"), std::string::npos) << s3->output();
  }
}

// ---- 7: secrets in URLs -----------------------------------------------------------------------

TEST(HostileRemote, PasswordsAndSignaturesInUrlsReachNoErrorNorLogLine) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  fs::resize_file(www / "train-1.tar", fs::file_size(www / "train-1.tar") / 2);  // a stale .idx
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  const std::string host = "127.0.0.1:" + std::to_string(nginx.port());
  const ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", std::string("2"));

  Outcome out = construct(shard_options("http://user:hunter2@" + host + "/missing.tar", dir));
  EXPECT_NE(out.error.find("HEAD http://***@" + host + "/missing.tar: HTTP status 404"),
            std::string::npos)
      << out.error;
  EXPECT_EQ(out.error.find("hunter2"), std::string::npos) << out.error;

  out = construct(
      shard_options("http://" + host +
                        "/missing.tar?X-Amz-Credential=AKIDEXAMPLE&X-Amz-Signature="
                        "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
                    dir));
  EXPECT_NE(out.error.find("X-Amz-Signature=REDACTED"), std::string::npos) << out.error;
  EXPECT_EQ(out.error.find("5d672d79"), std::string::npos) << out.error;
  EXPECT_EQ(out.error.find("AKIDEXAMPLE"), std::string::npos) << out.error;

  test::LogLines log;
  Options o = shard_options("http://user:hunter2@" + host + "/train-{0..2}.tar", dir);
  o.log = log.sink();
  {
    Loader remote(o);
    test::collect(remote);  // the cut member is skipped, and logged
  }
  EXPECT_TRUE(log.contains("http://***@" + host + "/train-1.tar.idx does not describe"));
  for (const std::string& line : log.lines())
    EXPECT_EQ(line.find("hunter2"), std::string::npos) << line;
}

// ---- 8: time and memory -----------------------------------------------------------------------

// nginx sends 2 bytes a second, from the first byte (the HEAD's headers trickle) or after the
// first KiB (the HEAD answers, the sidecar's body trickles): indexing ends by the deadline
// (2 s) with an error naming the URL, not when the trickle ends.
void expect_the_deadline_ends_a_trickle(const std::string& limit, const std::string& failing) {
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  test::Nginx nginx(www, dir.path() / "nginx", "", limit);
  ASSERT_TRUE(nginx.started());
  const ScopedEnv deadline("STOKE_REMOTE_DEADLINE_S", std::string("2"));
  const Outcome out = construct(shard_options(nginx.url() + "/train-0.tar", dir),
                                std::chrono::seconds(15), [&] { nginx.stop(); });
  EXPECT_FALSE(out.hung) << "still indexing after 15 s";
  EXPECT_NE(out.error.find(nginx.url() + failing + ": gave up after 1 attempt(s) in 2 s"),
            std::string::npos)
      << out.error;
  EXPECT_NE(out.error.find("Operation timed out after"), std::string::npos) << out.error;
  EXPECT_LT(out.seconds, 2.0 + 1.5) << out.error;
  std::cout << "trickle (" << limit << "): " << out.seconds << " s (deadline 2 s): " << out.error
            << "\n";
}

TEST(HostileRemote, ATricklingServerEndsIndexingByTheDeadline) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  expect_the_deadline_ends_a_trickle("limit_rate 2;", "/train-0.tar");
  expect_the_deadline_ends_a_trickle("limit_rate 2; limit_rate_after 1k;", "/train-0.tar.idx");
}

// nginx adds 250 header lines to every response: the transfer is abandoned at the 201st, and
// the error says why.
TEST(HostileRemote, AResponseWithTooManyHeaderLinesIsRefused) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  std::string many;
  for (int i = 0; i < 250; ++i) many += "add_header X-Filler-" + std::to_string(i) + " 1; ";
  test::Nginx nginx(www, dir.path() / "nginx", "", many);
  ASSERT_TRUE(nginx.started());
  const Outcome out = construct(shard_options(nginx.url() + "/train-0.tar", dir));
  EXPECT_NE(out.error.find("HEAD " + nginx.url() +
                           "/train-0.tar: the server's response is not one stoke reads: more "
                           "than 200 header lines in one response"),
            std::string::npos)
      << out.error;
}

// A sidecar far larger than its shard could hold: refused at the cap, the transfer stopped
// there, with an error naming it.
TEST(HostileRemote, AnOversizedSidecarIsRefusedAtItsCap) {
  STOKE_SKIP_WITHOUT(test::Nginx::available(), "nginx");
  test::TempDir dir;
  const fs::path www = pack_shards(dir);
  const std::uintmax_t shard = fs::file_size(www / "train-0.tar");
  {
    std::ofstream junk(www / "train-0.tar.idx", std::ios::binary | std::ios::trunc);
    const std::string line(1 << 20, 'x');
    for (int i = 0; i < 64; ++i) junk << line;  // 64 MiB
  }
  test::Nginx nginx(www, dir.path() / "nginx");
  ASSERT_TRUE(nginx.started());
  const std::string url = nginx.url() + "/train-0.tar.idx";
  const Outcome out = construct(shard_options(nginx.url() + "/train-0.tar", dir));
  const std::string cap = std::to_string(4 * shard + (64 << 10));
  EXPECT_NE(out.error.find("GET " + url + ": the body is over " + cap +
                           " bytes, the most stoke reads into memory for it"),
            std::string::npos)
      << out.error;
}

// ---- response headers -------------------------------------------------------------------------

TEST(HttpHeaders, ReadsTheFieldsOfTheLastResponseOnly) {
  detail::HttpHeaders h;
  for (const char* line : {"HTTP/1.1 307 Temporary Redirect\r\n", "ETag: \"redirect\"\r\n",
                           "Location: http://elsewhere/x\r\n", "Content-Length: 0\r\n", "\r\n",
                           "HTTP/1.1 206 Partial Content\r\n", "content-length:  512 \r\n",
                           "Retry-After: 0.25\r\n", "\r\n"})
    ASSERT_TRUE(h.feed(line)) << line;
  EXPECT_EQ(h.status(), 206);
  EXPECT_EQ(h.etag(), "");
  EXPECT_EQ(h.location(), "");
  EXPECT_EQ(h.content_length(), std::optional<std::uint64_t>(512));
  EXPECT_DOUBLE_EQ(h.retry_after_s().value_or(-1), 0.25);
}

TEST(HttpHeaders, ContentLengthIsOneDecimalNumberOrUnknown) {
  const auto length = [](std::initializer_list<const char*> lines) {
    detail::HttpHeaders h;
    h.feed("HTTP/1.1 200 OK\r\n");
    for (const char* l : lines) h.feed(l);
    return h.content_length();
  };
  EXPECT_EQ(length({"Content-Length: 18446744073709551615"}), UINT64_MAX);
  EXPECT_EQ(length({"Content-Length: 18446744073709551616"}), std::nullopt);
  EXPECT_EQ(length({"Content-Length: -1"}), std::nullopt);
  EXPECT_EQ(length({"Content-Length: 12abc"}), std::nullopt);
  EXPECT_EQ(length({"Content-Length: 5", "Content-Length: 5"}), 5u);
  EXPECT_EQ(length({"Content-Length: 5", "Content-Length: 6", "Content-Length: 6"}), std::nullopt);
  detail::HttpHeaders h;
  h.feed("HTTP/1.1 429 Too Many\r\n");
  h.feed("Retry-After: 99999999999999999999999\r\n");
  EXPECT_EQ(h.retry_after_s(), detail::kMaxRetryAfterS);
  h.feed("Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n");
  EXPECT_EQ(h.retry_after_s(), std::nullopt);
}

TEST(HttpHeaders, ALongLineOrTooManyLinesOrResponsesStopTheTransfer) {
  detail::HttpHeaders a;
  a.feed("HTTP/1.1 200 OK\r\n");
  EXPECT_FALSE(a.feed("X-Big: " + std::string(detail::kMaxHeaderLineBytes, 'a')));
  EXPECT_NE(a.error().find("a response header line of"), std::string::npos) << a.error();
  EXPECT_FALSE(a.feed("ETag: \"x\"\r\n"));  // nothing more is read

  detail::HttpHeaders b;
  b.feed("HTTP/1.1 200 OK\r\n");
  int fed = 0;
  while (b.feed("X-Many: 1\r\n")) ++fed;
  EXPECT_EQ(fed, detail::kMaxHeaderLines);
  EXPECT_NE(b.error().find("header lines in one response"), std::string::npos) << b.error();

  detail::HttpHeaders c;
  int responses = 0;
  while (c.feed("HTTP/1.1 100 Continue\r\n")) ++responses;
  EXPECT_EQ(responses, detail::kMaxResponses);
}

}  // namespace
}  // namespace stoke
