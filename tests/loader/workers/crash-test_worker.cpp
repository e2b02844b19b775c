// stoke-worker with one planted fault: a file whose path contains "crash-me" kills it with
// SIGSEGV before it is read, as a decoder crash would. Every other file is read as usual.

#include <csignal>
#include <string>
#include <vector>

#include "worker/worker_process.hpp"

namespace {

class CrashingReader final : public stoke::detail::FileReader {
 public:
  stoke::detail::BadInput read(const std::string& path, const stoke::detail::ByteRange& range,
                               std::vector<std::uint8_t>& into) override {
    if (path.find("crash-me") != std::string::npos) {
      std::signal(SIGSEGV, SIG_DFL);  // past any sanitizer's handler: die as a crash does
      std::raise(SIGSEGV);
    }
    return real_.read(path, range, into);
  }

 private:
  stoke::detail::PosixFileReader real_;
};

}  // namespace

int main(int argc, char** argv) {
  CrashingReader files;
  return stoke::detail::run_worker_process(argc, argv, {.files = &files, .version_tag = ""});
}
