#pragma once
// Rounding a size up to an alignment, for the offsets of the arena's sections and of the
// dataset index within its own.
//
// Thread-safety: a pure function.

#include <cstddef>

namespace stoke::detail {

// REQUIRES: a > 0. The least multiple of a that is at least n.
inline constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}

}  // namespace stoke::detail
