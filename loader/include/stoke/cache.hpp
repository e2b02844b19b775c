#pragma once
// The cache folder a machine's loaders share (Options::cache_dir): the dataset index files
// (datasets/), the epoch orders (orders/), remote shards' member tables (index/) and the shard
// cache's copies (shards/). What it holds, for reports and for deciding what to remove.
//
// Thread-safety: reentrant.

#include <cstdint>
#include <string>
#include <vector>

namespace stoke {

struct CacheUsage {
  struct Part {
    std::string name;  // the folder directly under the root ("datasets"), "." for files there
    std::uint64_t bytes = 0;
    std::uint64_t files = 0;
  };
  std::string root;  // "" when no cache folder can be named
  std::uint64_t bytes = 0;
  std::uint64_t files = 0;
  std::vector<Part> parts;  // sorted by name
};

// What the cache folder `cache_dir` holds ("": the default, as Options::cache_dir names it:
// STOKE_CACHE_DIR, else $XDG_CACHE_HOME/stoke, else ~/.cache/stoke): every regular file under
// it, by size, links not followed. Walks the whole folder (a shard cache of many shards takes
// a moment). A missing folder holds nothing.
CacheUsage cache_usage(const std::string& cache_dir = "");

}  // namespace stoke
