// Runs one epoch of Fashion-MNIST's test split with two workers through an installed stoke and
// prints the executables of its worker processes, so the test can check where they came from.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <stoke/loader.hpp>
#include <string>

namespace {

std::set<std::string> child_executables() {
  std::set<std::string> out;
  const std::string self = std::to_string(::getpid());
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream children(task.path() / "children");
    std::string pid;
    while (children >> pid) {
      std::error_code ec;
      const auto exe = std::filesystem::read_symlink("/proc/" + pid + "/exe", ec);
      if (!ec) out.insert(exe.string());
    }
  }
  return out;
}

}  // namespace

int main() {
  stoke::Options options;
  options.data = "/usr/share/datasets/fashion-mnist";  // Debian's dataset-fashion-mnist
  options.split = stoke::Split::kTest;
  options.batch = 100;
  options.workers = 2;
  stoke::Loader loader(options);
  for (const auto& exe : child_executables()) std::printf("worker-exe %s\n", exe.c_str());
  long batches = 0, samples = 0;
  while (auto batch = loader.next()) {
    ++batches;
    samples += batch->size();
  }
  std::printf("batches %ld samples %ld version %s\n", batches, samples, stoke::version());
  return batches == 100 && samples == 10000 ? 0 : 1;
}
