#include "supervision/worker_ledger.hpp"

#include <cassert>

namespace stoke::detail {

WorkerLedger::WorkerLedger(int capacity, Clock::duration task_timeout,
                           Clock::duration startup_timeout)
    : task_timeout_(task_timeout),
      startup_timeout_(startup_timeout),
      records_(static_cast<std::size_t>(capacity)) {}

int WorkerLedger::least_loaded(const std::vector<int>& candidates) const {
  int best = -1;
  for (int i : candidates) {
    const std::size_t n = held(i).size();
    if (n < kTasksPerWorker && (best < 0 || n < held(best).size())) best = i;
  }
  return best;
}

void WorkerLedger::hand(int i, const Task& t, Clock::time_point now) {
  Record& r = at(i);
  assert(r.in_flight.size() < kTasksPerWorker);
  if (r.in_flight.empty()) r.front_since = now;
  r.in_flight.push_back(t);
}

std::optional<Task> WorkerLedger::complete(int i, std::uint64_t seq, Clock::time_point now) {
  Record& r = at(i);
  if (r.in_flight.empty() || r.in_flight.front().seq != seq) return std::nullopt;
  const Task t = r.in_flight.front();
  r.in_flight.pop_front();
  if (!r.in_flight.empty()) r.front_since = now;
  return t;
}

std::deque<Task> WorkerLedger::take(int i) {
  return std::exchange(at(i).in_flight, {});
}

bool WorkerLedger::take_killed(int i) {
  return std::exchange(at(i).killed, false);
}

bool WorkerLedger::task_overdue(int i, Clock::time_point now) const {
  const Record& r = at(i);
  return task_timeout_.count() > 0 && !r.killed && !r.in_flight.empty() &&
         now - r.front_since >= task_timeout_;
}

bool WorkerLedger::startup_overdue(int i, Clock::time_point now) const {
  const Record& r = at(i);
  return !r.killed && now - r.spawned_at >= startup_timeout_;
}

std::optional<WorkerLedger::Clock::time_point> WorkerLedger::deadline(int i, bool ready) const {
  const Record& r = at(i);
  if (r.killed) return std::nullopt;
  if (!ready) return r.spawned_at + startup_timeout_;
  if (task_timeout_.count() <= 0 || r.in_flight.empty()) return std::nullopt;
  return r.front_since + task_timeout_;
}

bool WorkerLedger::died_starting(int i, bool counts) {
  int& deaths = at(i).startup_deaths;
  if (counts) deaths += 1;
  return deaths < kMaxStartupDeaths;
}

}  // namespace stoke::detail
