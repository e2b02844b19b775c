#include "host_memory.hpp"

#include <algorithm>
#include <fstream>
#include <string>

namespace stoke::detail {
namespace {

// The value of "key:   N kB" in a /proc file, in bytes; -1 when absent.
std::int64_t proc_kib_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string name;
  std::int64_t kib = 0;
  std::string unit;
  while (in >> name >> kib) {
    std::getline(in, unit);
    if (name == key) return kib * 1024;
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

std::int64_t available_memory_bytes() {
  std::int64_t available = proc_kib_field("/proc/meminfo", "MemAvailable:");
  std::ifstream cgroup_file("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(cgroup_file, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  const std::string dir = "/sys/fs/cgroup" + path;
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
