#include "stoke/options.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "stoke/devices.hpp"
#include "stoke/error.hpp"
#include "stoke/names.hpp"

namespace stoke {
namespace {

bool parse_int(std::string_view text, int& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Reads an integer environment variable; false when unset. Throws ConfigError when malformed.
bool env_int(const char* name, int& out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  if (!parse_int(v, out))
    throw ConfigError(std::string("environment variable ") + name + "='" + v +
                      "' is not an integer");
  return true;
}

}  // namespace

DeviceSet DeviceSet::parse(std::string_view spec) {
  if (spec == "auto") return DeviceSet{Kind::kAuto, 0, {}};
  if (spec.starts_with("cuda:")) {
    DeviceSet d{Kind::kCuda, 0, {}};
    std::string_view rest = spec.substr(5);
    bool ok = !rest.empty();
    while (ok && !rest.empty()) {
      const auto comma = rest.find(',');
      int id = -1;
      ok = parse_int(rest.substr(0, comma), id) && id >= 0 && id < 1024 &&
           std::find(d.ids.begin(), d.ids.end(), id) == d.ids.end();
      d.ids.push_back(id);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    if (ok) {
      d.count = static_cast<int>(d.ids.size());
      return d;
    }
  }
  if (spec.starts_with("cpu:")) {
    int count = 0;
    if (parse_int(spec.substr(4), count) && count >= 1 && count <= 1024)
      return DeviceSet{Kind::kCpu, count, {}};
  } else if (spec == "cpu") {
    return DeviceSet{};
  }
  throw ConfigError("devices '" + std::string(spec) +
                    "' not understood; use cpu:G (G host devices, e.g. cpu:4), cuda:0,1 (those "
                    "GPUs) or auto");
}

DeviceSet DeviceSet::resolve() const {
  if (kind != Kind::kAuto) return *this;
  const auto& found = devices().gpus;
  if (found.empty()) return DeviceSet{};
  DeviceSet d{Kind::kCuda, static_cast<int>(found.size()), {}};
  for (const GpuInfo& g : found) d.ids.push_back(g.index);
  return d;
}

std::string DeviceSet::to_string() const {
  if (kind == Kind::kAuto) return "auto";
  if (kind == Kind::kCpu) return "cpu:" + std::to_string(count);
  std::string s = "cuda:";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s.push_back(',');
    s.append(std::to_string(ids[i]));
  }
  return s;
}

RankInfo rank_from_environment() {
  RankInfo info;
  int rank = 0, world = 1;
  // Both variables of a pair are read (and checked) even when the first is missing.
  const bool torchrun_rank = env_int("RANK", rank);
  const bool torchrun_world = env_int("WORLD_SIZE", world);
  if (torchrun_rank || torchrun_world) return {rank, world};
  const bool mpi_rank = env_int("OMPI_COMM_WORLD_RANK", rank);
  const bool mpi_world = env_int("OMPI_COMM_WORLD_SIZE", world);
  if (mpi_rank || mpi_world) info = {rank, world};
  return info;
}

// (stoke/names.hpp's words for a device set: with DeviceSet, not with the plain words, whose
// file needs nothing of the devices.)
DeviceSet parse_devices(std::string_view spec) {
  return DeviceSet::parse(spec);
}
std::string devices_name(const DeviceSet& d) {
  return d.to_string();
}

}  // namespace stoke
