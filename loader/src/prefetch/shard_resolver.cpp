#include "prefetch/shard_resolver.hpp"

#include <utility>

#include "common/text.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

// Failed look-ups logged (the rest are alike, as a rule: a server that is down).
constexpr int kLookupErrorsLogged = 8;

}  // namespace

ShardResolver::ShardResolver(int threads, const RemotePolicy& policy, EventLog& log, Report report,
                             Fail fail)
    : policy_(policy), log_(log), report_(std::move(report)), fail_(std::move(fail)) {
  try {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  } catch (...) {
    stop_and_join();
    throw;
  }
}

ShardResolver::~ShardResolver() {
  stop_and_join();
}

void ShardResolver::stop_and_join() {
  {
    MutexLock lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ShardResolver::look_up(std::size_t r, std::string url) {
  {
    MutexLock lock(mutex_);
    queue_.push_back({r, std::move(url)});
  }
  cv_.notify_all();
}

std::vector<std::size_t> ShardResolver::drop_queued() {
  MutexLock lock(mutex_);
  std::vector<std::size_t> dropped;
  for (const Query& q : queue_) dropped.push_back(q.r);
  queue_.clear();
  return dropped;
}

void ShardResolver::run() {
  try {
    for (;;) {
      Query query;
      {
        MutexLock lock(mutex_);
        while (!stop_ && queue_.empty()) cv_.wait(lock);
        if (stop_) return;
        query = std::move(queue_.front());
        queue_.pop_front();
      }
      Answer answer;
      answer.r = query.r;
      try {
        answer.object = remote_stat(query.url, policy_);
      } catch (const Error& e) {
        answer.error = e.what();
      }
      const RemoteObject object = answer.object;
      const std::string error = answer.error;
      if (report_(std::move(answer))) say(query.url, object, error);
    }
  } catch (...) {
    fail_(std::current_exception());
  }
}

void ShardResolver::say(const std::string& url, const RemoteObject& object,
                        const std::string& error) {
  bool no_etag = false;
  bool failed = false;
  {
    MutexLock lock(mutex_);
    if (!error.empty()) {
      failed = errors_said_ < kLookupErrorsLogged;
      errors_said_ += failed ? 1 : 0;
    } else if (object.etag.empty()) {
      no_etag = !no_etag_said_;
      no_etag_said_ = true;
    }
  }
  if (no_etag)
    log_.post("shard cache: " + redact_url(url) +
              " has no ETag on its server (no version to name a copy by): the workers read "
              "such shards from the server");
  if (failed)
    log_.post("shard cache: cannot look up " + redact_url(url) + ": " + error +
              "; the workers read it from the server");
}

}  // namespace stoke::detail
