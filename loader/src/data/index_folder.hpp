#pragma once
// The machine's shared folder of dataset index files: <cache root>/datasets, a cache folder that
// follows data/cache_folder.hpp's rules. A file there is named by the key of its identity
// (data/index_identity.hpp), written once, through a temporary file renamed into place, by the
// one loader that holds its lock file (flock, released by the kernel when a writer dies), and
// read by every loader that finds it whole and current. A writer killed half-way leaves only a
// temporary file, which the next writer of that file removes (or a loader's start, after an
// hour); a file no loader has mapped for kIndexFileKeepDays goes when a loader starts, as the
// epoch orders unused for a day do (plan/shared_order.hpp).
//
// Thread-safety: functions are reentrant; an IndexFileLock belongs to one thread.

#include <chrono>
#include <memory>
#include <string>

#include "common/fd.hpp"
#include "data/dataset_index.hpp"
#include "data/index_format.hpp"

namespace stoke::detail {

// How long an unused shared index file is kept: one older than this (by its modification time,
// renewed each time a loader maps it) is removed when a loader starts (expire_index_files).
inline constexpr int kIndexFileKeepDays = 7;
// A temporary file or a lock file older than this is a dead writer's.
inline constexpr std::chrono::hours kIndexTemporaryKeep{1};

// The shared index folder under `root`, made and checked: "" when it cannot be used (the index
// is then private; a cache folder that is refused for remote shards is refused there).
std::string index_folder(const std::string& root);

// The shared index file's name for an identity: "<16 hex digits>.stoke-index".
std::string index_file_name(const std::string& identity);

// The pixels file of the shared index file at `index_path` (IDX data: "<key>.stoke-pixels"),
// written and read with it.
std::string pixels_file_path(const std::string& index_path);

// The shared index file at `path` when it is one of ours, of this identity, whole and current
// (its left-out empty files still empty, its shard options this loader's), mapped, with its
// pixels file for IDX data; marks them used.
// One that another member of a shared cache's group owns is read from a private copy: it could
// rewrite the file after it is checked.
std::unique_ptr<MappedIndex> open_shared_index(const std::string& path, const std::string& identity,
                                               const IndexOptions& options,
                                               MappedIndex::Origin origin);

// Removes what a killed writer of `name` left (its temporary files). REQUIRES: `name`'s
// IndexFileLock is held.
void remove_temporaries(const std::string& folder, const std::string& name);

// Removes the index files of `folder` (this user's) unused for kIndexFileKeepDays, temporary
// files older than kIndexTemporaryKeep, and the lock files of index files no longer there that
// no loader holds. Looks at the folder at most every 10 minutes in a process, and in the machine
// (the modification time of the stamp file "<folder>/.swept").
void expire_index_files(const std::string& folder);

// The lock of the index file `name` in `folder`: an flock on `name`.lock, held while the file is
// looked for again, built and written.
class IndexFileLock {
 public:
  enum class Attempt {
    kTaken,
    kBusy,         // another process holds it: wait()
    kUnavailable,  // the file system has no locks (an NFS home without lockd)
  };

  // Opens the lock file, made when missing.
  IndexFileLock(const std::string& folder, const std::string& name);
  // Releases the lock by name, not only by closing: a process forked meanwhile (without exec)
  // holds the same open file, and would hold the lock as long as it lives.
  ~IndexFileLock();
  IndexFileLock(const IndexFileLock&) = delete;
  IndexFileLock& operator=(const IndexFileLock&) = delete;

  // Whether the lock file is one stoke may use: a regular file of a trusted owner.
  bool usable() const { return usable_; }
  // Takes the lock when no other process holds it. REQUIRES: usable(). A lock taken on a file
  // that expire_index_files removed meanwhile is let go, and the file now at the name taken.
  Attempt try_take();
  // Waits for the lock another process holds: false when it cannot be had. REQUIRES: try_take()
  // said kBusy.
  bool wait();

 private:
  void open_lock_file();
  // Whether the file locked is the one at the lock's name still.
  bool held_file_is_named() const;

  std::string path_;
  UniqueFd fd_;
  bool usable_ = false;
  bool taken_ = false;
};

}  // namespace stoke::detail
