#pragma once
// Local copies of remote shards: a folder of whole shard files, bounded in bytes, shared by
// every loader (and every rank) on the machine that names it. It is a cache folder and follows
// data/cache_folder.hpp's rules (modes, owners, never a followed link); besides them:
// - A copy is used only when the ledger (stoke-copies) records it: under the folder's lock,
//   stoke writes an entry with the size and inode of each copy just before it renames the copy
//   into place. A file at a copy's name with another size or inode (planted, or renamed over
//   the copy) is not a copy; the shard is fetched again and its copy renamed over that file.
// - Eviction removes only copies the ledger records; any other file (a user's foo.tar, a copy of
//   an earlier version's) is left alone and not counted.
//
// Layout of `root`/shards: <key>.tar, a complete copy of one version of one shard (key: a hash
// of its URL, size and ETag, so a shard replaced on the server gets a new name);
// <key>.tar.part.<size>.<random> while a download of <size> bytes runs (renamed into place only
// when complete, so no reader ever sees half a shard); stoke-copies, the ledger; and
// stoke-folder.lock, flock'ed for a few milliseconds by whoever changes the folder (reserves
// room, renames a copy into place, evicts; a holder that keeps it past the remote deadline, or
// 10 s, is a stopped process and is not waited for: ShardCacheFolderError, and the shard is read
// from the server). A copy's modification time is its last use: eviction takes the least
// recently used copies first.
//
// The limit is the folder's: room for a download is reserved under the folder's lock, by making
// its partial file (which counts as its whole size from then on, for every loader sharing the
// folder) after the copies and the partials already there are counted, and copies evicted when
// needed. A downloader holds an flock on its partial file for as long as it runs, so a partial
// whose lock is free belongs to a dead process: it is swept (as is one untouched for an hour, or
// twice the remote deadline when that is longer: a stopped process's) by every reserve(),
// make_room() and used().
//
// Sharing: each loader keeps the folder under the limit and never evicts what it still needs,
// but it cannot know what another loader needs. A copy evicted under a loader's feet costs speed
// only: its workers read that shard's byte ranges from the server instead. A shard one loader is
// downloading is waited for by another (as long as its partial file grows), not fetched twice.
//
// Thread-safety: every method may be called from any thread; several ShardStores (in one
// process or many) may share a folder.

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "data/bad_input.hpp"
#include "data/cache_folder.hpp"
#include "data/file_reader.hpp"
#include "remote/remote.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

// The cache folder cannot be written (missing permissions, a full or read-only disk, a symbolic
// link where stoke keeps a file): the shard can still be read from the server.
struct ShardCacheFolderError : Error {
  using Error::Error;
};

// A worker's read of `range` of the copy at `path`, as FileReader::read, but refusing (kMissing
// or kUnreadable, so the server's bytes are read instead) a symbolic link, a file that is not
// regular or has other links, or one of an untrusted owner.
BadInput read_shard_copy(const std::string& path, const ByteRange& range,
                         std::vector<std::uint8_t>& into);

// The folder of shard copies under the cache root `root`: root/shards (ShardStore::folder()).
std::string shard_store_folder(const std::string& root);

// The local copy's path for a shard version, under `root`: root/shards/<key>.tar.
std::string shard_copy_path(const std::string& root, const std::string& url, std::uint64_t size,
                            const std::string& etag);

class ShardStore {
 public:
  // Room reserved in the folder for one download: its partial file, held open and locked. Dropped
  // (its partial file removed) unless fetch() renames it into place. Movable, not copyable.
  class Reservation {
   public:
    Reservation(Reservation&& o) noexcept;
    Reservation& operator=(Reservation&& o) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation();
    std::uint64_t size() const { return size_; }

   private:
    friend class ShardStore;
    Reservation(std::string copy, std::string partial, std::uint64_t size, int fd)
        : copy_(std::move(copy)), partial_(std::move(partial)), size_(size), fd_(fd) {}
    void drop();
    std::string copy_;     // the copy's path
    std::string partial_;  // the partial file's path
    std::uint64_t size_ = 0;
    int fd_ = -1;  // the partial file, flock'ed
  };

  // What reserve() found.
  enum class Room : std::uint8_t {
    kPresent,    // the copy is there
    kElsewhere,  // another download of this shard is under way (wait_for_other())
    kReserved,   // room is reserved: fetch() it
    kWait,       // no room now; downloads under way will end (as copies that may be evicted)
    kFull,       // no room, and none will come but by evicting a copy in `keep`
  };

  // REQUIRES: root is not empty. Creates root/shards when missing, checks it (throws ConfigError
  // when it cannot make it, or when another user owns it or others may write it).
  ShardStore(const std::string& root, std::uint64_t limit);

  const std::string& folder() const { return folder_; }
  std::uint64_t limit() const { return limit_; }

  // The path of the copy of this version of a shard in this folder (shard_copy_path()).
  std::string copy_path(const std::string& url, std::uint64_t size, const std::string& etag) const;

  // Whether the copy at `path` is there (a file stoke renamed into place, as the header says);
  // when it is, marks it used now (the LRU order).
  bool use(const std::string& path) const;

  // Whether something stoke did not record is at the copy's name `path` (a planted file or link,
  // or an earlier version's copy): it is never read, and a fetch renames the copy over it.
  bool foreign(const std::string& path) const;

  // Reserves room for the copy at `path` (`size` bytes): under the folder's lock, sweeps stale
  // partials, then evicts least recently used copies, never one in `keep`, until the folder's
  // copies and partials and `size` more fit in the limit, or past it when `past_limit`. A
  // partial of the same copy that grew within `stale_s` seconds is another download of it
  // (kElsewhere). `reserved` gets the room when kReserved; `evicted` the paths removed either
  // way. Throws ShardCacheFolderError when the folder cannot be written.
  Room reserve(const std::string& path, std::uint64_t size, const std::set<std::string>& keep,
               bool past_limit, double stale_s, std::vector<std::string>& evicted,
               std::optional<Reservation>& reserved) const;

  // Waits for another download of the copy at `path` to end: true when the copy is there, false
  // when that download ended without it or stopped growing for the policy's deadline. Throws
  // Error when the policy is cancelled.
  bool wait_for_other(const std::string& path, const RemotePolicy& policy) const;

  // Downloads `url` (as many bytes as reserved, as indexed) into the reservation and renames it
  // into place. Returns the bytes downloaded. A shard that the server now holds shorter is copied
  // as it is (its members past the end then read as corrupt). Throws ShardCacheFolderError when
  // the folder cannot be written, and Error when the server stays unreachable past the policy's
  // deadline, or refuses.
  std::uint64_t fetch(const std::string& url, Reservation reserved,
                      const RemotePolicy& policy) const;

  // reserve() (evicting any copy), waiting while other downloads hold the room, then fetch():
  // returns the bytes downloaded (0: the copy was there, or another loader fetched it).
  std::uint64_t fetch(const std::string& url, std::uint64_t size, const std::string& path,
                      const RemotePolicy& policy) const;

  // Evicts least recently used copies, never one in `keep`, until the folder's copies and
  // partials and `incoming` more bytes fit in the limit. Returns false when they cannot;
  // `evicted` gets the paths removed either way.
  bool make_room(std::uint64_t incoming, const std::set<std::string>& keep,
                 std::vector<std::string>& evicted) const;

  // The bytes of the copies now in the folder and of the downloads under way (their whole size).
  std::uint64_t used() const;

 private:
  struct Copy {
    std::uint64_t bytes = 0;
    std::uint64_t inode = 0;
  };
  using Ledger = std::map<std::string, Copy>;  // by key
  struct Found {
    std::string path;
    std::string key;
    std::uint64_t bytes = 0;
    std::int64_t used_ns = 0;  // modification time: last use
  };
  struct Scan {
    Ledger ledger;
    std::vector<Found> copies;             // recorded and there
    std::uint64_t partial_bytes = 0;       // downloads under way, their whole sizes
    std::set<std::string> fresh_partials;  // keys with a download that grew within stale_s
    bool changed = false;                  // the ledger lost entries
  };
  class FolderLock;

  // REQUIRES: the folder's lock. Sweeps stale partials, reads the ledger, drops its entries whose
  // files are gone, and counts what is there.
  Scan scan(double stale_s) const;
  // REQUIRES: the folder's lock. Evicts as make_room() says; returns whether `incoming` fits.
  bool evict(Scan& s, std::uint64_t incoming, const std::set<std::string>& keep,
             std::vector<std::string>& evicted) const;
  // REQUIRES: the folder's lock.
  void write_ledger(const Ledger& ledger) const;
  Ledger read_ledger() const;
  // An fd open on the file at `name` (in the folder) when it is the copy `ledger` records, else
  // -1.
  int open_recorded(const std::string& name, const Ledger& ledger) const;
  // Whether the file `st` describes is the copy `c` records.
  bool is_recorded(const struct stat& st, const Copy& c) const;
  bool trusted(const struct stat& st) const;

  std::string folder_;
  std::uint64_t limit_;
  bool shared_ = false;
  gid_t group_ = 0;  // the folder's group (trusted when shared_)
};

}  // namespace stoke::detail
