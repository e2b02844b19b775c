#pragma once
// Reading MNIST-style IDX files (plain or gzip). Thread-safety: free functions, reentrant.

#include <cstdint>
#include <string>
#include <vector>

#include "stoke/options.hpp"

namespace stoke {

struct IdxImages {
  std::int64_t count = 0;
  int rows = 0;
  int cols = 0;
  std::vector<std::uint8_t> pixels;  // count x rows x cols
  std::vector<std::uint8_t> labels;  // count
};

// Reads <dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]. Throws Error naming the file
// and what is wrong with it.
IdxImages read_idx(const std::string& dir, Split split);

// True when `dir` holds MNIST-style IDX files (train-* or t10k-*, plain or .gz).
bool is_idx_folder(const std::string& dir);

}  // namespace stoke
