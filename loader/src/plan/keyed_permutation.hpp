#pragma once
// A keyed bijection of [0, n) that needs no n-sized array: the epoch order of datasets too large
// to hold one (plan/epoch_plan.hpp switches to it at PlanConfig::permuted_from samples).
//
// A balanced Feistel network (kRounds rounds, each round function a splitmix64 of the round's
// key and the right half) permutes the 2h-bit numbers, 2^(2h) the smallest power of 4 at least
// n; "cycle walking" applies it again to any value at or past n until one lands inside, which
// keeps it a bijection of [0, n) (at most 4 n values to walk through, about 4 steps at worst on
// average since the domain is under 4 n). A function of (n, key) alone: the same on every
// machine.
//
// Thread-safety: immutable after construction; operator() may run on any thread.

#include <cstdint>

namespace stoke::detail {

class KeyedPermutation {
 public:
  static constexpr int kRounds = 6;

  // REQUIRES: n >= 1.
  KeyedPermutation(std::uint64_t n, std::uint64_t key);

  // The image of i. REQUIRES: i < size().
  std::uint64_t operator()(std::uint64_t i) const;
  std::uint64_t size() const { return n_; }

 private:
  std::uint64_t feistel(std::uint64_t x) const;

  std::uint64_t n_;
  int half_bits_;  // h: the network permutes [0, 2^(2h))
  std::uint64_t mask_;
  std::uint64_t keys_[kRounds];
};

}  // namespace stoke::detail
