#pragma once
// Memory figures for sizing the worker pool. Thread-safety: pure functions of /proc and /sys.

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace stoke::detail {

// Bytes this process could still allocate: MemAvailable, lowered by the headroom of a cgroup v2
// memory limit (memory.max - memory.current) when one is set. -1 when unknown.
std::int64_t available_memory_bytes();

// This process's cgroup v2 directory ("/sys/fs/cgroup/<path>"), or "" when /proc/self/cgroup
// names none.
std::string own_cgroup_dir();

// A process's private resident memory (RssAnon: its heap and stacks, not the shared arena).
// -1 when unknown (the process is gone, or /proc is not mounted).
std::int64_t anon_rss_bytes(pid_t pid);

}  // namespace stoke::detail
