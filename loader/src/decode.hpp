#pragma once
// Reading and decoding one image file. Thread-safety: an ImageDecoder owns its buffers and is
// used by one thread at a time.

#include <cstdint>
#include <opencv2/core/mat.hpp>
#include <string>
#include <vector>

#include "bad_input.hpp"

namespace stoke::detail {

class ImageDecoder {
 public:
  // Decodes `path` to 8-bit gray (channels == 1) or BGR (channels == 3) into `out`.
  // Returns BadInput::kNone on success; never throws for bad files.
  BadInput decode(const std::string& path, int channels, cv::Mat& out);

 private:
  BadInput read_file(const std::string& path);
  std::vector<std::uint8_t> file_;
};

}  // namespace stoke::detail
