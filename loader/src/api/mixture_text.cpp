#include "api/mixture_text.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/shard_list.hpp"
#include "stoke/error.hpp"
#include "stoke/names.hpp"

namespace stoke::detail {
namespace {

// A mixture file is a few lines a user writes: anything larger is another kind of JSON file.
constexpr std::uintmax_t kMaxMixtureFile = 1 << 20;

using Json = nlohmann::json;

[[noreturn]] void refuse(const std::string& what, const std::string& why) {
  throw ConfigError(what + ": " + why);
}

std::string text_of(const Json& j, const std::string& where, const char* key) {
  if (!j.is_string()) refuse(where, std::string(key) + " must be text");
  return j.get<std::string>();
}

double number_of(const Json& j, const std::string& where, const char* key) {
  if (!j.is_number()) refuse(where, std::string(key) + " must be a number");
  const double v = j.get<double>();
  if (!std::isfinite(v) || v < 0) refuse(where, std::string(key) + " must be 0 or more");
  return v;
}

std::int64_t whole_of(const Json& j, const std::string& where, const char* key) {
  if (!j.is_number_integer()) refuse(where, std::string(key) + " must be a whole number");
  if (j.is_number_unsigned() && j.get<std::uint64_t>() > (std::uint64_t{1} << 62))
    refuse(where, std::string(key) + " is too large");
  return j.get<std::int64_t>();
}

MixtureSource source_of(const Json& j, const std::string& where) {
  if (!j.is_object()) refuse(where, "must be an object with at least \"data\"");
  MixtureSource s;
  bool data = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "data") {
      s.data = text_of(value, where, "data");
      data = true;
    } else if (key == "weight") {
      s.weight = number_of(value, where, "weight");
    } else if (key == "samples") {
      s.samples = whole_of(value, where, "samples");
      if (s.samples < 0) refuse(where, "samples must be 0 or more");
    } else if (key == "repeat") {
      s.repeat = number_of(value, where, "repeat");
    } else if (key == "label_offset") {
      if (value.is_string() && value.get<std::string>() == "auto") {
        s.label_offset = kAutoLabelOffset;
      } else {
        const std::int64_t v = whole_of(value, where, "label_offset");
        if (v < 0 || v > kDefaultMaxClasses)
          refuse(where,
                 "label_offset must be \"auto\" or 0.." + std::to_string(kDefaultMaxClasses));
        s.label_offset = static_cast<int>(v);
      }
    } else if (key == "image_root") {
      s.image_root = text_of(value, where, "image_root");
    } else if (key == "split") {
      s.split = parse_split(text_of(value, where, "split"));
    } else if (key == "label_field") {
      s.label_field = text_of(value, where, "label_field");
    } else if (key == "image_column") {
      s.image_column = text_of(value, where, "image_column");
    } else if (key == "label_column") {
      s.label_column = text_of(value, where, "label_column");
    } else {
      refuse(where, "\"" + key +
                        "\" is not a source's key (data, weight, samples, repeat, label_offset, "
                        "image_root, split, label_field, image_column, label_column)");
    }
  }
  if (!data || s.data.empty()) refuse(where, "has no \"data\"");
  return s;
}

std::vector<MixtureSource> sources_of(const Json& j, const std::string& what) {
  if (!j.is_array()) refuse(what, "sources must be a list of source objects");
  std::vector<MixtureSource> out;
  for (std::size_t i = 0; i < j.size(); ++i)
    out.push_back(source_of(j[i], what + ", source " + std::to_string(i)));
  return out;
}

}  // namespace

std::vector<MixtureSource> parse_sources(std::string_view text, const std::string& what) {
  if (text.empty()) return {};
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) refuse(what, "is not JSON (a list of source objects)");
  return sources_of(j, what);
}

std::string sources_text(const std::vector<MixtureSource>& sources) {
  if (sources.empty()) return "";
  const MixtureSource defaults;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const MixtureSource& s : sources) {
    nlohmann::ordered_json j = {{"data", s.data}};
    if (s.weight != 0) j["weight"] = s.weight;
    if (s.samples != 0) j["samples"] = s.samples;
    if (s.repeat != 0) j["repeat"] = s.repeat;
    if (s.label_offset == kAutoLabelOffset)
      j["label_offset"] = "auto";
    else if (s.label_offset != 0)
      j["label_offset"] = s.label_offset;
    if (s.image_root != defaults.image_root) j["image_root"] = s.image_root;
    if (s.split != defaults.split) j["split"] = split_name(s.split);
    if (s.label_field != defaults.label_field) j["label_field"] = s.label_field;
    if (s.image_column != defaults.image_column) j["image_column"] = s.image_column;
    if (s.label_column != defaults.label_column) j["label_column"] = s.label_column;
    out.push_back(std::move(j));
  }
  // (A path that is not UTF-8 is shown with replacement characters: the text is for reading.)
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

bool parse_mixture_file(std::string_view text, const std::string& path, Options& o) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("sources")) return false;
  const std::string what = "mixture file " + path;
  for (const auto& [key, value] : j.items()) {
    if (key != "sources" && key != "epoch_samples")
      refuse(what, "\"" + key + "\" is not a mixture file's key (sources, epoch_samples)");
  }
  std::vector<MixtureSource> sources = sources_of(j["sources"], what);
  if (sources.empty()) refuse(what, "names no sources");
  std::int64_t epoch_samples = 0;
  if (const auto e = j.find("epoch_samples"); e != j.end()) {
    epoch_samples = whole_of(*e, what, "epoch_samples");
    if (epoch_samples < 0) refuse(what, "epoch_samples must be 0 or more");
  }
  // A source's relative paths (each of a comma-separated list, as shard lists split them, and
  // its image_root) are relative to the file's folder, as a list file's are.
  const std::size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const auto under = [&folder](const std::string& p) {
    const bool relative = !p.empty() && p[0] != '/' && p.find("://") == std::string::npos;
    return relative ? folder + p : p;
  };
  for (MixtureSource& s : sources) {
    const std::vector<std::string> parts = split_top_level(s.data);
    std::string joined;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) joined += ',';
      joined += under(parts[i]);
    }
    s.data = joined;
    s.image_root = under(s.image_root);
  }
  o.sources = std::move(sources);
  if (o.epoch_samples == 0) o.epoch_samples = epoch_samples;
  o.data.clear();
  return true;
}

bool read_mixture_file(Options& o) {
  const std::string path = o.data;
  if (!o.sources.empty() || path.size() < 5 || path.compare(path.size() - 5, 5, ".json") != 0)
    return false;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uintmax_t>(st.st_size) > kMaxMixtureFile)
    return false;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_mixture_file(text.str(), path, o);
}

}  // namespace stoke::detail
