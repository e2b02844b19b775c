#include "tuning/pool_tuner.hpp"

#include <algorithm>
#include <cstdio>

#include "common/number_text.hpp"
#include "tuning/stall_monitor.hpp"

namespace stoke::detail {
namespace {

// The pool is the bottleneck when the consumer's demand exceeds this share of what the
// workers deliver while busy (their rate per busy second times their number).
constexpr double kWorkerBound = 0.95;
constexpr double kShrinkHeadroom = 1.2;  // one fewer must still deliver this x the demand
constexpr double kFirstBackoffS = 30;

std::string measured(const TunerInput& in) {
  return "the consumer waited " + percent(in.wait_fraction) + " over " +
         std::to_string(in.batches) + " batches; " + std::to_string(in.workers) +
         (in.workers == 1 ? " worker" : " workers") + " busy " + percent(in.busy_fraction) +
         " delivered " + with_commas(in.delivered_per_s) + " img/s (" +
         with_commas(in.worker_per_s) + " per busy worker); the consumer takes " +
         (in.demand_per_s > 0 ? "up to " + with_commas(in.demand_per_s) + " img/s"
                              : std::string("them as fast as they come"));
}

}  // namespace

std::optional<TunerChange> PoolTuner::evaluate(const TunerInput& in, const TunerLimits& limits) {
  if (in.wait_fraction > limits.target) {
    const std::string why = measured(in);
    const double capacity = in.workers * in.worker_per_s;
    const bool worker_bound =
        !(in.demand_per_s > 0) || !(capacity > 0) || in.demand_per_s > kWorkerBound * capacity;
    if (limits.tune_workers && worker_bound) return grow(in, limits, why);
    if (limits.tune_prefetch && !worker_bound && in.busy_fraction < kBurstyBusy &&
        in.slots < limits.max_slots) {
      const int to = std::min(limits.max_slots, in.slots + std::max(2, in.slots / 2));
      return TunerChange{TuneTarget::kPrefetch, in.slots, to,
                         why +
                             "; the pool keeps up on average, so the consumer takes batches in "
                             "bursts: deeper prefetch"};
    }
    return std::nullopt;
  }
  if (in.wait_fraction <= limits.target / 2 && limits.tune_workers) return shrink(in, limits);
  return std::nullopt;
}

std::optional<TunerChange> PoolTuner::grow(const TunerInput& in, const TunerLimits& limits,
                                           const std::string& why) {
  if (in.workers >= limits.max_workers) return std::nullopt;
  const int need =
      in.demand_per_s > 0 ? workers_needed(in.demand_per_s, in.worker_per_s) : limits.max_workers;
  int to = std::clamp(need, in.workers + 1, limits.max_workers);
  std::string reason = why;
  if (in.demand_per_s > 0 && need > 0)
    reason +=
        ", about " + std::to_string(need) + (need == 1 ? " worker's" : " workers'") + " worth";
  if (to < need || in.demand_per_s <= 0)
    reason += "; limited to " + std::to_string(limits.max_workers) + " (" +
              limits.max_workers_reason + ")";
  // Growing back to where a retirement started means the retirement was wrong: do not retire
  // to that count again for a while, and for twice as long the next time.
  if (last_retired_to_ == in.workers) {
    double& backoff = backoff_s_[in.workers];
    backoff = backoff > 0 ? 2 * backoff : kFirstBackoffS;
    blocked_until_[in.workers] = in.now_s + backoff;
    last_retired_to_ = 0;
  }
  return TunerChange{TuneTarget::kWorkers, in.workers, to, reason};
}

std::optional<TunerChange> PoolTuner::shrink(const TunerInput& in, const TunerLimits& limits) {
  (void)limits;
  if (in.workers <= 1 || !(in.demand_per_s > 0) || !(in.worker_per_s > 0)) return std::nullopt;
  const int to = in.workers - 1;
  if (static_cast<double>(to) * in.worker_per_s < kShrinkHeadroom * in.demand_per_s)
    return std::nullopt;
  if (const auto it = blocked_until_.find(to); it != blocked_until_.end() && in.now_s < it->second)
    return std::nullopt;
  last_retired_to_ = to;
  return TunerChange{TuneTarget::kWorkers, in.workers, to,
                     measured(in) + "; " + std::to_string(to) + " would deliver about " +
                         with_commas(to * in.worker_per_s) + " img/s"};
}

}  // namespace stoke::detail
