// All-reduce for host devices.

#include <tbb/blocked_range.h>

#include <algorithm>

#include "parallel_for.hpp"
#include "reducer.hpp"

namespace stoke::train {
namespace {

class HostReducer final : public Reducer {
 public:
  explicit HostReducer(const MpiWorld& world) : world_(world) {}

  void sum(const std::vector<float*>& buffers, std::int64_t count) override {
    reduce(buffers, count);
  }
  void sum(const std::vector<double*>& buffers, std::int64_t count) override {
    reduce(buffers, count);
  }
  void sum_over_ranks(double* values, std::int64_t count) override { world_.sum(values, count); }

 private:
  // Replica 0's buffer takes the sum (added in replica order, so the result does not depend on
  // threads), then the ranks' sums are added, then every other replica gets a copy.
  template <class T>
  void reduce(const std::vector<T*>& buffers, std::int64_t count) {
    if (buffers.empty()) return;
    T* total = buffers[0];
    stoke::parallel_for(tbb::blocked_range<std::int64_t>(0, count, 1 << 14), [&](const auto& r) {
      for (std::size_t b = 1; b < buffers.size(); ++b)
        for (std::int64_t i = r.begin(); i != r.end(); ++i) total[i] += buffers[b][i];
    });
    world_.sum(total, count);
    for (std::size_t b = 1; b < buffers.size(); ++b) std::copy(total, total + count, buffers[b]);
  }

  const MpiWorld& world_;
};

}  // namespace

std::unique_ptr<Reducer> make_host_reducer(const MpiWorld& world) {
  return std::make_unique<HostReducer>(world);
}

}  // namespace stoke::train
