#pragma once
// What the tools (and tests) read about processes from /proc. Thread-safety: any thread; each
// call reads /proc afresh. Linux only, like the loader.

#include <sys/types.h>

#include <string>
#include <vector>

namespace stoke::tools {

// The pids of this process's children (the loader's workers), from every thread's children
// list: workers are spawned from the loader's supervisor thread, not the main one.
std::vector<pid_t> child_pids();

// A "VmRSS:"-style field of /proc/<pid>/status ("self" or a number) in MiB; 0 when missing.
double status_mib(const std::string& pid, const char* field);

// The fields of /proc/<pid>/stat after the command name, from field 3 (state) on; empty when
// the process is gone. The name is skipped by its last ')', as it may hold spaces and ')'.
std::vector<std::string> stat_fields(pid_t pid);

// CPU seconds (user + system) this process has used so far.
double own_cpu_s();
// CPU seconds used so far by the children still running (read before they exit).
double children_cpu_s();
// Resident memory of the children in MiB, summed.
double children_rss_mib();

}  // namespace stoke::tools
