#pragma once
// Where the tools find Fashion-MNIST when no --data is given.

namespace stoke::tools {

// The folder Debian's dataset-fashion-mnist installs its IDX files into (setup.sh installs it):
// stoke-train's, stoke-bench's and stoke-mkdata's default data, and the tests' data.
inline constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace stoke::tools
