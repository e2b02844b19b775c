#pragma once
// How many cores this process may use. Thread-safety: a pure function of the process's state.

namespace stoke::tools {

// The cores this process may run on: its CPU affinity mask, lowered by a cgroup v2 CPU quota
// (cpu.max) when one is set, as in a container given "2.5 CPUs". At least 1. The loader's own
// count (the bound of workers=auto when max_workers is 0), so a tool's advice agrees with it.
int available_cores();

}  // namespace stoke::tools
