#include "consumer/loader_metrics.hpp"

#include <algorithm>

namespace stoke::detail {

LoaderMetrics::LoaderMetrics(int monitor_window, Clock::time_point created)
    : created_(created), monitor_(monitor_window), pool_changed_(created) {}

void LoaderMetrics::skipped(BadInput reason) {
  stats_.skipped += 1;
  stats_.skipped_by_reason[bad_input_name(reason)] += 1;
}

void LoaderMetrics::chunk_done(const Completion& done, int samples) {
  stats_.read_s += static_cast<double>(done.read_ns) * 1e-9;
  stats_.decode_s += static_cast<double>(done.decode_ns) * 1e-9;
  stats_.augment_s += static_cast<double>(done.augment_ns) * 1e-9;
  stats_.relayout_hits += done.relayout_hits;
  stats_.relayout_stored += done.relayout_stored;
  busy_s_ += static_cast<double>(done.read_ns + done.decode_ns + done.augment_ns) * 1e-9;
  produced_ += samples;
}

void LoaderMetrics::delivered(Clock::time_point entered, Clock::time_point now, int samples,
                              int padded) {
  if (delivered_any_) {
    stats_.wait_s += seconds(now - entered);
  } else {
    delivered_any_ = true;
    first_delivery_ = now;
    stats_.startup_s = seconds(now - created_);
  }
  last_delivery_ = now;
  stats_.batches += 1;
  stats_.samples += samples;
  stats_.padded += padded;
  monitor_.delivered(entered, now, samples);
}

void LoaderMetrics::restart_measurement(Clock::time_point now) {
  monitor_.restart_window();
  busy_s_ = 0;
  produced_ = 0;
  pool_changed_ = now;
}

double LoaderMetrics::seconds_since_change(Clock::time_point now) const {
  return seconds(now - pool_changed_);
}

double LoaderMetrics::busy_fraction(Clock::time_point now, int workers) const {
  const double since = seconds_since_change(now);
  if (workers <= 0 || since <= 0) return 0;
  return std::min(1.0, busy_s_ / (workers * since));
}

double LoaderMetrics::worker_rate() const {
  return busy_s_ > 0 ? static_cast<double>(produced_) / busy_s_ : 0;
}

Stats LoaderMetrics::snapshot(Clock::time_point now, int workers, int batch) const {
  Stats s = stats_;
  s.workers = workers;
  if (delivered_any_) {
    s.active_s = seconds(last_delivery_ - first_delivery_);
    if (s.active_s > 0) {
      s.samples_per_s = static_cast<double>(s.samples - batch) / s.active_s;
      s.wait_fraction = std::min(1.0, s.wait_s / s.active_s);
    }
  }
  const StallMonitor::Totals w = monitor_.window();
  s.compute_s = monitor_.compute_s();
  s.window_batches = w.batches;
  s.window_wait_fraction = w.wait_fraction();
  s.window_samples_per_s = w.delivered_per_s();
  s.demand_samples_per_s = w.demand_per_s();
  s.worker_busy_fraction = busy_fraction(now, workers);
  s.worker_samples_per_s = worker_rate();
  return s;
}

}  // namespace stoke::detail
