#pragma once
// The PNG plot stoke-bench --sweep-workers writes: throughput (left axis) and the consumer's
// stall fraction (right axis) against the worker count, one line pair per prefetch depth.
// Thread-safety: a pure function of its arguments.

#include <string>
#include <vector>

struct SweepPoint {
  int workers = 0;
  int prefetch = 0;  // 0 = the default depth
  double samples_per_s = 0;
  double stall = 0;  // 0..1
};

// Writes `path`; returns "" on success, else why not (e.g. built without image encoders).
std::string write_sweep_plot(const std::string& path, const std::vector<SweepPoint>& points,
                             const std::string& title, int recommended);
