// stoke-worker reporting another release's version in its handshake: the loader must refuse it.

#include <string>

#include "ipc/arena_layout.hpp"
#include "worker/worker_process.hpp"

int main(int argc, char** argv) {
  const std::string tag = "0.0.0-other/layout" + std::to_string(stoke::detail::kLayoutVersion);
  return stoke::detail::run_worker_process(argc, argv, {.files = nullptr, .version_tag = tag});
}
