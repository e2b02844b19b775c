#include "supervision/pool_controller.hpp"

#include <algorithm>
#include <utility>

namespace stoke::detail {

PoolController::PoolController(int capacity, int initial)
    : records_(static_cast<std::size_t>(capacity)), size_(initial) {
  for (int i = 0; i < initial; ++i) {
    at(i).role = Role::kActive;
    members_.push_back(i);
  }
}

int PoolController::resize(int n) {
  n = std::clamp(n, 1, capacity());
  int active = 0;
  for (int i : members_) active += this->active(i) ? 1 : 0;
  for (int i : members_) {
    if (active >= n) break;
    if (retiring(i) && !at(i).stop_sent) {
      at(i).role = Role::kActive;
      ++active;
    }
  }
  for (int i = 0; i < capacity() && active < n; ++i) {
    if (role(i) != Role::kIdle) continue;
    at(i) = Record{Role::kActive, false};
    members_.insert(std::upper_bound(members_.begin(), members_.end(), i), i);
    growth_.push_back(i);
    ++active;
  }
  for (auto it = members_.rbegin(); it != members_.rend() && active > n; ++it) {
    if (!this->active(*it)) continue;
    at(*it).role = Role::kRetiring;
    --active;
  }
  size_ = n;
  return n;
}

std::vector<int> PoolController::take_growth() {
  return std::exchange(growth_, {});
}

void PoolController::spawn_failed(int i) {
  retired(i);
  size_ = std::max(1, size_ - 1);
}

std::vector<int> PoolController::retiring_not_stopped() const {
  std::vector<int> out;
  for (int i : members_) {
    if (retiring(i) && !at(i).stop_sent) out.push_back(i);
  }
  return out;
}

void PoolController::stop_sent(int i) {
  at(i).stop_sent = true;
}

void PoolController::retired(int i) {
  at(i) = Record{};
  std::erase(members_, i);
  std::erase(growth_, i);
}

}  // namespace stoke::detail
