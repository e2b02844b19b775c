#pragma once
// The relayout cache: re-laid-out copies of a local image folder's JPEGs (docs/USAGE.md, "The
// relayout cache"), made by the workers the first time they read a file, so that a user who
// never runs stoke-pack gets its decode speed from the second epoch on. A copy is the file
// through relayout_jpeg (decode/jpeg_relayout.hpp): the same DCT coefficients, so the same
// pixels, as one baseline scan with restart markers that crops splice from.
//
// Which files: progressive JPEGs by default (a copy costs about 3.4 ms of a worker once and
// saves about 1.1 ms each epoch after: it pays in the fourth epoch), or every JPEG (a baseline
// file's copy saves about 0.07 ms an epoch: it pays after some 30 epochs), or none
// (docs/BENCHMARKS.md, "The relayout cache").
//
// Layout of `root`/relayout (a cache folder: data/cache_folder.hpp's rules): <key>.jpg, the copy
// of one version of one file (key: 128 bits of hash of the file's path, device, inode, size,
// modification and change times, so an edited file gets a new copy and its old one ages out; a
// file that changes between the look-up and the read is not copied), written
// through a temporary file and a rename; stoke-relayout-bytes, the copies' bytes as counted by
// the writers; stoke-relayout.lock, flock'ed by whoever counts a copy in or evicts. A copy's
// modification time is its last use. When a new copy takes the count past the limit, the folder
// is listed and the least recently used copies are removed until it is under 90% of it (so a
// listing comes once per tenth of the limit written, not once per copy).
//
// A copy is read only when it is a regular file of a trusted owner with one link, opened
// without following links, that starts and ends as a JPEG; anything else at its name is not a
// copy (the source is read, and a copy renamed over it). A folder that cannot be written makes
// the cache only useless, never an error: the copy is not kept, and no more are tried.
//
// Thread-safety: one RelayoutCache per thread (a worker's); any number of them, in any
// processes, may share a folder.

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "stoke/options.hpp"

namespace stoke::detail {

// The cache's folder under the cache root `root`: root/relayout.
std::string relayout_cache_folder(const std::string& root);

class RelayoutCache {
 public:
  // `folder`: relayout_cache_folder(root), made and checked by the training process
  // (prepare_cache_folder). Files whose frame claims more than `max_pixels` are not copied (their
  // decode refuses them).
  RelayoutCache(std::string folder, std::uint64_t limit, stoke::Relayout which,
                std::uint64_t max_pixels);

  // The copy of the local file `source` into `into`, when the cache holds one: true (and its
  // use is recorded). False when it holds none: then offer() may make one from the source's
  // bytes. A copy cut short is removed. Never throws for what it finds in the folder.
  bool read(const std::string& source, std::vector<std::uint8_t>& into);

  // After read() returned false for a file whose bytes are `bytes`: when they are a JPEG this
  // cache copies, and the file is still the version read() named, re-lays them out, keeps the
  // copy (room made under the limit) and swaps it into `bytes`: true. False, `bytes` unchanged,
  // for a file it does not copy, one that changed, or one relayout_jpeg keeps as it is
  // (damaged, not 8-bit: not tried again by this cache).
  bool offer(std::vector<std::uint8_t>& bytes);

  // The path of the copy of `source` as it is now ("" when it cannot be stat'ed); `version`,
  // when given, gets what names it.
  std::string copy_path(const std::string& source, std::string* version = nullptr) const;

  // Counted since construction: copies read, copies made, copies removed to stay under the limit.
  std::int64_t hits() const { return hits_; }
  std::int64_t stored() const { return stored_; }
  std::int64_t evicted() const { return evicted_; }

  // The bytes of the copies now in `folder` (listed).
  static std::uint64_t folder_bytes(const std::string& folder);

 private:
  static constexpr std::size_t kMaxRefused = 4096;
  // Counts `bytes` of a new copy at `path` in, evicting under the folder's lock as the header
  // says; false when the lock could not be had (the copy stays, uncounted until a listing).
  bool count_in(const std::string& path, std::uint64_t bytes);

  std::string folder_;
  std::uint64_t limit_;
  stoke::Relayout which_;
  std::uint64_t max_pixels_;
  std::string pending_;          // the copy's path for the file read() last missed ("": none)
  std::string pending_source_;   // that file
  std::string pending_version_;  // and what named its copy
  std::unordered_set<std::string> refused_;  // copies of files relayout_jpeg kept as they are
  bool broken_ = false;                      // a copy could not be written: no more tries
  std::int64_t hits_ = 0;
  std::int64_t stored_ = 0;
  std::int64_t evicted_ = 0;
};

}  // namespace stoke::detail
