#pragma once
// Which sample killed a worker, and when a sample has killed enough of them to be given up on.
//
// Thread-safety: none; the supervisor calls it with the loader's mutex held.
//
// A crash (or the loader's own timeout kill) on a sample counts fully. A SIGKILL from outside
// may be an operator or the OOM killer, and a replacement worker starts on the very sample its
// predecessor was killed on, so random kills land on the same sample often: those need
// kMaxKillsPerSample before the sample is blamed. The budget acts once, when it is reached; a
// worker that was already inside the sample dies once more and is simply replaced.
//
// A blamed sample goes on the arena's poison list, which every worker reads before producing a
// sample and replaces instead (OnError::kSkip); under kError it stops the loader. The list has a
// fixed capacity: when it is full, the next blamed sample stops the loader with an error that
// says so, because skipping it silently would change what is delivered without a trace.

#include <atomic>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "stoke/options.hpp"
#include "supervision/worker_pool.hpp"

namespace stoke::detail {

inline constexpr int kMaxDeathsPerSample = 3;  // crashes on one sample, then blamed
inline constexpr int kMaxKillsPerSample = 12;  // external SIGKILLs on one sample, likewise

class SampleBlame {
 public:
  // `poison` and `count`: the arena's poison list and its published length.
  SampleBlame(std::span<std::int64_t> poison, std::atomic<std::uint32_t>& count)
      : poison_(poison), count_(count) {}

  struct Verdict {
    enum Kind { kRetry, kPoisoned, kFatal } kind = kRetry;
    std::string message;  // for kPoisoned (a log line) and kFatal (the error's text)
  };

  // A worker died (`exit`; `timed_out`: killed by the loader) while producing `sample`,
  // described as `what` ("path (sample 7)").
  Verdict blame(std::int64_t sample, std::string_view what, const WorkerExit& exit, bool timed_out,
                OnError policy);

  std::size_t poisoned() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::span<std::int64_t> poison_;
  std::atomic<std::uint32_t>& count_;
  std::map<std::int64_t, int> deaths_;  // dataset index -> blame (a crash counts 4, a SIGKILL 1)
};

}  // namespace stoke::detail
