#include "tuning/cores.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "tuning/host_memory.hpp"

namespace stoke::detail {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  const std::string dir = own_cgroup_dir();
  std::ifstream max_file(dir.empty() ? std::string() : dir + "/cpu.max");
  std::string quota, period;
  if (max_file >> quota >> period && quota != "max") {
    const double q = std::stod(quota) / std::stod(period);
    cores = std::min(cores, std::max(1, static_cast<int>(std::ceil(q))));
  }
  return std::max(cores, 1);
}

}  // namespace stoke::detail
