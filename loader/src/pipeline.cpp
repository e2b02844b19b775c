#include "stoke/pipeline.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
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

Pipeline make_pipeline(int height, int width, int channels, const std::vector<StepSpec>& steps) {
  Pipeline p(height, width, channels);
  for (const StepSpec& step : steps) {
    // (Named references, not a structured binding: the lambdas below capture them.)
    const std::string& name = step.name;
    const std::vector<double>& v = step.args;
    const auto count = [&](std::size_t lo, std::size_t hi, const char* names) {
      if (v.size() < lo || v.size() > hi)
        throw ConfigError("pipeline step " + name + " takes " + names + ", got " +
                          std::to_string(v.size()) + " number(s)");
    };
    const auto whole = [&](std::size_t i) {
      if (!(std::abs(v[i]) <= kMaxSide) || v[i] != std::floor(v[i]))
        throw ConfigError("pipeline step " + name + ": number " + std::to_string(i + 1) +
                          " must be a whole number of pixels, got " + fmt(static_cast<float>(v[i])));
      return static_cast<int>(v[i]);
    };
    const auto f = [&](std::size_t i, float fallback) {
      return i < v.size() ? static_cast<float>(v[i]) : fallback;
    };
    if (name == "resize_shorter") {
      count(1, 1, "(size)");
      p.resize_shorter(whole(0));
    } else if (name == "resize") {
      count(2, 2, "(height, width)");
      p.resize(whole(0), whole(1));
    } else if (name == "center_crop") {
      count(2, 2, "(height, width)");
      p.center_crop(whole(0), whole(1));
    } else if (name == "random_resized_crop") {
      count(2, 6, "(height, width[, scale_min, scale_max, ratio_min, ratio_max])");
      p.random_resized_crop(whole(0), whole(1), f(2, 0.08f), f(3, 1.0f), f(4, 3.f / 4.f),
                            f(5, 4.f / 3.f));
    } else if (name == "box_crop") {
      count(2, 7, "(height, width[, min_visible, scale_min, scale_max, ratio_min, ratio_max])");
      p.box_crop(whole(0), whole(1), f(2, 0.5f), f(3, 0.1f), f(4, 1.0f), f(5, 0.5f), f(6, 2.0f));
    } else if (name == "horizontal_flip") {
      count(0, 1, "([probability])");
      p.horizontal_flip(f(0, 0.5f));
    } else if (name == "vertical_flip") {
      count(0, 1, "([probability])");
      p.vertical_flip(f(0, 0.5f));
    } else if (name == "pad_random_crop") {
      count(3, 3, "(pad, height, width)");
      p.pad_random_crop(whole(0), whole(1), whole(2));
    } else if (name == "color_jitter") {
      count(2, 2, "(brightness, contrast)");
      p.color_jitter(f(0, 0), f(1, 0));
    } else if (name == "scale_jitter") {
      count(2, 3, "(min_side, max_side[, longer_side])");
      p.scale_jitter(whole(0), whole(1), v.size() > 2 && v[2] != 0);
    } else {
      throw ConfigError(
          "pipeline step '" + name +
          "' is not one of resize_shorter, resize, center_crop, random_resized_crop, box_crop, "
          "horizontal_flip, vertical_flip, pad_random_crop, color_jitter, scale_jitter");
    }
  }
  return p;
}

std::vector<StepSpec> parse_steps(std::string_view text) {
  std::vector<StepSpec> steps;
  std::istringstream all{std::string(text)};
  std::string part;
  while (std::getline(all, part, '|')) {
    std::istringstream words(part);
    StepSpec s;
    if (!(words >> s.name)) continue;  // an empty step, as in "a | | b" or a trailing '|'
    for (std::string w; words >> w;) {
      char* end = nullptr;
      const double v = std::strtod(w.c_str(), &end);
      if (end == w.c_str() || *end != '\0')
        throw ConfigError("pipeline step " + s.name + ": '" + w + "' is not a number");
      s.args.push_back(v);
    }
    steps.push_back(std::move(s));
  }
  if (steps.empty()) throw ConfigError("pipeline: no steps in '" + std::string(text) + "'");
  return steps;
}

}  // namespace stoke
