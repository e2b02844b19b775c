#include "supervision/sample_blame.hpp"

#include <csignal>

namespace stoke::detail {

SampleBlame::Verdict SampleBlame::blame(std::int64_t sample, std::string_view what,
                                        const WorkerExit& exit, bool timed_out, OnError policy) {
  const bool external_kill = exit.signaled && exit.status == SIGKILL && !timed_out;
  const int weight = external_kill ? 1 : kMaxKillsPerSample / kMaxDeathsPerSample;
  int& blame = deaths_[sample];
  const bool reached = blame < kMaxKillsPerSample && (blame += weight) >= kMaxKillsPerSample;
  if (!reached) return {};
  const std::string message =
      std::string(what) + ": crashed_worker (" +
      (external_kill ? std::to_string(kMaxKillsPerSample) + " SIGKILLs"
                     : std::to_string(kMaxDeathsPerSample) + " workers died on it") +
      "; last: " + exit.describe() + ")";
  if (policy == OnError::kError) return {Verdict::kFatal, message};
  const std::uint32_t n = count_.load(std::memory_order_relaxed);
  if (n >= poison_.size())
    return {Verdict::kFatal,
            message + "; it cannot be skipped: " + std::to_string(poison_.size()) +
                " samples already kill workers, the most one loader tracks. Something other "
                "than a few bad files is wrong (the decoder, memory limits, a killer process)"};
  poison_[n] = sample;
  count_.store(n + 1, std::memory_order_release);
  return {Verdict::kPoisoned, message + "; skipping it from now on"};
}

}  // namespace stoke::detail
