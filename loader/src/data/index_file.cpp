#include "data/index_file.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>

#include "common/fd.hpp"
#include "common/text.hpp"
#include "data/cache_folder.hpp"
#include "data/index_folder.hpp"
#include "data/index_identity.hpp"
#include "data/progress_ticker.hpp"
#include "remote/remote.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

// Frees what the build left in this process's heap.
void forget(DatasetIndex& index) {
  index = DatasetIndex{};
  ::malloc_trim(0);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A memfd of this process's own that `write` filled: throws Error when it cannot.
int private_file(const char* name, const std::function<bool(int)>& write) {
  const int fd = try_raise_fd(::memfd_create(name, MFD_CLOEXEC));
  if (fd < 0 || !write(fd)) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    throw Error(std::string("cannot hold the dataset index in memory (memfd): ") +
                std::strerror(e));
  }
  return fd;
}

// The index built into a memfd of this process's own (and its pixels into another: IDX data).
std::unique_ptr<MappedIndex> private_index(DatasetIndex index, int max_classes) {
  UniqueFd fd(private_file("stoke-index", [&](int f) { return write_index_file(f, index, ""); }));
  UniqueFd pixels(index.kind != DatasetKind::kRaw ? -1 : private_file("stoke-pixels", [&](int f) {
    return write_pixels_file(f, index, "");
  }));
  forget(index);
  std::unique_ptr<MappedIndex> m = map_index_file(
      fd.release(), "", max_classes, static_cast<int>(MappedIndex::Origin::kPrivate), "");
  if (!m || (pixels && !attach_pixels(*m, pixels.release(), "", max_classes)))
    throw Error("the dataset index written in memory does not read back");
  return m;
}

}  // namespace

std::shared_ptr<const MappedIndex> index_dataset(const std::string& data,
                                                 const IndexOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto built_here = [&](std::unique_ptr<MappedIndex> m) {
    m->built_s_ = seconds_since(start) - m->waited_s_;
    return std::shared_ptr<const MappedIndex>(std::move(m));
  };
  // (The HEADs asked and the Parquet files found for the key serve indexing too.)
  std::map<std::string, RemoteObject> seen;
  std::optional<std::vector<std::string>> parquet;
  const std::optional<std::string> identity =
      options.caches.root.empty() ? std::nullopt : dataset_identity(data, options, &seen, &parquet);
  IndexOptions build = options;
  build.remote_seen = &seen;
  if (parquet) build.parquet_found = &*parquet;
  const auto indexed = [&] {
    const ProgressTicker ticker(options, "indexing " + redact_url(data));
    return build_index(data, build);
  };
  const auto privately = [&] { return built_here(private_index(indexed(), options.max_classes)); };
  const std::string folder = identity ? index_folder(options.caches.root) : "";
  if (folder.empty()) return privately();
  expire_index_files(folder);

  const std::string name = index_file_name(*identity);
  const std::string path = folder + "/" + name;
  using Origin = MappedIndex::Origin;
  if (auto found = open_shared_index(path, *identity, options, Origin::kFound)) return found;
  // Another loader of this machine may be writing it: wait for its lock, then look again.
  IndexFileLock lock(folder, name);
  if (!lock.usable()) return privately();
  const auto wait_start = std::chrono::steady_clock::now();
  IndexFileLock::Attempt taken = lock.try_take();
  if (taken == IndexFileLock::Attempt::kBusy) {
    const ProgressTicker ticker(
        options, "waiting for another loader indexing " + redact_url(data) + " into " + path);
    taken = lock.wait() ? IndexFileLock::Attempt::kTaken : IndexFileLock::Attempt::kUnavailable;
  }
  // (Not taken: no locks here, an NFS home without lockd.)
  if (taken != IndexFileLock::Attempt::kTaken) return privately();
  const double waited = seconds_since(wait_start);
  if (auto found = open_shared_index(path, *identity, options, Origin::kFound)) {
    found->waited_s_ = waited;
    return found;
  }
  remove_temporaries(folder, name);
  remove_temporaries(folder, pixels_file_path(name));
  DatasetIndex index = indexed();
  // (IDX: the pixels first, so that an index file found has its pixels beside it.)
  const bool pixels_written =
      index.kind != DatasetKind::kRaw || write_cache_file(pixels_file_path(path), [&](int fd) {
        return write_pixels_file(fd, index, *identity);
      });
  if (!pixels_written ||
      !write_cache_file(path, [&](int fd) { return write_index_file(fd, index, *identity); })) {
    // (A full disk: pixels written without their index go now, not after a week.)
    if (pixels_written && index.kind == DatasetKind::kRaw) ::unlink(pixels_file_path(path).c_str());
    auto m = private_index(std::move(index), options.max_classes);  // (a full disk: only slower)
    m->waited_s_ = waited;
    return built_here(std::move(m));
  }
  forget(index);
  if (auto built = open_shared_index(path, *identity, options, Origin::kBuilt)) {
    built->waited_s_ = waited;
    return built_here(std::move(built));
  }
  throw Error(path + ": the dataset index just written does not read back");
}

}  // namespace stoke::detail
