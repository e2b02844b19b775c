#pragma once
// Rounding a size up to an alignment, and whether a range lies within a size: for the offsets
// of the arena's sections and of the dataset index's within its own.
//
// Thread-safety: a pure function.

#include <cstddef>
#include <cstdint>

namespace stoke::detail {

// REQUIRES: a > 0. The least multiple of a that is at least n.
inline constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}

// Whether [offset, offset + length) lies within [0, size), written so that nothing wraps.
inline constexpr bool within(std::uint64_t offset, std::uint64_t length, std::uint64_t size) {
  return offset <= size && length <= size - offset;
}

}  // namespace stoke::detail
