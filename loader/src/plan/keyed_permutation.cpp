#include "plan/keyed_permutation.hpp"

#include "plan/sample_rng.hpp"

namespace stoke::detail {

KeyedPermutation::KeyedPermutation(std::uint64_t n, std::uint64_t key) : n_(n) {
  int bits = 2;
  while (bits < 64 && (std::uint64_t{1} << bits) < n) bits += 2;
  half_bits_ = bits / 2;
  mask_ = (std::uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < kRounds; ++r)
    keys_[r] = splitmix64(key ^ (0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(r + 1)));
}

std::uint64_t KeyedPermutation::feistel(std::uint64_t x) const {
  std::uint64_t left = x >> half_bits_, right = x & mask_;
  for (const std::uint64_t k : keys_) {
    const std::uint64_t next = left ^ (splitmix64(k ^ right) & mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

std::uint64_t KeyedPermutation::operator()(std::uint64_t i) const {
  std::uint64_t y = feistel(i);
  while (y >= n_) y = feistel(y);
  return y;
}

}  // namespace stoke::detail
