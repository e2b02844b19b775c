#pragma once
// A mixture's text form (docs/USAGE.md, "Mixing datasets"): Options::sources as JSON, and a
// mixture file that Options::data may name.
//
//   {"sources": [{"data": "/data/laion/{000000..000999}.tar", "weight": 0.6},
//                {"data": "/data/cc12m.parquet", "weight": 0.3, "label_column": "none"},
//                {"data": "/data/curated", "repeat": 2, "label_offset": "auto"}],
//    "epoch_samples": 1000000}
//
// A source's keys: data (required), weight, samples, repeat, label_offset (a number or "auto"),
// and its SourceOptions' (image_root, split, label_field, image_column, label_column); any
// other key is refused, so that a misspelt one is not silently ignored.
//
// Thread-safety: pure functions.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoke/options.hpp"

namespace stoke::detail {

// The sources of a JSON array of source objects (Options::sources' text form); "" is none.
// Throws ConfigError naming `what` and the source for what it cannot take.
std::vector<MixtureSource> parse_sources(std::string_view text, const std::string& what);
// The JSON array parse_sources() reads back; "" for none.
std::string sources_text(const std::vector<MixtureSource>& sources);

// Options::data names a mixture file (a small .json file holding an object with "sources"):
// its sources and epoch_samples into `o` (data cleared, the file's epoch_samples taken unless
// `o` sets its own). False, and `o` untouched, when data is not such a file (a COCO file is
// not: it has no "sources"). Throws ConfigError naming the file for one it cannot take.
bool read_mixture_file(Options& o);
// read_mixture_file()'s reading of the file's `text`, found at `path`.
bool parse_mixture_file(std::string_view text, const std::string& path, Options& o);

}  // namespace stoke::detail
