#include "pool_controller.hpp"

#include <algorithm>
#include <utility>

namespace stoke::detail {

PoolController::PoolController(int capacity, int initial)
    : role_(static_cast<std::size_t>(capacity), Role::kIdle),
      stop_sent_(static_cast<std::size_t>(capacity), false),
      size_(initial) {
  for (int i = 0; i < initial; ++i) {
    role_[static_cast<std::size_t>(i)] = Role::kActive;
    members_.push_back(i);
  }
}

int PoolController::resize(int n) {
  n = std::clamp(n, 1, capacity());
  int active = 0;
  for (int i : members_) active += this->active(i) ? 1 : 0;
  for (int i : members_) {
    if (active >= n) break;
    if (retiring(i) && !stop_sent_[static_cast<std::size_t>(i)]) {
      role_[static_cast<std::size_t>(i)] = Role::kActive;
      ++active;
    }
  }
  for (int i = 0; i < capacity() && active < n; ++i) {
    if (role(i) != Role::kIdle) continue;
    role_[static_cast<std::size_t>(i)] = Role::kActive;
    stop_sent_[static_cast<std::size_t>(i)] = false;
    members_.insert(std::upper_bound(members_.begin(), members_.end(), i), i);
    growth_.push_back(i);
    ++active;
  }
  for (auto it = members_.rbegin(); it != members_.rend() && active > n; ++it) {
    if (!this->active(*it)) continue;
    role_[static_cast<std::size_t>(*it)] = Role::kRetiring;
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
    if (retiring(i) && !stop_sent_[static_cast<std::size_t>(i)]) out.push_back(i);
  }
  return out;
}

void PoolController::stop_sent(int i) {
  stop_sent_[static_cast<std::size_t>(i)] = true;
}

void PoolController::retired(int i) {
  role_[static_cast<std::size_t>(i)] = Role::kIdle;
  stop_sent_[static_cast<std::size_t>(i)] = false;
  std::erase(members_, i);
  std::erase(growth_, i);
}

}  // namespace stoke::detail
