#include "stoke/tools/proc.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace stoke::tools {

std::vector<pid_t> child_pids() {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::ifstream children(it->path() / "children");
    pid_t pid = 0;
    while (children >> pid) pids.push_back(pid);
  }
  return pids;
}

double status_mib(const std::string& pid, const char* field) {
  std::ifstream in("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(std::strlen(field))) / 1024.0;
  }
  return 0;
}

std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const auto close = line.rfind(')');
  std::vector<std::string> fields;
  if (close == std::string::npos) return fields;
  std::istringstream rest(line.substr(close + 1));
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

double own_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double children_cpu_s() {
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double total = 0;
  for (const pid_t pid : child_pids()) {
    const std::vector<std::string> f = stat_fields(pid);
    if (f.size() < 13) continue;  // exited meanwhile
    total += (std::stod(f[11]) + std::stod(f[12])) / tick;  // utime, stime: fields 14 and 15
  }
  return total;
}

double children_rss_mib() {
  double total = 0;
  for (const pid_t pid : child_pids()) total += status_mib(std::to_string(pid), "VmRSS:");
  return total;
}

}  // namespace stoke::tools
