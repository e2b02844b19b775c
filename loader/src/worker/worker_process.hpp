#pragma once
// The whole life of a stoke-worker process, as a function: stoke-worker's main() calls it with
// the real environment; the test workers call it with a planted fault (a file reader that
// crashes, a version tag of another release). One code path, so what the tests prove is what
// ships.
//
//   stoke-worker --version
//   stoke-worker --worker I --parent PID     (started by the loader: arena on fd 3,
//                                             completion eventfd on fd 4, the dataset
//                                             index file on fd 5)
//
// It never links or calls CUDA. It dies with its parent (PR_SET_PDEATHSIG, re-checked after
// setting it), and exits when told to stop; its exit codes are in worker_exit_codes.hpp.

#include <string>

#include "data/file_reader.hpp"

namespace stoke::detail {

struct WorkerEnvironment {
  FileReader* files = nullptr;  // nullptr: local files and servers (ChunkRunner's own reader)
  std::string version_tag;      // "": worker_version_tag(), this build's
};

int run_worker_process(int argc, char** argv, const WorkerEnvironment& env = {});

}  // namespace stoke::detail
