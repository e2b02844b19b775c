// stoke-worker: runs a loader's tasks in a separate process.
//
//   stoke-worker --version
//   stoke-worker --worker I --parent PID     (started by the loader: arena on fd 3,
//                                             completion eventfd on fd 4)
//
// It never links or calls CUDA. It dies with its parent (PR_SET_PDEATHSIG, re-checked after
// setting it), and exits when told to stop.

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <opencv2/core/utility.hpp>
#include <string>

#include "ipc/arena_layout.hpp"
#include "worker/chunk_runner.hpp"
#include "worker/worker_exit_codes.hpp"
#include "worker/worker_locate.hpp"

namespace {

using namespace stoke::detail;

constexpr int kArenaFd = 3;
constexpr int kDoneFd = 4;

void notify_parent() {
  const std::uint64_t one = 1;
  while (::write(kDoneFd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

int serve(WorkerRecord& record, const ArenaView& arena, pid_t parent) {
  ChunkRunner runner(arena);
#ifdef STOKE_TEST_CRASH_MARKER
  // Only in the test build of the worker: a file whose path contains the marker kills it, as a
  // decoder crash would.
  runner.set_before_read([](std::string_view path) {
    if (path.find(STOKE_TEST_CRASH_MARKER) != std::string_view::npos) {
      std::signal(SIGSEGV, SIG_DFL);  // past any sanitizer's handler: die as a crash does
      std::raise(SIGSEGV);
    }
  });
#endif
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

int main(int argc, char** argv) {
#ifdef STOKE_TEST_WORKER_VERSION
  // Only for the test that proves a worker of another version is refused.
  const std::string tag = STOKE_TEST_WORKER_VERSION "/layout" + std::to_string(kLayoutVersion);
#else
  const std::string tag = worker_version_tag();
#endif
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
  const auto index = static_cast<std::uint32_t>(std::stoul(argv[2]));
  const auto parent = static_cast<pid_t>(std::stol(argv[4]));
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return kExitParentGone;  // the parent died before the line above

  struct stat st {};
  if (::fstat(kArenaFd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(ArenaHeader)))
    return kExitBadArena;
  void* base = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ | PROT_WRITE,
                      MAP_SHARED, kArenaFd, 0);
  if (base == MAP_FAILED) return kExitBadArena;
  ArenaView arena(static_cast<std::uint8_t*>(base));
  const ArenaHeader& header = arena.header();
  if (header.magic != kArenaMagic || header.layout_version != kLayoutVersion ||
      header.header_size != sizeof(ArenaHeader) || index >= header.worker_capacity)
    return kExitVersionMismatch;
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
  return serve(record, arena, parent);
}
