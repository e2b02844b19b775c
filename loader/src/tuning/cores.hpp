#pragma once
// How many cores this process may use: the bound of workers=auto (config.cpp) and the stall
// verdict's advice. Thread-safety: a pure function of the process's state.

namespace stoke::detail {

// The cores this process may run on: its CPU affinity mask, lowered by a cgroup v2 CPU quota
// (cpu.max) when one is set, as in a container given "2.5 CPUs". At least 1.
int available_cores();

}  // namespace stoke::detail
