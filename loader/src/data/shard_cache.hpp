#pragma once
// Local copies of remote shards: a folder of whole shard files, bounded in bytes, shared by
// every loader (and every rank) on the machine that names it.
//
// Layout of `root`/shards: <key>.tar, a complete copy of one version of one shard (key: a hash
// of its URL, size and ETag, so a shard replaced on the server gets a new name); <key>.lock,
// held (flock) by whoever downloads that key, so two loaders never fetch the same shard twice at
// once (removed with its copy on eviction); <key>.tar.part.XXXXXX while a download runs,
// renamed into place only when complete, so no reader ever sees half a shard. A file's modification time is its last use: eviction takes
// the least recently used copies first.
//
// Sharing: each loader keeps the folder under its own limit and never evicts what it still
// needs, but it cannot know what another loader needs. A copy evicted under a loader's feet
// costs speed only: its workers read that shard's byte ranges from the server instead.
//
// Thread-safety: every method may be called from any thread; make_room() and used() may run
// beside fetch() (they skip files still being written).

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "data/remote.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

// The cache folder cannot be written (missing permissions, a full or read-only disk): the
// shard can still be read from the server.
struct ShardCacheFolderError : Error {
  using Error::Error;
};

// Where local caches live (an absolute path): `configured` when given, else STOKE_CACHE_DIR, else
// $XDG_CACHE_HOME/stoke, else ~/.cache/stoke; "" when none can be named.
std::string cache_root(const std::string& configured);

// The key of one version of a remote object: a hash of its URL, size and ETag (the index cache
// and the shard cache name their files by it).
std::string version_key(const std::string& url, std::uint64_t size, const std::string& etag);

// The local copy's path for a shard version, under `root`: root/shards/<key>.tar.
std::string shard_copy_path(const std::string& root, const std::string& url, std::uint64_t size,
                            const std::string& etag);

class ShardStore {
 public:
  // REQUIRES: root is not empty. Creates root/shards when missing (throws ConfigError when it
  // cannot).
  ShardStore(const std::string& root, std::uint64_t limit);

  const std::string& folder() const { return folder_; }
  std::uint64_t limit() const { return limit_; }

  // Whether the copy at `path` exists; when it does, marks it used now (the LRU order).
  bool use(const std::string& path) const;

  // Downloads `url` (`size` bytes, as indexed) into the copy at `path`, unless another loader
  // did meanwhile. Returns the bytes downloaded (0: it was there). A shard that the server now
  // holds shorter is copied as it is (its members past the end then read as corrupt). A loader
  // that holds the shard's lock for longer than the policy's deadline (a download that does not
  // end: a stopped process) is not waited for further: this one downloads beside it, into a
  // file of its own. Throws ShardCacheFolderError when the folder cannot be written, and Error
  // when the server stays unreachable past the policy's deadline, or refuses.
  std::uint64_t fetch(const std::string& url, std::uint64_t size, const std::string& path,
                      const RemotePolicy& policy) const;

  // Evicts least recently used copies, never one in `keep`, until the folder's copies and
  // `incoming` more bytes fit in the limit. Returns false when they cannot; `evicted` gets the
  // paths removed either way.
  bool make_room(std::uint64_t incoming, const std::set<std::string>& keep,
                 std::vector<std::string>& evicted) const;

  // The bytes of the copies now in the folder.
  std::uint64_t used() const;

 private:
  struct Copy {
    std::string path;
    std::uint64_t bytes = 0;
    std::int64_t used_ns = 0;  // modification time: last use
  };
  // The copies now in the folder (files being written are not copies yet).
  std::vector<Copy> copies() const;

  std::string folder_;
  std::uint64_t limit_;
};

}  // namespace stoke::detail
