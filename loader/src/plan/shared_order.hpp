#pragma once
// An epoch's sample order (4 bytes a sample: plan/epoch_plan.hpp's array order) kept once per
// machine instead of once per rank. Every rank computes the order itself, as before, into memory
// of its own; it then looks for the machine's copy, orders/<name>.stoke-order under the cache
// folder (data/cache_folder.hpp's rules), and when that file holds exactly the entries it
// computed it maps the file and gives its own memory back. When no file of that name is there,
// it writes one (a temporary file, then a rename that does not replace: of ranks that write at
// once, one file stands and the others map it). A file that is not byte for byte what this
// process computed (planted, stale, damaged) is replaced and never read: sharing saves memory,
// it never decides an order. Only on local file systems (local_file_system()).
//
// File format (native byte order): a 64-byte OrderFileHeader, then `count` uint32 entries.
//
// Thread-safety: an OrderBuffer is one thread's (EpochPlan's batch() caller); the functions of
// the file system are safe from any thread and process.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace stoke::detail {

struct OrderFileHeader {
  char magic[8];               // "STOKEORD"
  std::uint32_t version;       // kOrderFileVersion
  std::uint32_t header_bytes;  // sizeof(OrderFileHeader)
  std::uint64_t count;         // entries
  std::uint8_t reserved[40];   // zero
};
static_assert(sizeof(OrderFileHeader) == 64);

inline constexpr std::uint32_t kOrderFileVersion = 1;
inline constexpr const char* kOrderFileSuffix = ".stoke-order";

// Whether `path` is on a file system of this machine's own (ext4, XFS, Btrfs, F2FS, ZFS, tmpfs,
// overlayfs). On a network file system (NFS, SMB, Lustre, a FUSE mount) another host may
// delete a file under a process's mapping of it, and the process faults when it next reads a
// page: orders are not shared there.
bool local_file_system(const std::string& path);

// The orders folder under the cache root (made and checked), or "" when there is no cache root,
// the folder cannot be used or is not on a local file system: orders are then each process's
// own.
std::string order_folder(const std::string& cache_root);

// `count` uint32 entries: memory of this process's own (anonymous pages, given back to the
// system whole when the buffer is dropped or shared), or the machine's mapped file.
class OrderBuffer {
 public:
  OrderBuffer() = default;
  // Zeroed memory of this process's own. Throws std::bad_alloc when it cannot be had.
  explicit OrderBuffer(std::size_t count);
  ~OrderBuffer();
  OrderBuffer(OrderBuffer&& other) noexcept;
  OrderBuffer& operator=(OrderBuffer&& other) noexcept;
  OrderBuffer(const OrderBuffer&) = delete;
  OrderBuffer& operator=(const OrderBuffer&) = delete;

  std::span<const std::uint32_t> entries() const { return {entries_, count_}; }
  // REQUIRES: !shared().
  std::span<std::uint32_t> writable() { return {const_cast<std::uint32_t*>(entries_), count_}; }
  // Whether the entries are the machine's file's (read-only) rather than this process's memory.
  bool shared() const { return shared_; }

  // Trades this process's entries for the machine's file `folder`/`name`.stoke-order holding
  // the same ones, writing it when it is missing or differs (a differing file is removed; one
  // of another user's too, where a group-shared folder lets it). False, and the entries stay
  // this process's, when it cannot (a full disk, a read-only folder, a file system that cannot
  // rename without replacing, another rank's differing file put there meanwhile).
  // REQUIRES: !shared(); `folder` from order_folder().
  bool share(const std::string& folder, const std::string& name);

 private:
  void release();
  bool adopt(int fd);  // maps `fd` (closing it) when it holds these entries; frees the own copy

  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  const std::uint32_t* entries_ = nullptr;
  std::size_t count_ = 0;
  bool shared_ = false;
};

// Removes the machine's file `folder`/`name`.stoke-order when it is this user's (an order no
// rank needs any longer; processes that map it keep their mapping).
void remove_order_file(const std::string& folder, const std::string& name);

}  // namespace stoke::detail
