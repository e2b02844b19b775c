#include "data/index_identity.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/build_info.hpp"
#include "common/text.hpp"
#include "data/folder_scan.hpp"
#include "data/index_format.hpp"
#include "data/parquet_dataset.hpp"
#include "data/shard_list.hpp"
#include "stoke/mnist.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;

namespace {

// One input's version: "<what> <path>\t<size>\t<mtime>\t<ctime>\t<inode>\t<device>\n".
void add_version(std::string& out, const char* what, const std::string& path,
                 const struct stat& st) {
  char v[160];
  std::snprintf(v, sizeof v, "\t%lld\t%lld.%09ld\t%lld.%09ld\t%llu\t%llu\n",
                static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec),
                st.st_mtim.tv_nsec, static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec,
                static_cast<unsigned long long>(st.st_ino),
                static_cast<unsigned long long>(st.st_dev));
  out += what;
  out += ' ';
  out += path;
  out += v;
}

// The same, stat'ed here; false when it cannot be.
bool add_version(std::string& out, const char* what, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  add_version(out, what, path, st);
  return true;
}

// Whether `dir`'s file system counts a folder's subfolders in its link count (2: none), as
// ext2/3/4, XFS, tmpfs and NFS (of such a server) do; others (FUSE, CIFS, ISO 9660) may say 2 of
// any folder.
bool counts_subfolders(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0xEF53:      // ext2/3/4
    case 0x58465342:  // XFS
    case 0x01021994:  // tmpfs
    case 0x6969:      // NFS
      return true;
    default:
      return false;
  }
}

// The versions of `dir` (whose stat is `st`) and every folder below it, not following links: a
// file added to, removed from or renamed in any of them changes its folder's times. `leaf`: known
// to hold no folder, so it is not read.
bool add_folder_versions(std::string& out, const std::string& dir, const struct stat& st, int depth,
                         bool leaf) {
  add_version(out, "dir", dir, st);
  if (leaf) return true;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  std::vector<std::string> subs;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat s {};
      is_dir = ::lstat(path.c_str(), &s) == 0 && S_ISDIR(s.st_mode);
    }
    if (is_dir) subs.push_back(path);
  }
  ::closedir(d);
  std::sort(subs.begin(), subs.end());
  for (const std::string& sub : subs) {
    struct stat s {};
    if (depth >= 64 || ::stat(sub.c_str(), &s) != 0 ||
        !add_folder_versions(out, sub, s, depth + 1, false))
      return false;
  }
  return true;
}

// An image-folder tree: its root, then each class folder (links followed, as the index does;
// stat'ed at once, each a round trip on a network file system) and the folders below it.
bool add_tree_versions(std::string& out, const std::string& root) {
  if (!add_version(out, "root", root)) return false;
  std::vector<std::string> classes;
  try {
    for (const fs::path& c : class_folders(root)) classes.push_back(c.string());
  } catch (const std::exception&) {
    return false;  // (indexing reports it)
  }
  const std::vector<PathStat> stats = stat_paths(classes);
  // Which class folders hold none: by the link count where the file system keeps it so, else
  // by reading them (at once); the rare ones that do are walked below.
  const bool counted = counts_subfolders(root);
  std::vector<std::string> unknown;
  for (std::size_t i = 0; i < classes.size(); ++i)
    if (stats[i].error == 0 && !(counted && stats[i].st.st_nlink == 2))
      unknown.push_back(classes[i]);
  const std::vector<int> subfolders = has_subfolders(unknown);
  for (std::size_t i = 0, u = 0; i < classes.size(); ++i) {
    if (stats[i].error != 0) return false;
    bool leaf = counted && stats[i].st.st_nlink == 2;
    if (!leaf) leaf = subfolders[u++] == 0;
    if (!add_folder_versions(out, classes[i], stats[i].st, 0, leaf)) return false;
  }
  return true;
}

// Every shard's version (a local one's file and sidecar, a remote one's size and ETag).
bool add_shard_versions(std::string& out, const std::vector<std::string>& shards,
                        const RemotePolicy& policy, std::map<std::string, RemoteObject>* seen) {
  for (const std::string& name : shards) {
    if (is_url(name)) {
      if (redact_url(name) != printable(name)) return false;  // (see dataset_identity)
      const RemoteObject object = remote_stat(name, policy);
      if (seen != nullptr) (*seen)[name] = object;
      if (object.etag.empty()) return false;
      out += "url " + redact_url(name) + "\t" + std::to_string(object.size) + "\t" + object.etag +
             "\n";
      continue;
    }
    const std::string path = fs::absolute(name).lexically_normal().string();
    if (!add_version(out, "shard", path)) return false;
    if (!add_version(out, "sidecar", path + ".idx")) out += "sidecar " + path + ".idx\tnone\n";
  }
  return true;
}

}  // namespace

std::optional<std::string> dataset_identity(const std::string& data, const IndexOptions& o,
                                            std::map<std::string, RemoteObject>* seen,
                                            std::optional<std::vector<std::string>>* parquet) {
  // (A URL with a user:password or a signature is indexed privately: the index holds the URL
  // whole, and a key of the redacted one would hand it to another run or user.)
  if (redact_url(data) != printable(data)) return std::nullopt;
  std::string out =
      "stoke dataset index " + std::to_string(kIndexFileFormat) + " (stoke " + kVersion + ")\n";
  out += "data " + redact_url(data) + "\n";
  out += "options split=" + std::to_string(static_cast<int>(o.split)) + " label=" + o.label_field +
         " mask=" + o.mask_field + " bytes=" + o.bytes_field + " boxes=" + o.box_field +
         " on_error=" + std::to_string(static_cast<int>(o.on_error)) +
         " max_classes=" + std::to_string(o.max_classes) +
         " num_classes=" + std::to_string(o.num_classes) + " image_column=" + o.image_column +
         " label_column=" + o.label_column +
         " copies=" + (o.caches.shard_copies ? o.caches.root : std::string()) + "\n";
  if (data.empty()) return std::nullopt;
  std::error_code ec;
  if (lowercase(fs::path(data).extension().string()) == ".json") {
    out += "image_root " +
           (o.image_root.empty() ? std::string() : fs::absolute(o.image_root, ec).string()) + "\n";
    if (!add_version(out, "json", fs::absolute(data, ec).lexically_normal().string()))
      return std::nullopt;
    return out;
  }
  if (const auto files = parquet_files(data, o.split, o.remote)) {
    if (parquet != nullptr) *parquet = files;
    for (const std::string& f : *files) {
      // (A remote file's version is its size and ETag, as a remote shard's.)
      if (is_url(f) ? !add_shard_versions(out, {f}, o.remote, seen)
                    : !add_version(out, "parquet", fs::absolute(f, ec).lexically_normal().string()))
        return std::nullopt;
    }
    return out;
  }
  if (const auto shards = shard_list(data)) {
    if (!add_shard_versions(out, *shards, o.remote, seen)) return std::nullopt;
    return out;
  }
  const std::string path = fs::absolute(data, ec).lexically_normal().string();
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return std::nullopt;
  if (!fs::is_directory(status))
    return add_version(out, "list", path) ? std::optional(out) : std::nullopt;
  if (!is_idx_folder(path)) return add_tree_versions(out, path) ? std::optional(out) : std::nullopt;
  if (!add_version(out, "idx", path)) return std::nullopt;
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (entry.is_regular_file(ec) && !add_version(out, "file", entry.path().string()))
      return std::nullopt;
  return ec ? std::nullopt : std::optional(out);
}

}  // namespace stoke::detail
