// The keyed bijection behind the epoch order of very large datasets: a permutation of [0, n)
// for every n (powers of 4 and their neighbours included), a function of (n, key) alone, and
// as uniform as a shuffle: each value lands on each place about equally often over keys.
#include "plan/keyed_permutation.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace stoke::detail {
namespace {

TEST(KeyedPermutation, IsABijectionOfEveryRange) {
  for (std::uint64_t n : {1ull, 2ull, 3ull, 4ull, 5ull, 15ull, 16ull, 17ull, 63ull, 64ull, 65ull,
                          1000ull, 4095ull, 4096ull, 4097ull, 100003ull}) {
    for (std::uint64_t key : {0ull, 1ull, 0xdeadbeefull}) {
      const KeyedPermutation f(n, key);
      std::vector<std::uint8_t> hit(n, 0);
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t y = f(i);
        ASSERT_LT(y, n) << "n=" << n << " i=" << i;
        ASSERT_EQ(hit[y], 0) << "n=" << n << " two values land on " << y;
        hit[y] = 1;
      }
    }
  }
}

TEST(KeyedPermutation, DependsOnItsKeyAndNothingElse) {
  const KeyedPermutation a(1'000'000, 42), b(1'000'000, 42), c(1'000'000, 43);
  int same = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(a(i), b(i));
    same += a(i) == c(i);
  }
  EXPECT_LT(same, 5);
  // Values fixed here: the order of a 100 M-sample epoch must not move between versions.
  const KeyedPermutation big(100'000'000, 7);
  EXPECT_EQ(big(0), 59'889'946u);
  EXPECT_EQ(big(12'345), 71'186'287u);
  EXPECT_EQ(big(99'999'999), 33'718'457u);
}

TEST(KeyedPermutation, PlacesEveryValueEverywhereAboutEquallyOften) {
  // n = 10 over 20,000 keys: each (value, place) cell expects 2,000; a chi-square over the 100
  // cells (81 degrees of freedom) stays below 140 for anything near uniform (p < 1e-4).
  const int n = 10, keys = 20000;
  std::vector<double> counts(n * n, 0);
  for (int key = 0; key < keys; ++key) {
    const KeyedPermutation f(n, static_cast<std::uint64_t>(key) * 0x9e3779b97f4a7c15ull);
    for (int i = 0; i < n; ++i)
      counts[static_cast<std::size_t>(i * n + static_cast<int>(f(i)))] += 1;
  }
  const double expected = double(keys) / n;
  double chi2 = 0;
  for (double c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 140.0);
  // Neighbours do not stay neighbours: f(i + 1) - f(i) spreads over the whole range.
  const KeyedPermutation f(1'000'000, 3);
  int near = 0;
  for (std::uint64_t i = 0; i + 1 < 10000; ++i) {
    const auto d = static_cast<std::int64_t>(f(i + 1)) - static_cast<std::int64_t>(f(i));
    near += std::llabs(d) < 1000;
  }
  EXPECT_LT(near, 60);  // about 20 expected for a random permutation
}

}  // namespace
}  // namespace stoke::detail
