#include "stoke/cache.hpp"

#include "data/cache_folder.hpp"

namespace stoke {

CacheUsage cache_usage(const std::string& cache_dir) {
  CacheUsage out;
  out.root = detail::cache_root(cache_dir);
  if (out.root.empty()) return out;
  const detail::CacheUsage usage = detail::cache_usage(out.root);
  out.bytes = usage.bytes;
  out.files = usage.files;
  for (const detail::CacheUsage::Part& p : usage.parts)
    out.parts.push_back({p.name, p.bytes, p.files});
  return out;
}

}  // namespace stoke
