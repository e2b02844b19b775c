#pragma once
// The cache folders stoke keeps under its cache root (shards/, the shard copies of
// data/shard_cache.hpp; index/, remote shards' indexes; datasets/, the dataset index files of
// data/index_folder.hpp; relayout/, the copies of decode/relayout_cache.hpp), and the rules
// every file in them
// follows. The folders may be shared with processes stoke does not control, so nothing found
// there is believed on its name alone:
// - Folders are 0700 and files 0600, owned by this user, unless STOKE_CACHE_SHARED=1 asks to
//   share them with the folder's group (folders 02770, files 0640; a file is then trusted when
//   this user or a member of the folder's group owns it). A cache folder owned by another user
//   (when not shared) or writable by every user is a ConfigError; stoke's own folders (shards/,
//   index/, datasets/) of this user's with looser modes (an earlier version's) are tightened.
// - Every file is opened with kCacheOpenFlags: O_NOFOLLOW (a symbolic link is never followed,
//   its target never read nor touched), O_NONBLOCK (a FIFO never blocks) and O_CLOEXEC; then
//   fstat'd: a regular file, of a trusted owner, with one link.
// - Files are named by version_key(), a hash of the URL as shown: nothing derived from a secret
//   names a file.
//
// Thread-safety: functions of the file system only; safe from any thread and any process.

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stoke::detail {

inline constexpr int kCacheOpenFlags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;

// The suffix of a ConfigError about the cache folder: what to do instead.
inline constexpr const char* kCacheFolderAdvice =
    "set cache_dir (or STOKE_CACHE_DIR) to a folder of your own, STOKE_CACHE_SHARED=1 to share "
    "one with its group, or cache_limit to 0 to read shards from the server without a local "
    "copy";

// The modes of cache folders and files: private, or shared with the folder's group.
mode_t cache_folder_mode(bool shared);
mode_t cache_file_mode(bool shared);

// Where local caches live (an absolute path): `configured` when given, else STOKE_CACHE_DIR, else
// $XDG_CACHE_HOME/stoke, else ~/.cache/stoke; "" when none can be named.
std::string cache_root(const std::string& configured);

// Whether the cache's folders and files are shared with the folder's group: STOKE_CACHE_SHARED=1.
bool cache_shared();

// Makes `folder` and the folders above it that are missing (0700, or 02770 when shared; those
// above the cache root 0700 or 0755), and checks the folder as the header says: throws
// ConfigError naming the folder and what to do when it is another user's, writable by others, or
// (when `own`: a folder stoke names, shards/, index/ or datasets/) a symbolic link; puts an own
// folder of this user's back to its mode, and takes the group's write bit from another (the cache
// root, which may be a link the user made). Returns false (errno set) when it cannot be made (a
// read-only disk, no permission above it).
bool prepare_cache_folder(const std::string& folder, bool own);

// The whole of a small file stoke keeps under a cache folder (an index cache entry), or nullopt
// when it is missing, larger than `max_bytes`, or not a regular file of a trusted owner (a
// symbolic link is not followed).
std::optional<std::string> read_cache_file(const std::string& path, std::uint64_t max_bytes);

// Writes `text` to `path` (in a folder prepare_cache_folder() accepted) through a temporary file
// of its own and a rename, with the cache's file mode: readers never see half of it, and the
// last writer's whole file wins. False when it cannot (a cache that cannot be written is only
// slower).
bool write_cache_file(const std::string& path, const std::string& text);
// The same for a file that `write` writes to the descriptor it is given (false: it could not;
// the temporary file is then removed). Its temporary file is "<path>.tmp.<random>".
bool write_cache_file(const std::string& path, const std::function<bool(int fd)>& write);

// A 64-bit FNV-1a hash of `text`, as 16 hex digits: the cache's file names.
std::string cache_key(const std::string& text);

// Whether `text` is all lowercase hex digits (cache_key()'s): a name stoke may have given.
bool is_key_text(std::string_view text);

// An flock on the lock file `path` of a cache folder, held while this lives. The file is made
// when missing (mode `mode`), never opened through a symbolic link, and must be a regular file
// `trusted` accepts. Another holder is waited for at most `wait`, polling every `poll` (a
// holder keeps it for milliseconds: one that keeps it longer is a stopped process). When the
// lock cannot be had, held() is false and why() says why, naming the file: "cannot open PATH:
// ...", "cannot use PATH as the folder's lock: ...", "cannot lock PATH: ...".
class CacheFolderLock {
 public:
  CacheFolderLock(const std::string& path, mode_t mode,
                  const std::function<bool(const struct stat&)>& trusted,
                  std::chrono::duration<double> wait, std::chrono::microseconds poll);
  ~CacheFolderLock();
  CacheFolderLock(const CacheFolderLock&) = delete;
  CacheFolderLock& operator=(const CacheFolderLock&) = delete;
  bool held() const { return held_; }
  const std::string& why() const { return why_; }

 private:
  int fd_ = -1;
  bool held_ = false;
  std::string why_;
};

// The key of one version of a remote object: a hash of its URL as shown (redact_url: no userinfo
// nor signed query values), size and ETag (the index cache and the shard cache name their files
// by it).
std::string version_key(const std::string& url, std::uint64_t size, const std::string& etag);

// Whether the file `st` describes (at `path`, in a cache folder) may be trusted: this user's,
// or, when the cache is shared, one of the folder's group.
bool trusted_cache_file(const std::string& path, const struct stat& st);

// Whether `path` is a regular file of this user's not modified for more than `keep` before
// `now`: one a sweep of a cache folder may remove (links are not followed).
bool stale_cache_file(const std::string& path, std::chrono::system_clock::duration keep,
                      std::chrono::system_clock::time_point now);

// What a cache folder holds: its files' bytes (their sizes, links not followed), in all and by
// the folder directly under it they are in (datasets, orders, index, shards), sorted by name.
struct CacheUsage {
  struct Part {
    std::string name;
    std::uint64_t bytes = 0;
    std::uint64_t files = 0;
  };
  std::uint64_t bytes = 0;
  std::uint64_t files = 0;
  std::vector<Part> parts;
};
// Walks `root` (every file under it: a shard cache may hold many); an empty usage when it is
// missing or cannot be read.
CacheUsage cache_usage(const std::string& root);

// A random suffix for a file of a cache folder's own (temporary and partial files).
std::string cache_random_suffix();

}  // namespace stoke::detail
