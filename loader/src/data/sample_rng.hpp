#pragma once
// Per-sample random numbers derived only from (seed, epoch, global position).
// Thread-safety: a SampleRng is used by one thread; construction is pure.
//
// The generator and the conversions to floats are written out here (not <random>
// distributions, whose output differs between standard libraries) so every process on every
// platform draws the same numbers.

#include <cstdint>

namespace stoke::detail {

inline std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Domain tags keep streams for different purposes independent.
inline constexpr std::uint64_t kShuffleStream = 0x5348554646ull;  // epoch permutation
inline constexpr std::uint64_t kSampleStream = 0x53414d504cull;   // per-sample augmentation
inline constexpr std::uint64_t kShardStream = 0x5348415244ull;    // epoch permutation of shards

class SampleRng {
  __extension__ typedef unsigned __int128 U128;

 public:
  SampleRng(std::uint64_t seed, std::uint64_t stream, std::int64_t epoch,
            std::int64_t position) noexcept {
    std::uint64_t k = splitmix64(seed ^ splitmix64(stream));
    k = splitmix64(k ^ static_cast<std::uint64_t>(epoch));
    k = splitmix64(k ^ static_cast<std::uint64_t>(position));
    s0_ = splitmix64(k);
    s1_ = splitmix64(s0_ ^ 0x6a09e667f3bcc909ull);
    if ((s0_ | s1_) == 0) s1_ = 1;
  }

  // xoroshiro128+ step.
  std::uint64_t next() noexcept {
    const std::uint64_t a = s0_;
    std::uint64_t b = s1_;
    const std::uint64_t r = a + b;
    b ^= a;
    s0_ = ((a << 24) | (a >> 40)) ^ b ^ (b << 16);
    s1_ = (b << 37) | (b >> 27);
    return r;
  }

  // Uniform in [0, 1).
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n). REQUIRES: n > 0. Lemire's multiply-shift (bias < 2^-32 for the
  // sizes used here, and the same on every platform).
  std::uint64_t below(std::uint64_t n) noexcept {
    return static_cast<std::uint64_t>((static_cast<U128>(next()) * n) >> 64);
  }
  bool bernoulli(double p) noexcept { return uniform() < p; }

 private:
  std::uint64_t s0_;
  std::uint64_t s1_;
};

}  // namespace stoke::detail
