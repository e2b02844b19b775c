#include "worker/worker_locate.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/build_info.hpp"
#include "ipc/arena_layout.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

std::string worker_version_tag() {
  return std::string(kVersion) + "/layout" + std::to_string(kLayoutVersion);
}

std::string locate_worker(const std::string& configured) {
  namespace fs = std::filesystem;
  if (!configured.empty()) {
    struct stat st {};
    if (::stat(configured.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0)
      throw ConfigError("worker path " + configured +
                        " is not an executable file; point it at "
                        "the stoke-worker that came with this library");
    return configured;
  }
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&locate_worker), &info) == 0 || info.dli_fname == nullptr)
    throw Error("cannot tell where libstoke_loader is loaded from; set the worker path");
  const fs::path libdir = fs::canonical(fs::path(info.dli_fname)).parent_path();
  const fs::path candidates[] = {libdir / kWorkerFromLibdir,
                                 libdir / "../libexec/stoke/stoke-worker"};
  std::string looked;
  for (const fs::path& c : candidates) {
    const fs::path p = c.lexically_normal();
    if (::access(p.c_str(), X_OK) == 0) return p.string();
    looked += (looked.empty() ? "" : ", ") + p.string();
  }
  throw Error("cannot find stoke-worker beside " + std::string(info.dli_fname) + " (looked in " +
              looked + "); reinstall stoke or set the worker path");
}

}  // namespace stoke::detail
