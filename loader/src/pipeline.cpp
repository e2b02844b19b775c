#include "stoke/pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <sstream>
#include <string_view>
#include <utility>

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

// Bounds that keep every factor's arithmetic finite and every blur kernel's cost sane.
constexpr float kMaxFactor = 100.f;
constexpr int kMaxKernel = 255;

constexpr int kMaxPolicyOps = 16;
constexpr int kMaxMagnitudeBins = 1024;
constexpr int kMaxSeverity = 10;  // AugMix's _PARAMETER_MAX: its ops have 10 bins
constexpr int kMaxAugMixChains = 16;
constexpr int kMaxAugMixDepth = 16;
constexpr int kAugMixDrawnDepth = 3;  // chain_depth -1: 1..3 ops per chain

int checked_bins(const char* step, int bins) {
  if (bins < 2 || bins > kMaxMagnitudeBins)
    throw ConfigError(std::string(step) + ": magnitude bins must be in 2.." +
                      std::to_string(kMaxMagnitudeBins) + ", got " + std::to_string(bins));
  return bins;
}

float checked_fill(const char* step, float fill) {
  if (!(fill >= 0 && fill <= 255))
    throw ConfigError(std::string(step) + ": fill must be a level in [0, 255], got " + fmt(fill));
  return fill;
}

const char* policy_name(AutoAugmentPolicy p) {
  switch (p) {
    case AutoAugmentPolicy::kCifar10:
      return "cifar10";
    case AutoAugmentPolicy::kSvhn:
      return "svhn";
    case AutoAugmentPolicy::kImageNet:
      break;
  }
  return "imagenet";
}

// The step's name in the text vocabulary (its random_* spelling for photometric steps).
const char* step_name(StepKind kind) {
  switch (kind) {
    case StepKind::kResizeShorter:
      return "resize_shorter";
    case StepKind::kResize:
      return "resize";
    case StepKind::kCenterCrop:
      return "center_crop";
    case StepKind::kRandomResizedCrop:
      return "random_resized_crop";
    case StepKind::kHorizontalFlip:
      return "horizontal_flip";
    case StepKind::kPadRandomCrop:
      return "pad_random_crop";
    case StepKind::kColorJitter:
      return "color_jitter";
    case StepKind::kVerticalFlip:
      return "vertical_flip";
    case StepKind::kScaleJitter:
      return "scale_jitter";
    case StepKind::kBoxCrop:
      return "box_crop";
    case StepKind::kGrayscale:
      return "grayscale";
    case StepKind::kGaussianBlur:
      return "gaussian_blur";
    case StepKind::kSolarize:
      return "solarize";
    case StepKind::kPosterize:
      return "posterize";
    case StepKind::kEqualize:
      return "equalize";
    case StepKind::kAutocontrast:
      return "autocontrast";
    case StepKind::kAdjustSharpness:
      return "adjust_sharpness";
    case StepKind::kInvert:
      return "invert";
    case StepKind::kTrivialAugmentWide:
      return "trivial_augment_wide";
    case StepKind::kRandAugment:
      return "rand_augment";
    case StepKind::kAutoAugment:
      return "auto_augment";
    case StepKind::kAugMix:
      return "augmix";
  }
  return "unknown";
}

constexpr const char* kAugMixText =
    "augmix [severity S] [width W] [depth D] [alpha A] [all_ops 0|1] [nearest|bilinear] [fill V]";

// A setting of "augmix" that is a whole number (severity, width, depth, all_ops).
int whole_setting(const StepSetting& s) {
  const double v = s.args[0];
  if (!(std::abs(v) <= kMaxSide) || v != std::floor(v))
    throw ConfigError("pipeline step augmix: " + s.name + " must be a whole number, got " +
                      fmt(static_cast<float>(v)));
  return static_cast<int>(v);
}

// The augmix step of its text's settings (kAugMixText), torchvision's defaults for those left
// out.
void add_augmix(Pipeline& p, const StepSpec& step) {
  if (!step.args.empty())
    throw ConfigError(std::string("pipeline step augmix takes its settings by name (") +
                      kAugMixText + "), got " + std::to_string(step.args.size()) +
                      " number(s) before them");
  int severity = 3, width = 3, depth = -1;
  float alpha = 1.f, fill = kNoFill;
  bool all_ops = true;
  Interpolation interpolation = Interpolation::kBilinear;
  constexpr std::string_view kSettings[] = {"severity", "width",   "depth",    "alpha",
                                            "all_ops",  "nearest", "bilinear", "fill"};
  std::vector<std::string_view> seen;
  for (const StepSetting& s : step.settings) {
    if (std::find(std::begin(kSettings), std::end(kSettings), s.name) == std::end(kSettings))
      throw ConfigError("pipeline step augmix: '" + s.name + "' is not one of its settings (" +
                        kAugMixText + ")");
    const bool mode = s.name == "nearest" || s.name == "bilinear";
    const std::string_view key = mode ? std::string_view("interpolation") : s.name;
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw ConfigError("pipeline step augmix: " + std::string(key) + " is given twice");
    seen.push_back(key);
    if (s.args.size() != (mode ? 0u : 1u))
      throw ConfigError("pipeline step augmix: " + s.name + " takes " +
                        (mode ? "no number" : "one number") + ", got " +
                        std::to_string(s.args.size()));
    if (mode) {
      interpolation = s.name == "nearest" ? Interpolation::kNearest : Interpolation::kBilinear;
    } else if (key == "severity") {
      severity = whole_setting(s);
    } else if (key == "width") {
      width = whole_setting(s);
    } else if (key == "depth") {
      depth = whole_setting(s);
    } else if (key == "alpha") {
      alpha = static_cast<float>(s.args[0]);
    } else if (key == "all_ops") {
      const int v = whole_setting(s);
      if (v != 0 && v != 1)
        throw ConfigError("pipeline step augmix: all_ops must be 0 or 1, got " + std::to_string(v));
      all_ops = v == 1;
    } else {  // fill; the sentinel for none is not a level a user can ask for
      fill = static_cast<float>(s.args[0]);
      if (fill == kNoFill)
        throw ConfigError("pipeline step augmix: fill must be a level in [0, 255], got -1");
    }
  }
  p.augmix(severity, width, depth, alpha, all_ops, interpolation, fill);
}

float checked_probability(const char* step, float p) {
  if (!(p >= 0 && p <= 1))
    throw ConfigError(std::string(step) + ": probability must be in [0, 1], got " + fmt(p));
  return p;
}

}  // namespace

std::string_view image_op_name(ImageOp op) {
  switch (op) {
    case ImageOp::kBrightness:
      return "brightness";
    case ImageOp::kContrast:
      return "contrast";
    case ImageOp::kSaturation:
      return "saturation";
    case ImageOp::kHue:
      return "hue";
    case ImageOp::kGrayscale:
      return "grayscale";
    case ImageOp::kSolarize:
      return "solarize";
    case ImageOp::kPosterize:
      return "posterize";
    case ImageOp::kEqualize:
      return "equalize";
    case ImageOp::kAutocontrast:
      return "autocontrast";
    case ImageOp::kSharpness:
      return "sharpness";
    case ImageOp::kInvert:
      return "invert";
    case ImageOp::kGaussianBlur:
      return "gaussian_blur";
    case ImageOp::kAffine:
      return "affine";
    case ImageOp::kAffineAtOrigin:
      return "affine_at_origin";
    case ImageOp::kRotate:
      return "rotate";
    case ImageOp::kShear:
      return "shear";
    case ImageOp::kAugMix:
      return "augmix";
    case ImageOp::kAugMixChain:
      return "augmix_chain";
    case ImageOp::kNone:
      break;
  }
  return "";
}

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

Pipeline& Pipeline::color_jitter(float brightness, float contrast, float saturation, float hue) {
  for (const auto& [what, v] :
       {std::pair{"brightness", brightness}, std::pair{"contrast", contrast},
        std::pair{"saturation", saturation}})
    if (!(v >= 0 && v <= kMaxFactor))
      throw ConfigError(std::string("color_jitter: ") + what + " must be in [0, " +
                        fmt(kMaxFactor) + "], got " + fmt(v));
  if (!(hue >= 0 && hue <= 0.5f))
    throw ConfigError("color_jitter: hue must be in [0, 0.5], got " + fmt(hue));
  Step s{.kind = StepKind::kColorJitter, .brightness = brightness, .contrast = contrast};
  s.saturation = saturation;
  s.hue = hue;
  return add(s);
}

Pipeline& Pipeline::grayscale(float probability) {
  return add(
      {.kind = StepKind::kGrayscale, .probability = checked_probability("grayscale", probability)});
}

Pipeline& Pipeline::gaussian_blur(int kernel_width, int kernel_height, float sigma_min,
                                  float sigma_max) {
  for (const int k : {kernel_width, kernel_height})
    if (k <= 0 || k % 2 == 0 || k > kMaxKernel)
      throw ConfigError("gaussian_blur: kernel sides must be odd, in 1.." +
                        std::to_string(kMaxKernel) + ", got " + std::to_string(kernel_width) + "x" +
                        std::to_string(kernel_height));
  if (!(sigma_min > 0 && sigma_min <= sigma_max && sigma_max <= kMaxFactor))
    throw ConfigError("gaussian_blur: sigma must satisfy 0 < min <= max <= " + fmt(kMaxFactor) +
                      ", got [" + fmt(sigma_min) + ", " + fmt(sigma_max) + "]");
  Step s{.kind = StepKind::kGaussianBlur};
  s.kernel_width = kernel_width;
  s.kernel_height = kernel_height;
  s.sigma_min = sigma_min;
  s.sigma_max = sigma_max;
  return add(s);
}

Pipeline& Pipeline::solarize(float threshold, float probability) {
  if (!(threshold >= 0 && threshold <= 255))
    throw ConfigError("solarize: threshold must be in [0, 255], got " + fmt(threshold));
  Step s{.kind = StepKind::kSolarize, .probability = checked_probability("solarize", probability)};
  s.threshold = threshold;
  return add(s);
}

Pipeline& Pipeline::posterize(int bits, float probability) {
  if (bits < 0 || bits > 8)
    throw ConfigError("posterize: bits must be in 0..8, got " + std::to_string(bits));
  Step s{.kind = StepKind::kPosterize,
         .probability = checked_probability("posterize", probability)};
  s.bits = bits;
  return add(s);
}

Pipeline& Pipeline::equalize(float probability) {
  return add(
      {.kind = StepKind::kEqualize, .probability = checked_probability("equalize", probability)});
}

Pipeline& Pipeline::autocontrast(float probability) {
  return add({.kind = StepKind::kAutocontrast,
              .probability = checked_probability("autocontrast", probability)});
}

Pipeline& Pipeline::adjust_sharpness(float factor, float probability) {
  if (!(factor >= 0 && factor <= kMaxFactor))
    throw ConfigError("adjust_sharpness: factor must be in [0, " + fmt(kMaxFactor) + "], got " +
                      fmt(factor));
  Step s{.kind = StepKind::kAdjustSharpness,
         .probability = checked_probability("adjust_sharpness", probability)};
  s.factor = factor;
  return add(s);
}

Pipeline& Pipeline::trivial_augment_wide(int magnitude_bins, float fill) {
  Step s{.kind = StepKind::kTrivialAugmentWide};
  s.magnitude_bins = checked_bins("trivial_augment_wide", magnitude_bins);
  s.fill = checked_fill("trivial_augment_wide", fill);
  return add(s);
}

Pipeline& Pipeline::rand_augment(int num_ops, int magnitude, int magnitude_bins, float fill) {
  Step s{.kind = StepKind::kRandAugment};
  if (num_ops < 0 || num_ops > kMaxPolicyOps)
    throw ConfigError("rand_augment: num_ops must be in 0.." + std::to_string(kMaxPolicyOps) +
                      ", got " + std::to_string(num_ops));
  s.magnitude_bins = checked_bins("rand_augment", magnitude_bins);
  if (magnitude < 0 || magnitude >= magnitude_bins)
    throw ConfigError("rand_augment: magnitude must be a bin in 0.." +
                      std::to_string(magnitude_bins - 1) + ", got " + std::to_string(magnitude));
  s.num_ops = num_ops;
  s.magnitude = magnitude;
  s.fill = checked_fill("rand_augment", fill);
  return add(s);
}

Pipeline& Pipeline::auto_augment(AutoAugmentPolicy policy, float fill) {
  if (policy != AutoAugmentPolicy::kImageNet && policy != AutoAugmentPolicy::kCifar10 &&
      policy != AutoAugmentPolicy::kSvhn)
    throw ConfigError("auto_augment: unknown policy " + std::to_string(static_cast<int>(policy)));
  Step s{.kind = StepKind::kAutoAugment};
  s.policy = policy;
  s.fill = checked_fill("auto_augment", fill);
  return add(s);
}

Pipeline& Pipeline::augmix(int severity, int mixture_width, int chain_depth, float alpha,
                           bool all_ops, Interpolation interpolation, float fill) {
  if (severity < 1 || severity > kMaxSeverity)
    throw ConfigError("augmix: severity must be in 1.." + std::to_string(kMaxSeverity) + ", got " +
                      std::to_string(severity));
  if (mixture_width < 1 || mixture_width > kMaxAugMixChains)
    throw ConfigError("augmix: width (chains) must be in 1.." + std::to_string(kMaxAugMixChains) +
                      ", got " + std::to_string(mixture_width));
  if (chain_depth != -1 && (chain_depth < 1 || chain_depth > kMaxAugMixDepth))
    throw ConfigError("augmix: depth must be -1 (1 to 3 ops drawn per chain) or in 1.." +
                      std::to_string(kMaxAugMixDepth) + ", got " + std::to_string(chain_depth));
  if (!(alpha > 0 && alpha <= kMaxFactor))
    throw ConfigError("augmix: alpha must be in (0, " + fmt(kMaxFactor) + "], got " + fmt(alpha));
  if (interpolation != Interpolation::kNearest && interpolation != Interpolation::kBilinear)
    throw ConfigError("augmix: interpolation must be nearest or bilinear, got " +
                      std::to_string(static_cast<int>(interpolation)));
  Step s{.kind = StepKind::kAugMix};
  s.fill = fill == kNoFill ? kNoFill : checked_fill("augmix", fill);
  s.severity = severity;
  s.mixture_width = mixture_width;
  s.chain_depth = chain_depth;
  s.alpha = alpha;
  s.all_ops = all_ops;
  s.interpolation = interpolation;
  return add(s);
}

Pipeline& Pipeline::invert(float probability) {
  return add(
      {.kind = StepKind::kInvert, .probability = checked_probability("invert", probability)});
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
    throw ConfigError("scale_jitter: min_side " + std::to_string(min_side) + " is above max_side " +
                      std::to_string(max_side));
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
  const Step* policy = nullptr;             // the first policy step so far
  for (const Step& s : steps_) {
    if (is_policy(s.kind) && policy == nullptr) policy = &s;
    if (policy != nullptr && !is_policy(s.kind) && !is_photometric(s.kind))
      throw ConfigError(std::string("pipeline: ") + step_name(policy->kind) +
                        " must come after every crop, resize and flip (where torchvision's "
                        "recipes put it), but " +
                        step_name(s.kind) + " follows it");
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
        break;
      default:
        if (is_photometric(s.kind) || is_policy(s.kind)) break;
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

int Pipeline::max_applied_ops() const {
  int n = 0;
  for (const Step& s : steps_) {
    if (s.kind == StepKind::kColorJitter)
      n += 4;
    else if (s.kind == StepKind::kRandAugment)
      n += s.num_ops;
    else if (s.kind == StepKind::kAutoAugment)
      n += 2;
    else if (s.kind == StepKind::kAugMix)
      n += 1 + s.mixture_width * (1 + (s.chain_depth > 0 ? s.chain_depth : kAugMixDrawnDepth));
    else if (is_photometric(s.kind) || is_policy(s.kind))
      n += 1;
  }
  return n;
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
        out << "color_jitter brightness " << fmt(s.brightness) << " contrast " << fmt(s.contrast)
            << " saturation " << fmt(s.saturation) << " hue " << fmt(s.hue) << " (random order)";
        break;
      case StepKind::kGrayscale:
        out << "grayscale p=" << fmt(s.probability);
        break;
      case StepKind::kGaussianBlur:
        out << "gaussian_blur " << s.kernel_width << "x" << s.kernel_height << " sigma ["
            << fmt(s.sigma_min) << ", " << fmt(s.sigma_max) << "]";
        break;
      case StepKind::kSolarize:
        out << "solarize threshold " << fmt(s.threshold) << " p=" << fmt(s.probability);
        break;
      case StepKind::kPosterize:
        out << "posterize bits " << s.bits << " p=" << fmt(s.probability);
        break;
      case StepKind::kEqualize:
        out << "equalize p=" << fmt(s.probability);
        break;
      case StepKind::kAutocontrast:
        out << "autocontrast p=" << fmt(s.probability);
        break;
      case StepKind::kAdjustSharpness:
        out << "adjust_sharpness factor " << fmt(s.factor) << " p=" << fmt(s.probability);
        break;
      case StepKind::kInvert:
        out << "invert p=" << fmt(s.probability);
        break;
      case StepKind::kTrivialAugmentWide:
        out << "trivial_augment_wide bins " << s.magnitude_bins << " fill " << fmt(s.fill);
        break;
      case StepKind::kRandAugment:
        out << "rand_augment ops " << s.num_ops << " magnitude " << s.magnitude << " of "
            << s.magnitude_bins << " bins fill " << fmt(s.fill);
        break;
      case StepKind::kAutoAugment:
        out << "auto_augment " << policy_name(s.policy) << " fill " << fmt(s.fill);
        break;
      case StepKind::kAugMix:
        out << "augmix severity " << s.severity << " width " << s.mixture_width << " depth "
            << s.chain_depth << " alpha " << fmt(s.alpha) << " all_ops " << (s.all_ops ? 1 : 0)
            << (s.interpolation == Interpolation::kNearest ? " nearest" : " bilinear");
        if (s.fill != kNoFill) out << " fill " << fmt(s.fill);
        break;
      case StepKind::kVerticalFlip:
        out << "vertical_flip p=" << fmt(s.probability);
        break;
      case StepKind::kScaleJitter:
        out << "scale_jitter " << (s.longer_side ? "longer" : "shorter") << " side " << s.size
            << ".." << s.size_max;
        break;
      case StepKind::kBoxCrop:
        out << "box_crop " << s.height << "x" << s.width << " min_visible " << fmt(s.min_visible)
            << " scale [" << fmt(s.scale_min) << ", " << fmt(s.scale_max) << "] ratio ["
            << fmt(s.ratio_min) << ", " << fmt(s.ratio_max) << "]";
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
                          " must be a whole number of pixels, got " +
                          fmt(static_cast<float>(v[i])));
      return static_cast<int>(v[i]);
    };
    const auto f = [&](std::size_t i, float fallback) {
      return i < v.size() ? static_cast<float>(v[i]) : fallback;
    };
    // The steps without numbers of their own, by name.
    const auto one_of = [&](const std::string& op, float probability) {
      if (op == "grayscale") p.grayscale(probability);
      if (op == "equalize") p.equalize(probability);
      if (op == "autocontrast") p.autocontrast(probability);
      if (op == "invert") p.invert(probability);
    };
    if (name != "augmix" && !step.settings.empty())
      throw ConfigError("pipeline step " + name + ": '" + step.settings.front().name +
                        "' is not a number");
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
      count(1, 4, "(brightness[, contrast, saturation, hue])");
      p.color_jitter(f(0, 0), f(1, 0), f(2, 0), f(3, 0));
    } else if (name == "grayscale" || name == "equalize" || name == "autocontrast" ||
               name == "invert") {
      count(0, 0, "no numbers");
      one_of(name, 1.f);
    } else if (name == "random_grayscale") {
      count(0, 1, "([probability])");
      p.grayscale(f(0, 0.1f));
    } else if (name == "random_equalize" || name == "random_autocontrast" ||
               name == "random_invert") {
      count(0, 1, "([probability])");
      one_of(name.substr(7), f(0, 0.5f));
    } else if (name == "gaussian_blur") {
      count(1, 3, "(kernel[, sigma_min, sigma_max])");
      const float lo = f(1, 0.1f);
      p.gaussian_blur(whole(0), whole(0), lo, f(2, v.size() == 2 ? lo : 2.0f));
    } else if (name == "solarize" || name == "random_solarize") {
      const bool random = name == "random_solarize";
      count(1, random ? 2 : 1, random ? "(threshold[, probability])" : "(threshold)");
      p.solarize(f(0, 0), random ? f(1, 0.5f) : 1.f);
    } else if (name == "posterize" || name == "random_posterize") {
      const bool random = name == "random_posterize";
      count(1, random ? 2 : 1, random ? "(bits[, probability])" : "(bits)");
      p.posterize(whole(0), random ? f(1, 0.5f) : 1.f);
    } else if (name == "trivial_augment_wide") {
      count(0, 2, "([magnitude_bins, fill])");
      p.trivial_augment_wide(v.empty() ? 31 : whole(0), f(1, 0.f));
    } else if (name == "rand_augment") {
      count(0, 4, "([num_ops, magnitude, magnitude_bins, fill])");
      p.rand_augment(v.size() > 0 ? whole(0) : 2, v.size() > 1 ? whole(1) : 9,
                     v.size() > 2 ? whole(2) : 31, f(3, 0.f));
    } else if (name == "auto_augment" || name == "auto_augment_imagenet" ||
               name == "auto_augment_cifar10" || name == "auto_augment_svhn") {
      count(0, 1, "([fill])");
      p.auto_augment(name == "auto_augment_cifar10" ? AutoAugmentPolicy::kCifar10
                     : name == "auto_augment_svhn"  ? AutoAugmentPolicy::kSvhn
                                                    : AutoAugmentPolicy::kImageNet,
                     f(0, 0.f));
    } else if (name == "augmix") {
      add_augmix(p, step);
    } else if (name == "adjust_sharpness" || name == "random_adjust_sharpness") {
      const bool random = name == "random_adjust_sharpness";
      count(1, random ? 2 : 1, random ? "(factor[, probability])" : "(factor)");
      p.adjust_sharpness(f(0, 0), random ? f(1, 0.5f) : 1.f);
    } else if (name == "scale_jitter") {
      count(2, 3, "(min_side, max_side[, longer_side])");
      p.scale_jitter(whole(0), whole(1), v.size() > 2 && v[2] != 0);
    } else {
      throw ConfigError(
          "pipeline step '" + name +
          "' is not one of resize_shorter, resize, center_crop, random_resized_crop, box_crop, "
          "horizontal_flip, vertical_flip, pad_random_crop, color_jitter, scale_jitter, "
          "grayscale, random_grayscale, gaussian_blur, solarize, random_solarize, posterize, "
          "random_posterize, equalize, random_equalize, autocontrast, random_autocontrast, "
          "adjust_sharpness, random_adjust_sharpness, invert, random_invert, "
          "trivial_augment_wide, rand_augment, auto_augment, auto_augment_imagenet, "
          "auto_augment_cifar10, auto_augment_svhn, augmix");
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
        s.settings.push_back({w, {}});  // a word: a setting by name, its numbers to follow
      else
        (s.settings.empty() ? s.args : s.settings.back().args).push_back(v);
    }
    steps.push_back(std::move(s));
  }
  if (steps.empty()) throw ConfigError("pipeline: no steps in '" + std::string(text) + "'");
  return steps;
}

}  // namespace stoke
