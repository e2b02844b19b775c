#include "stoke/pipeline.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "stoke/error.hpp"

namespace stoke {
namespace {

constexpr int kMaxSide = 16384;

void check_side(const char* step, const char* what, int v) {
  if (v <= 0 || v > kMaxSide)
    throw ConfigError(std::string(step) + ": " + what + " must be in 1.." +
                      std::to_string(kMaxSide) + ", got " + std::to_string(v));
}

std::string fmt(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

}  // namespace

Pipeline::Pipeline(int output_height, int output_width, int channels)
    : height_(output_height), width_(output_width), channels_(channels) {
  check_side("output", "height", output_height);
  check_side("output", "width", output_width);
  if (channels != 1 && channels != 3)
    throw ConfigError("output: channels must be 1 (gray) or 3 (RGB), got " +
                      std::to_string(channels));
}

Pipeline& Pipeline::add(const Step& step) {
  steps_.push_back(step);
  return *this;
}

Pipeline& Pipeline::resize_shorter(int size) {
  check_side("resize_shorter", "size", size);
  return add({.kind = StepKind::kResizeShorter, .size = size});
}

Pipeline& Pipeline::resize(int height, int width) {
  check_side("resize", "height", height);
  check_side("resize", "width", width);
  return add({.kind = StepKind::kResize, .height = height, .width = width});
}

Pipeline& Pipeline::center_crop(int height, int width) {
  check_side("center_crop", "height", height);
  check_side("center_crop", "width", width);
  return add({.kind = StepKind::kCenterCrop, .height = height, .width = width});
}

Pipeline& Pipeline::random_resized_crop(int height, int width, float scale_min, float scale_max,
                                        float ratio_min, float ratio_max) {
  check_side("random_resized_crop", "height", height);
  check_side("random_resized_crop", "width", width);
  if (!(scale_min > 0 && scale_min <= scale_max && scale_max <= 1))
    throw ConfigError("random_resized_crop: scale must satisfy 0 < min <= max <= 1, got [" +
                      fmt(scale_min) + ", " + fmt(scale_max) + "]");
  if (!(ratio_min > 0 && ratio_min <= ratio_max))
    throw ConfigError("random_resized_crop: ratio must satisfy 0 < min <= max, got [" +
                      fmt(ratio_min) + ", " + fmt(ratio_max) + "]");
  return add({.kind = StepKind::kRandomResizedCrop,
              .height = height,
              .width = width,
              .scale_min = scale_min,
              .scale_max = scale_max,
              .ratio_min = ratio_min,
              .ratio_max = ratio_max});
}

Pipeline& Pipeline::horizontal_flip(float probability) {
  if (!(probability >= 0 && probability <= 1))
    throw ConfigError("horizontal_flip: probability must be in [0, 1], got " + fmt(probability));
  return add({.kind = StepKind::kHorizontalFlip, .probability = probability});
}

Pipeline& Pipeline::pad_random_crop(int pad, int height, int width) {
  if (pad < 0 || pad > kMaxSide)
    throw ConfigError("pad_random_crop: pad must be in 0.." + std::to_string(kMaxSide) + ", got " +
                      std::to_string(pad));
  check_side("pad_random_crop", "height", height);
  check_side("pad_random_crop", "width", width);
  return add({.kind = StepKind::kPadRandomCrop, .height = height, .width = width, .pad = pad});
}

Pipeline& Pipeline::color_jitter(float brightness, float contrast) {
  if (!(brightness >= 0 && brightness <= 1) || !(contrast >= 0 && contrast <= 1))
    throw ConfigError("color_jitter: brightness and contrast must be in [0, 1], got " +
                      fmt(brightness) + " and " + fmt(contrast));
  return add({.kind = StepKind::kColorJitter, .brightness = brightness, .contrast = contrast});
}

Pipeline& Pipeline::vertical_flip(float probability) {
  if (!(probability >= 0 && probability <= 1))
    throw ConfigError("vertical_flip: probability must be in [0, 1], got " + fmt(probability));
  return add({.kind = StepKind::kVerticalFlip, .probability = probability});
}

Pipeline& Pipeline::scale_jitter(int min_side, int max_side, bool longer_side) {
  check_side("scale_jitter", "min_side", min_side);
  check_side("scale_jitter", "max_side", max_side);
  if (min_side > max_side)
    throw ConfigError("scale_jitter: min_side " + std::to_string(min_side) +
                      " is above max_side " + std::to_string(max_side));
  Step s{.kind = StepKind::kScaleJitter, .size = min_side};
  s.size_max = max_side;
  s.longer_side = longer_side;
  return add(s);
}

Pipeline& Pipeline::box_crop(int height, int width, float min_visible, float scale_min,
                             float scale_max, float ratio_min, float ratio_max) {
  if (!(min_visible >= 0 && min_visible <= 1))
    throw ConfigError("box_crop: min_visible must be a fraction in [0, 1], got " +
                      fmt(min_visible));
  random_resized_crop(height, width, scale_min, scale_max, ratio_min, ratio_max);
  steps_.back().kind = StepKind::kBoxCrop;
  steps_.back().min_visible = min_visible;
  return *this;
}

Pipeline Pipeline::training(int height, int width, int channels, bool small_images) {
  Pipeline p(height, width, channels);
  if (small_images) {
    // The classic CIFAR/MNIST recipe: pad by 1/7 of the side (4 px at 28), random crop, flip.
    p.pad_random_crop(std::max(1, std::min(height, width) / 7), height, width);
  } else {
    p.random_resized_crop(height, width);
  }
  p.horizontal_flip(0.5f);
  return p;
}

Pipeline Pipeline::evaluation(int height, int width, int channels, bool small_images) {
  Pipeline p(height, width, channels);
  const int side = std::min(height, width);
  p.resize_shorter(small_images ? side : static_cast<int>(std::lround(side / 0.875)));
  p.center_crop(height, width);
  return p;
}

void Pipeline::validate(int source_height, int source_width) const {
  int h = source_height, w = source_width;  // 0 = varies per sample
  for (const Step& s : steps_) {
    switch (s.kind) {
      case StepKind::kResizeShorter:
        if (h > 0 && w > 0) {
          const double scale = static_cast<double>(s.size) / std::min(h, w);
          const int nh = h <= w ? s.size : static_cast<int>(h * scale);
          const int nw = h <= w ? static_cast<int>(w * scale) : s.size;
          h = nh;
          w = nw;
        }
        break;
      case StepKind::kScaleJitter:
        h = w = 0;  // a size drawn per sample
        break;
      case StepKind::kResize:
      case StepKind::kCenterCrop:
      case StepKind::kRandomResizedCrop:
      case StepKind::kBoxCrop:
      case StepKind::kPadRandomCrop:
        h = s.height;
        w = s.width;
        break;
      case StepKind::kHorizontalFlip:
      case StepKind::kVerticalFlip:
      case StepKind::kColorJitter:
        break;
      default:
        throw ConfigError("pipeline: unknown step kind " +
                          std::to_string(static_cast<unsigned>(s.kind)));
    }
  }
  if (h == 0 || w == 0)
    throw ConfigError(
        "pipeline: images of varying size reach the output; end the pipeline with "
        "resize, center_crop, random_resized_crop or pad_random_crop to " +
        std::to_string(height_) + "x" + std::to_string(width_));
  if (h != height_ || w != width_)
    throw ConfigError("pipeline: the steps produce " + std::to_string(h) + "x" + std::to_string(w) +
                      " images but the output is " + std::to_string(height_) + "x" +
                      std::to_string(width_) + "; add a crop or resize to the output size");
}

std::string Pipeline::describe() const {
  std::ostringstream out;
  for (const Step& s : steps_) {
    switch (s.kind) {
      case StepKind::kResizeShorter:
        out << "resize_shorter " << s.size;
        break;
      case StepKind::kResize:
        out << "resize " << s.height << "x" << s.width;
        break;
      case StepKind::kCenterCrop:
        out << "center_crop " << s.height << "x" << s.width;
        break;
      case StepKind::kRandomResizedCrop:
        out << "random_resized_crop " << s.height << "x" << s.width << " scale ["
            << fmt(s.scale_min) << ", " << fmt(s.scale_max) << "] ratio [" << fmt(s.ratio_min)
            << ", " << fmt(s.ratio_max) << "]";
        break;
      case StepKind::kHorizontalFlip:
        out << "horizontal_flip p=" << fmt(s.probability);
        break;
      case StepKind::kPadRandomCrop:
        out << "pad_random_crop pad " << s.pad << " to " << s.height << "x" << s.width;
        break;
      case StepKind::kColorJitter:
        out << "color_jitter brightness " << fmt(s.brightness) << " contrast " << fmt(s.contrast);
        break;
      case StepKind::kVerticalFlip:
        out << "vertical_flip p=" << fmt(s.probability);
        break;
      case StepKind::kScaleJitter:
        out << "scale_jitter " << (s.longer_side ? "longer" : "shorter") << " side " << s.size
            << ".." << s.size_max;
        break;
      case StepKind::kBoxCrop:
        out << "box_crop " << s.height << "x" << s.width << " min_visible "
            << fmt(s.min_visible) << " scale [" << fmt(s.scale_min) << ", " << fmt(s.scale_max)
            << "] ratio [" << fmt(s.ratio_min) << ", " << fmt(s.ratio_max) << "]";
        break;
    }
    out << "\n";
  }
  out << "output " << height_ << "x" << width_ << "x" << channels_ << " uint8";
  return out.str();
}

}  // namespace stoke
