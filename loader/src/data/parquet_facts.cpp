#include "data/parquet_facts.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

struct Library {
  ReadParquetFactsFn read = nullptr;
  WriteParquetFileFn write = nullptr;
  std::string error;  // why it could not be loaded
};

// libstoke_parquet.so beside the library or executable this code is in (build/lib and the
// install's lib hold it beside libstoke_loader; a test binary in build/bin finds it in ../lib).
Library load_library() {
  namespace fs = std::filesystem;
  Library lib;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&read_parquet_facts), &info) == 0 ||
      info.dli_fname == nullptr) {
    lib.error = "cannot tell where stoke is loaded from";
    return lib;
  }
  std::error_code ec;
  const fs::path here = fs::canonical(fs::path(info.dli_fname), ec).parent_path();
  std::string tried;
  for (const fs::path& dir : {here, here / "../lib", here / "../../lib"}) {
    const fs::path candidate = (dir / kParquetLibrary).lexically_normal();
    if (::access(candidate.c_str(), R_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + candidate.string();
      continue;
    }
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      lib.error = candidate.string() + " cannot be loaded: " + (why != nullptr ? why : "?") +
                  " (it needs Apache Arrow's libarrow and libparquet of the pyarrow it was built "
                  "with: install that pyarrow, or rebuild stoke against the one installed)";
      return lib;
    }
    lib.read = reinterpret_cast<ReadParquetFactsFn>(::dlsym(handle, kParquetFactsSymbol));
    lib.write = reinterpret_cast<WriteParquetFileFn>(::dlsym(handle, kParquetWriteSymbol));
    if (lib.read == nullptr || lib.write == nullptr) {
      lib.read = nullptr;
      lib.write = nullptr;
      lib.error = candidate.string() + " is not this stoke's Parquet library";
    }
    return lib;  // (kept loaded for the process's life)
  }
  lib.error = std::string("this stoke was built without Parquet support (") + kParquetLibrary +
              " is not beside it: looked for " + tried +
              "); build it with pyarrow installed (setup.sh installs it)";
  return lib;
}

// The library, loaded by the first caller.
const Library& library() {
  static std::once_flag once;
  static Library lib;
  std::call_once(once, [] { lib = load_library(); });
  return lib;
}

}  // namespace

ParquetFileFacts read_parquet_facts(const ParquetSource& source, const ParquetColumns& columns) {
  const Library& lib = library();
  if (lib.read == nullptr) throw ConfigError(source.name + ": " + lib.error);
  ParquetFileFacts facts;
  std::string error;
  if (lib.read(source, columns, facts, error) != 0) throw ConfigError(error);
  return facts;
}

void write_parquet_file(const ParquetWriteRequest& request) {
  const Library& lib = library();
  if (lib.write == nullptr) throw ConfigError(request.path + ": " + lib.error);
  std::string error;
  if (lib.write(request, error) != 0) throw Error(error);
}

}  // namespace stoke::detail
