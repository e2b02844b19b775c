#pragma once
// Loader statistics. Thread-safety: value type (a snapshot).

#include <cstdint>
#include <map>
#include <string>

namespace stoke {

struct Stats {
  std::int64_t batches = 0;  // delivered
  std::int64_t samples = 0;  // delivered, padding included
  std::int64_t padded = 0;   // delivered padding repeats
  std::int64_t skipped = 0;  // samples replaced under OnError::kSkip, index rejects included
  std::map<std::string, std::int64_t> skipped_by_reason;
  std::int64_t worker_restarts = 0;

  double startup_s = 0;      // construction to first delivered batch
  double active_s = 0;       // first to last delivered batch
  double samples_per_s = 0;  // samples delivered after the first batch / active_s
  double wait_s = 0;         // time the consumer spent inside next() after the first batch
  double wait_fraction = 0;  // wait_s / active_s

  int workers = 0;
  int slots = 0;  // batch slots in the arena now
  std::int64_t arena_bytes = 0;
};

}  // namespace stoke
