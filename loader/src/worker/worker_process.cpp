#include "worker/worker_process.hpp"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <opencv2/core/utility.hpp>
#include <string>

#include "data/index_format.hpp"
#include "ipc/arena_layout.hpp"
#include "worker/chunk_runner.hpp"
#include "worker/worker_exit_codes.hpp"
#include "worker/worker_locate.hpp"

namespace stoke::detail {
namespace {

constexpr int kArenaFd = 3;
constexpr int kDoneFd = 4;
// Dataset d's index is fd kIndexFd + 2d; its IDX pixels (MappedIndex::pixels_fd()) fd
// kPixelsFd + 2d, else its index again.
constexpr int kIndexFd = 5;
constexpr int kPixelsFd = 6;

// Maps a dataset's index file (the file the training process checked) read-only, and an IDX
// dataset's pixels: the pixels and then the labels, in their own file, the first sample's pixels
// at MappedIndex::pixels_offset(). False when the record does not fit its files.
bool map_dataset(const ArenaDataset& r, int index_fd, int pixels_fd, ArenaView::Mapping& out) {
  struct stat ist {};
  if (::fstat(index_fd, &ist) != 0 || r.index_offset > static_cast<std::uint64_t>(ist.st_size) ||
      r.index_size > static_cast<std::uint64_t>(ist.st_size) - r.index_offset)
    return false;
  void* index_base =
      ::mmap(nullptr, static_cast<std::size_t>(ist.st_size), PROT_READ, MAP_SHARED, index_fd, 0);
  if (index_base == MAP_FAILED) return false;
  ::madvise(index_base, static_cast<std::size_t>(ist.st_size), MADV_RANDOM);  // samples are read so
  out.index = static_cast<const std::uint8_t*>(index_base);
  if (r.kind != DatasetKind::kRaw) return true;
  // (The record's numbers, checked by the training process, are multiplied without wrapping.)
  std::uint64_t bytes = 0, total = 0;
  const auto n = static_cast<std::uint64_t>(r.sample_count);
  struct stat pst {};
  if (r.sample_count < 0 || r.raw_height < 0 || r.raw_width < 0 || r.raw_channels < 0 ||
      __builtin_mul_overflow(n, static_cast<std::uint64_t>(r.raw_height), &bytes) ||
      __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(r.raw_width), &bytes) ||
      __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(r.raw_channels), &bytes) ||
      __builtin_add_overflow(bytes, n + MappedIndex::pixels_offset(), &total) ||
      ::fstat(pixels_fd, &pst) != 0 || static_cast<std::uint64_t>(pst.st_size) < total)
    return false;
  void* p =
      ::mmap(nullptr, static_cast<std::size_t>(pst.st_size), PROT_READ, MAP_SHARED, pixels_fd, 0);
  if (p == MAP_FAILED) return false;
  out.pixels = static_cast<const std::uint8_t*>(p) + MappedIndex::pixels_offset();
  return true;
}

void notify_parent() {
  const std::uint64_t one = 1;
  while (::write(kDoneFd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

// `files`: the reader a test planted, or nullptr (the runner's own, under the arena's policy).
int serve(WorkerRecord& record, const ArenaView& arena, pid_t parent, FileReader* files) {
  ChunkRunner runner(arena, files);
  for (;;) {
    if (!record.tasks_posted.wait_for(std::chrono::milliseconds(250))) {
      if (::getppid() != parent) return kExitParentGone;
      continue;  // a timeout or a signal: wait again
    }
    Task task;
    if (!record.tasks.pop(task)) continue;
    if (task.kind == Task::kStop) return 0;
    const Completion done = runner.run(task, &record.current_sample);
    // The training process keeps at most kRingSize tasks outstanding and drains completions
    // whenever it wakes, so this rarely loops; if it does, it ends with the parent.
    for (int tries = 0; !record.done.push(done); ++tries) {
      if (tries % 1000 == 999 && ::getppid() != parent) return kExitParentGone;
      ::usleep(tries < 100 ? 100 : 1000);
    }
    notify_parent();
  }
}

}  // namespace

int run_worker_process(int argc, char** argv, const WorkerEnvironment& env) {
  const std::string tag = env.version_tag.empty() ? worker_version_tag() : env.version_tag;
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("stoke-worker %s\n", tag.c_str());
    return 0;
  }
  if (argc != 5 || std::strcmp(argv[1], "--worker") != 0 || std::strcmp(argv[3], "--parent") != 0) {
    std::fprintf(stderr,
                 "stoke-worker is started by the stoke loader, not by hand.\n"
                 "usage: stoke-worker --version\n");
    return kExitUsage;
  }
  std::uint32_t index = 0;
  pid_t parent = 0;
  try {
    index = static_cast<std::uint32_t>(std::stoul(argv[2]));
    parent = static_cast<pid_t>(std::stol(argv[4]));
  } catch (const std::exception&) {
    std::fprintf(stderr, "stoke-worker: --worker and --parent take numbers\n");
    return kExitUsage;
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return kExitParentGone;  // the parent died before the line above

  struct stat st {};
  if (::fstat(kArenaFd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(ArenaHeader)))
    return kExitBadArena;
  void* base = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ | PROT_WRITE,
                      MAP_SHARED, kArenaFd, 0);
  if (base == MAP_FAILED) return kExitBadArena;
  const ArenaHeader& header = *static_cast<const ArenaHeader*>(base);
  if (header.magic != kArenaMagic || header.layout_version != kLayoutVersion ||
      header.header_size != sizeof(ArenaHeader) || index >= header.worker_capacity)
    return kExitVersionMismatch;
  if (header.dataset_count < 1 || header.dataset_count > kMaxDatasets) return kExitBadArena;
  std::array<ArenaView::Mapping, kMaxDatasets> mappings{};
  for (std::uint32_t d = 0; d < header.dataset_count; ++d) {
    if (!map_dataset(header.datasets[d], kIndexFd + 2 * static_cast<int>(d),
                     kPixelsFd + 2 * static_cast<int>(d), mappings[d]))
      return kExitBadArena;
  }
  ArenaView arena(static_cast<std::uint8_t*>(base),
                  std::span<const ArenaView::Mapping>(mappings.data(), header.dataset_count));
  WorkerRecord& record = arena.worker(index);
  record.pid = ::getpid();
  std::snprintf(record.version, sizeof record.version, "%s", tag.c_str());
  const bool match = std::strncmp(header.version, tag.c_str(), kVersionChars) == 0;
  record.state.store(match ? WorkerRecord::kReady : WorkerRecord::kVersionMismatch,
                     std::memory_order_release);
  notify_parent();
  if (!match) return kExitVersionMismatch;

  cv::setNumThreads(0);  // one worker = one core; parallelism comes from the pool
  // OpenCV's own decoders allocate by their header; hold them to the loader's limit too.
  ::setenv("OPENCV_IO_MAX_IMAGE_PIXELS", std::to_string(header.max_pixels).c_str(), 1);
  return serve(record, arena, parent, env.files);
}

}  // namespace stoke::detail
