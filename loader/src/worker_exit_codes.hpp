#pragma once
// Exit codes of stoke-worker, shared with the loader that interprets them.

namespace stoke::detail {

inline constexpr int kExitUsage = 64;
inline constexpr int kExitVersionMismatch = 65;
inline constexpr int kExitBadArena = 66;
inline constexpr int kExitParentGone = 67;

}  // namespace stoke::detail
