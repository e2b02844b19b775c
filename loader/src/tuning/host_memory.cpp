#include "tuning/host_memory.hpp"

#include <algorithm>
#include <fstream>
#include <string>

namespace stoke::detail {
namespace {

// The value of the line "key   N kB" in a /proc file (/proc/meminfo, /proc/<pid>/status), in
// bytes; -1 when the file or the line is missing.
std::int64_t proc_kib_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    try {
      return std::stoll(line.substr(key.size())) * 1024;
    } catch (...) {
      return -1;
    }
  }
  return -1;
}

std::int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  try {
    return std::stoll(text);
  } catch (...) {
    return -1;
  }
}

}  // namespace

std::string own_cgroup_dir() {
  std::ifstream cgroup_file("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroup_file, line)) {
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  }
  return "";
}

std::int64_t available_memory_bytes() {
  std::int64_t available = proc_kib_field("/proc/meminfo", "MemAvailable:");
  const std::string dir = own_cgroup_dir();
  if (dir.empty()) return available;
  const std::int64_t max = read_number(dir + "/memory.max");
  const std::int64_t current = read_number(dir + "/memory.current");
  if (max > 0 && current >= 0) {
    const std::int64_t headroom = std::max<std::int64_t>(0, max - current);
    available = available < 0 ? headroom : std::min(available, headroom);
  }
  return available;
}

std::int64_t anon_rss_bytes(pid_t pid) {
  return proc_kib_field("/proc/" + std::to_string(pid) + "/status", "RssAnon:");
}

}  // namespace stoke::detail
