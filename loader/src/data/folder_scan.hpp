#pragma once
// Listing an image-folder tree's class folders, several at once: a listing mostly waits on the
// file system (a network one most of all), so the folders are walked by up to kScanThreads
// threads, each result in its own place, and the index is the one a single thread would make.
//
// The walking threads never call malloc: glibc would give each its own arena, whose freed
// memory it keeps (past the trim threshold that freeing the index's large arrays raised), and
// the process would hold about the size of the listing for good. They read directories with
// getdents64 into stack buffers and append what they find to anonymous mappings of their own.
//
// Thread-safety: scan_class_folders is reentrant.

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace stoke::detail {

inline constexpr unsigned kScanThreads = 16;

// One class folder's images, as recursive_directory_iterator (skipping folders it may not
// read, not following links to folders) and has_image_extension find them.
struct ClassListing {
  // Paths relative to the class folder, in std::filesystem::path order (component by
  // component), each with whether the file is empty (size 0).
  std::vector<std::string> files;
  std::vector<bool> empty;
  // Why the folder could not be walked ("" when it could): the first error met, naming the
  // folder or link at fault.
  std::string error;
};

// The listings of `folders`, in their order. `is_image` decides by a file name.
std::vector<ClassListing> scan_class_folders(const std::vector<std::string>& folders,
                                             bool (*is_image)(const char* name));

// stat(2) of each path (links followed), by up to kScanThreads threads: each result's `error`
// is 0 or the errno.
struct PathStat {
  struct stat st {};
  int error = 0;
};
std::vector<PathStat> stat_paths(const std::vector<std::string>& paths);

// Whether each folder holds a folder (links not followed), read by the threads: 1 yes, 0 no, -1
// when it cannot be read.
std::vector<int> has_subfolders(const std::vector<std::string>& folders);

// Calls work(i) for every i in [0, n), on up to kScanThreads threads (this one among them).
// REQUIRES: work allocates nothing (see the header's first paragraph).
void for_each_on_threads(std::size_t n, const std::function<void(std::size_t)>& work);

}  // namespace stoke::detail
