#pragma once
// Per-sample random numbers derived only from (seed, epoch, global position).
// Thread-safety: a SampleRng is used by one thread; construction is pure.
//
// The generator and the conversions to floats are written out here (not <random>
// distributions, whose output differs between standard libraries) so every process on every
// platform draws the same numbers. (The normal and Gamma draws call the C library's sqrt, log and
// exp: the same numbers wherever that library is the same, as it is for a loader's workers.)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

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
inline constexpr std::uint64_t kMixStream = 0x4d49585550ull;      // MixUp/CutMix, per chunk
inline constexpr std::uint64_t kSourceStream = 0x534f555243ull;   // a mixture's sources
inline constexpr std::uint64_t kDecodeStream = 0x4445434f44ull;   // decode=hybrid's split

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

  // Standard normal (Marsaglia's polar method, one of each pair).
  double normal() noexcept {
    for (;;) {
      const double u = 2.0 * uniform() - 1.0, v = 2.0 * uniform() - 1.0;
      const double s = u * u + v * v;
      if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
    }
  }

  // The log of a Gamma(alpha, 1) draw (Marsaglia and Tsang; below 1, Gamma(alpha + 1) times
  // U^(1 / alpha)), kept as a log so that small alphas do not underflow to 0. REQUIRES: alpha > 0.
  double log_gamma(double alpha) noexcept {
    if (alpha < 1.0) return log_gamma(alpha + 1.0) + std::log(1.0 - uniform()) / alpha;
    const double d = alpha - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      const double x = normal();
      const double t = 1.0 + c * x;
      if (t <= 0.0) continue;
      const double v = t * t * t;
      const double u = 1.0 - uniform();  // (0, 1]
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return std::log(d * v);
    }
  }

  // A Dirichlet([alpha] * out.size()) draw into `out`: Gamma draws over their sum (the Beta
  // distribution for two). REQUIRES: alpha > 0; out not empty.
  void dirichlet(double alpha, std::span<double> out) noexcept {
    double top = -INFINITY;
    for (double& v : out) top = std::max(top, v = log_gamma(alpha));
    double sum = 0.0;
    for (double& v : out) sum += v = std::exp(v - top);
    for (double& v : out) v /= sum;
  }

 private:
  std::uint64_t s0_;
  std::uint64_t s1_;
};

}  // namespace stoke::detail
