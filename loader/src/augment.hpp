#pragma once
// Runs a pipeline's steps on one decoded image and writes the result into its batch slot.
// Thread-safety: an Augmenter owns scratch buffers and is used by one thread at a time.
//
// Crops and flips are not applied to pixels as they come: the image is a Window (a region of the
// source that may extend past its edges, where pixels read as 0, possibly mirrored). Only resizes
// materialize pixels, and the final write applies crop, padding, flip, channel order and the
// color lookup table in one pass, straight into the slot.

#include <cstdint>
#include <exception>
#include <opencv2/core/mat.hpp>
#include <vector>

#include "sample_rng.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {

struct ImageRef {
  const std::uint8_t* data = nullptr;
  int height = 0;
  int width = 0;
  int channels = 0;
  std::size_t stride = 0;  // bytes per row
  bool bgr = false;        // channel order of 3-channel data
};

// Thrown when a step would need an absurd intermediate image; the caller reports kTooLarge.
struct ImageTooLarge : std::exception {
  const char* what() const noexcept override { return "intermediate image too large"; }
};
inline constexpr double kMaxIntermediateSide = 65536;
inline constexpr std::int64_t kMaxIntermediatePixels = std::int64_t{1} << 26;

class Augmenter {
 public:
  // REQUIRES: out_channels is 1 or 3; dst holds out_height * out_width * out_channels bytes.
  void run(const Step* steps, int step_count, const ImageRef& source, SampleRng& rng,
           std::uint8_t* dst, int out_height, int out_width, int out_channels);

 private:
  struct Window {
    ImageRef src;
    int x0 = 0, y0 = 0, width = 0, height = 0;  // in source pixels; may exceed the source
    bool flip = false;
  };

  void crop(Window& w, int x, int y, int width, int height) const;
  void random_resized_crop(Window& w, const Step& s, SampleRng& rng);
  void resize_to(Window& w, int height, int width);
  void color_jitter(const Window& w, const Step& s, SampleRng& rng);
  cv::Mat materialize(const Window& w);
  void write_output(const Window& w, std::uint8_t* dst, int out_channels);
  bool write_small_gray(const Window& w, std::uint8_t* dst);

  bool lut_active_ = false;
  std::uint8_t lut_[256] = {};
  std::vector<std::uint8_t> scratch_[3];
  std::vector<std::uint8_t> padded_;  // write_small_gray's zero-margined copy of the source
  int padded_width_ = 0;
  int next_scratch_ = 0;
};

}  // namespace stoke::detail
