#pragma once
// Exit codes of stoke-worker, shared with the loader that interprets them.

namespace stoke::detail {

// Away from 1 (ASan's error exit), 66 (TSan's) and 64-78 (sysexits.h), so a sanitizer's report
// is never mistaken for one of these.
inline constexpr int kExitUsage = 101;
inline constexpr int kExitVersionMismatch = 102;
inline constexpr int kExitBadArena = 103;
inline constexpr int kExitParentGone = 104;

}  // namespace stoke::detail
