// stoke-worker: runs a loader's tasks in a separate process (worker_process.hpp).

#include "worker/worker_process.hpp"

int main(int argc, char** argv) {
  return stoke::detail::run_worker_process(argc, argv);
}
