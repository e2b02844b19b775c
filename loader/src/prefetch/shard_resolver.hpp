#pragma once
// The shard prefetcher's look-up side: threads that ask a server for the size and version (a
// HEAD: size and ETag) of the shards a dataset-level index names without them, in the order
// they are asked for, and report each answer. A server that sends no ETag, or a look-up that
// fails, is said in the log (once, and for the first few failures) here; what follows from an
// answer is the prefetcher's.
//
// Thread-safety: look_up() and drop_queued() from any thread; the report and fail callbacks are
// called from the look-up threads, with none of this part's locks held.

#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.hpp"
#include "consumer/event_log.hpp"
#include "remote/remote.hpp"

namespace stoke::detail {

class ShardResolver {
 public:
  struct Answer {
    std::size_t r = 0;
    RemoteObject object;  // its size and ETag (no ETag: no version to name a copy by)
    std::string error;    // the look-up failed (past the remote deadline): why
  };
  // Takes an answer; false when the prefetcher is stopping (then nothing is said of it).
  using Report = std::function<bool(Answer)>;
  using Fail = std::function<void(std::exception_ptr)>;

  // Starts `threads` look-up threads, each HEAD under `policy`. REQUIRES: `log` outlives it.
  ShardResolver(int threads, const RemotePolicy& policy, EventLog& log, Report report, Fail fail);
  // Stops and joins the threads (a look-up under way ends first: the policy's cancel flag cuts
  // it short).
  ~ShardResolver();
  ShardResolver(const ShardResolver&) = delete;
  ShardResolver& operator=(const ShardResolver&) = delete;

  // Queues a look-up of shard r at `url`.
  void look_up(std::size_t r, std::string url) EXCLUDES(mutex_);
  // Drops the look-ups not yet under way, and returns their shards (those under way end).
  std::vector<std::size_t> drop_queued() EXCLUDES(mutex_);

 private:
  struct Query {
    std::size_t r = 0;
    std::string url;
  };
  void run() EXCLUDES(mutex_);
  // Tells the threads to stop taking work and joins them.
  void stop_and_join() EXCLUDES(mutex_);
  // Logs what an answer says of the server, unless enough like it was said.
  void say(const std::string& url, const RemoteObject& object, const std::string& error)
      EXCLUDES(mutex_);

  const RemotePolicy policy_;
  EventLog& log_;
  const Report report_;
  const Fail fail_;
  Mutex mutex_;
  CondVar cv_;  // a query was queued, or stop
  std::deque<Query> queue_ GUARDED_BY(mutex_);
  bool stop_ GUARDED_BY(mutex_) = false;
  bool no_etag_said_ GUARDED_BY(mutex_) = false;
  int errors_said_ GUARDED_BY(mutex_) = 0;
  std::vector<std::thread> threads_;
};

}  // namespace stoke::detail
