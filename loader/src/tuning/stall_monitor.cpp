#include "tuning/stall_monitor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/number_text.hpp"

namespace stoke::detail {
namespace {

std::string workers_word(int n) {
  return std::to_string(n) + (n == 1 ? " worker" : " workers");
}

// "; GPU 0 sat idle 38% of the time between bursts (mean utilization 52%)", or the mean
// utilization of each GPU when none shows the pattern.
std::string gpu_clause(const Stats& s) {
  std::string out;
  for (const GpuActivity& g : s.gpus) {
    if (g.samples == 0) continue;
    char buf[160];
    if (g.burst_then_idle)
      std::snprintf(buf, sizeof buf,
                    "; GPU %d ran in bursts and sat idle %s of the time (mean utilization %.0f%%)",
                    g.device, percent(g.idle_fraction).c_str(), g.mean_percent);
    else
      std::snprintf(buf, sizeof buf, "; GPU %d mean utilization %.0f%%", g.device, g.mean_percent);
    out += buf;
  }
  return out;
}

}  // namespace

void StallMonitor::delivered(Clock::time_point entered, Clock::time_point returned, int samples) {
  if (last_return_) {
    const Entry e{seconds(returned - entered), std::max(0.0, seconds(entered - *last_return_)),
                  samples};
    compute_s_ += e.compute_s;
    window_entries_.push_back(e);
    sums_.add(e.wait_s, e.compute_s, e.samples, +1);
    if (window_entries_.size() > static_cast<std::size_t>(window_)) {
      const Entry& old = window_entries_.front();
      sums_.add(old.wait_s, old.compute_s, old.samples, -1);
      window_entries_.pop_front();
    }
  }
  last_return_ = returned;
}

void StallMonitor::Totals::add(double wait, double compute, int n, int sign) {
  batches += sign;
  samples += sign * n;
  // Rounding drift over a sliding window stays far below the monitor's precision (percent);
  // restart_window() starts again from zero.
  wait_s = std::max(0.0, wait_s + sign * wait);
  compute_s = std::max(0.0, compute_s + sign * compute);
}

double StallMonitor::Totals::wait_fraction() const {
  return wait_s + compute_s > 0 ? wait_s / (wait_s + compute_s) : 0;
}
double StallMonitor::Totals::delivered_per_s() const {
  return wait_s + compute_s > 0 ? static_cast<double>(samples) / (wait_s + compute_s) : 0;
}
double StallMonitor::Totals::demand_per_s() const {
  return compute_s > 0 ? static_cast<double>(samples) / compute_s : 0;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, fraction < 0.1 ? "%.1f%%" : "%.0f%%", 100 * fraction);
  return buf;
}

int workers_needed(double demand, double per_worker) {
  if (!(demand > 0) || !(per_worker > 0)) return 0;
  return std::max(1, static_cast<int>(std::ceil(demand * 1.1 / per_worker - 1e-9)));
}

std::string stall_verdict(const Stats& s, const VerdictContext& c) {
  if (s.window_batches < 4)
    return "not enough batches yet to judge (" + std::to_string(s.window_batches) + " measured)";
  const std::string waited = "the consumer waited " + percent(s.window_wait_fraction) +
                             " of the time over the last " + std::to_string(s.window_batches) +
                             " batches";
  const bool in_process = s.workers == 0;
  const std::string who = in_process ? "the in-process pipeline" : workers_word(s.workers);
  const std::string delivered =
      who + " delivered " + with_commas(s.window_samples_per_s) + " img/s";
  const bool unbounded = !(s.demand_samples_per_s > 0);
  const std::string demand =
      unbounded ? std::string("the consumer took them as fast as they came")
                : "the consumer took up to " + with_commas(s.demand_samples_per_s) + " img/s";
  const int need = unbounded ? 0 : workers_needed(s.demand_samples_per_s, s.worker_samples_per_s);
  const std::string gpus = gpu_clause(s);

  if (s.window_wait_fraction <= c.target) {
    std::string line = "not input-bound: " + waited + "; " + delivered;
    if (!unbounded)
      line += " against a demand of " + with_commas(s.demand_samples_per_s) + " img/s";
    if (!in_process && need > 0 && need < s.workers)
      line += "; " + workers_word(need) + " would likely keep up";
    return line + gpus;
  }
  std::string advice;
  if (in_process) {
    advice = "run the pipeline in worker processes (workers=auto, or try " +
             workers_word(std::max(1, std::min(need > 0 ? need : 2, c.cores))) + ")";
  } else if (need > 0 && need <= s.workers && s.worker_busy_fraction < kBurstyBusy) {
    advice = "the workers were busy only " + percent(s.worker_busy_fraction) +
             ", so the consumer takes batches in bursts: raise prefetch (or prefetch=auto)";
  } else if (c.max_workers > 0 && s.workers >= c.max_workers) {
    advice = "workers=auto is at its limit of " + workers_word(c.max_workers) + " (" +
             c.limit_reason + "): a cheaper pipeline or a bigger host would help";
  } else {
    const int want = std::max(need, s.workers + 1);
    advice = "try " + workers_word(want);
    if (want > c.cores)
      advice += ", but only " + std::to_string(c.cores) +
                " cores are available: a cheaper pipeline or a bigger host would help";
  }
  return "input-bound: " + waited + "; " + delivered + ", " + demand + "; " + advice + gpus;
}

}  // namespace stoke::detail
