#pragma once
// Hugging Face Hub paths: hf://datasets/ORG/NAME[@REVISION][/PATH], PATH a file, a folder or a
// glob ("data/train-*.parquet"), resolved through the Hub's HTTP API at HF_ENDPOINT (the tree
// listing, every page of it) into the files' download URLs
// (ENDPOINT/datasets/ORG/NAME/resolve/REVISION/PATH). HF_TOKEN goes with every request to the
// endpoint, and nowhere else (remote/remote.hpp).
//
// Thread-safety: functions are reentrant.

#include <string>
#include <vector>

#include "remote/remote.hpp"

namespace stoke::detail {

inline bool is_hub_name(const std::string& name) { return name.starts_with("hf://"); }

struct HubPath {
  std::string repo;             // "ORG/NAME"
  std::string revision = "main";  // as written (refs%2Fconvert%2Fparquet)
  std::string path;             // "" for the whole repository
};

// Throws ConfigError for a name that is not hf://datasets/ORG/NAME[@REVISION][/PATH].
HubPath parse_hub_path(const std::string& name);

// The download URL of `path` in the path's repository and revision.
std::string hub_file_url(const HubPath& at, const std::string& path);

// The paths of the files in the repository under `folder` ("" for all), at every depth, in the
// listing's order. Throws Error when the Hub cannot be asked (naming the listing's URL), or
// ConfigError for a listing that is not the Hub's JSON or holds more than kMaxShards files.
std::vector<std::string> hub_listing(const HubPath& at, const std::string& folder,
                                     const RemotePolicy& policy);

// The listing's pages: at most this many bytes each, and this many pages.
inline constexpr std::size_t kMaxHubListingBytes = std::size_t{16} << 20;
inline constexpr int kMaxHubListingPages = 10000;

}  // namespace stoke::detail
