#include "stoke/pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <sstream>
#include <string_view>
#include <utility>

#include "common/number_text.hpp"
#include "stoke/error.hpp"
#include "api/timm_config.hpp"

namespace stoke {
namespace {

constexpr int kMaxSide = 16384;

void check_side(const char* step, const char* what, int v) {
  if (v <= 0 || v > kMaxSide)
    throw ConfigError(std::string(step) + ": " + what + " must be in 1.." +
                      std::to_string(kMaxSide) + ", got " + std::to_string(v));
}

std::string fmt(float v) {
  return detail::decimal_text(static_cast<double>(v));
}

// Bounds that keep every factor's arithmetic finite and every blur kernel's cost sane.
constexpr float kMaxFactor = 100.f;
constexpr int kMaxKernel = 255;

constexpr int kMaxPolicyOps = 16;
constexpr float kMaxDegrees = 360.f;
constexpr float kMaxShear = 90.f;  // exclusive: torchvision divides by cos(shear_y)
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

// RandomAffine(degrees) for one number: the range [-degrees, degrees].
RandomAffineRanges symmetric_degrees(float degrees) {
  if (!(degrees >= 0))
    throw ConfigError(
        "random_affine: a single degrees is the range [-degrees, degrees] and must be >= 0, got " +
        fmt(degrees));
  return RandomAffineRanges{.degrees_min = -degrees, .degrees_max = degrees};
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
    case StepKind::kRandomErasing:
      return "random_erasing";
    case StepKind::kTimmRandAugment:
    case StepKind::kTimmAugMix:
      return "timm_augment";
    case StepKind::kRandomAffine:
      return "random_affine";
    case StepKind::kAugMix:
      return "augmix";
  }
  return "unknown";
}

const char* interpolation_name(TimmInterpolation i) {
  switch (i) {
    case TimmInterpolation::kBilinear:
      return "bilinear";
    case TimmInterpolation::kBicubic:
      return "bicubic";
    case TimmInterpolation::kRandom:
      break;
  }
  return "random";
}

// The errors and numbers of the steps that take key=value words (timm_augment, augmix).
[[noreturn]] void word_error(std::string_view step, const std::string& why) {
  throw ConfigError("pipeline step " + std::string(step) + ": " + why);
}

// `text`, the number in `word` (a finite double written whole).
double word_number(std::string_view step, const std::string& word, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    word_error(step, "'" + word + "': '" + text + "' is not a number");
  return v;
}

[[noreturn]] void timm_word_error(const std::string& why) {
  word_error("timm_augment", why);
}

double timm_word_number(const std::string& word, const std::string& text) {
  return word_number("timm_augment", word, text);
}

TimmInterpolation timm_interpolation(const std::string& value) {
  if (value == "random") return TimmInterpolation::kRandom;
  if (value == "bilinear") return TimmInterpolation::kBilinear;
  if (value == "bicubic") return TimmInterpolation::kBicubic;
  timm_word_error("interpolation must be random, bilinear or bicubic, got '" + value + "'");
}

// fill=R,G,B, or fill=V for all three.
std::array<std::uint8_t, 3> timm_fill(const std::string& word, const std::string& value) {
  std::vector<double> levels;
  for (std::size_t start = 0;;) {
    const std::size_t comma = value.find(',', start);
    levels.push_back(timm_word_number(word, value.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (levels.size() == 1) levels.assign(3, levels[0]);
  if (levels.size() != 3)
    timm_word_error("fill takes one level or three (R,G,B), got '" + value + "'");
  std::array<std::uint8_t, 3> fill{};
  for (std::size_t k = 0; k < 3; ++k) {
    if (!(levels[k] >= 0 && levels[k] <= 255) || levels[k] != std::floor(levels[k]))
      timm_word_error("fill levels must be whole numbers in 0..255, got '" + value + "'");
    fill[k] = static_cast<std::uint8_t>(levels[k]);
  }
  return fill;
}

// timm_augment's words: its config string, then interpolation=random|bilinear|bicubic,
// fill=R,G,B (or one level) and translate_pct=F, each at most once in any order.
void add_timm_augment(Pipeline& p, const std::vector<std::string>& words) {
  if (words.empty())
    throw ConfigError(
        "pipeline step timm_augment takes timm's config string, e.g. 'rand-m9-mstd0.5-inc1' or "
        "'augmix-m5-w3'");
  TimmInterpolation interpolation = TimmInterpolation::kRandom;
  std::array<std::uint8_t, 3> fill = {124, 116, 104};
  float translate_pct = -1.f;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    const std::size_t eq = w.find('=');
    const std::string key = eq == std::string::npos ? "" : w.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : w.substr(eq + 1);
    if (key == "interpolation") {
      interpolation = timm_interpolation(value);
    } else if (key == "fill") {
      fill = timm_fill(w, value);
    } else if (key == "translate_pct") {
      translate_pct = static_cast<float>(timm_word_number(w, value));
      if (!(translate_pct >= 0))
        timm_word_error("translate_pct must be a fraction of the side in [0, 1], got '" + value +
                        "'");
    } else {
      timm_word_error("'" + w + "' is not interpolation=..., fill=... or translate_pct=...");
    }
  }
  p.timm_augment(words[0], interpolation, fill, translate_pct);
}

constexpr const char* kAugMixText =
    "augmix [severity=S] [width=W] [depth=D] [alpha=A] [all_ops=0|1] "
    "[interpolation=nearest|bilinear] [fill=V]";

[[noreturn]] void augmix_word_error(const std::string& why) {
  word_error("augmix", why);
}

// A setting of "augmix" that is a whole number (severity, width, depth, all_ops).
int whole_setting(const std::string& key, double v) {
  if (!(std::abs(v) <= kMaxSide) || v != std::floor(v))
    augmix_word_error(key + " must be a whole number, got " + fmt(static_cast<float>(v)));
  return static_cast<int>(v);
}

// The augmix step of its words (kAugMixText), torchvision's defaults for those left out.
void add_augmix(Pipeline& p, const StepSpec& step) {
  if (!step.args.empty())
    throw ConfigError(std::string("pipeline step augmix takes its settings as key=value words (") +
                      kAugMixText + "), got " + std::to_string(step.args.size()) + " number(s)");
  int severity = 3, width = 3, depth = -1;
  float alpha = 1.f, fill = kNoFill;
  bool all_ops = true;
  Interpolation interpolation = Interpolation::kBilinear;
  constexpr std::string_view kKeys[] = {"severity", "width",         "depth", "alpha",
                                        "all_ops",  "interpolation", "fill"};
  std::vector<std::string> seen;
  for (const std::string& w : step.words) {
    const std::size_t eq = w.find('=');
    const std::string key = eq == std::string::npos ? w : w.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : w.substr(eq + 1);
    if (eq == std::string::npos ||
        std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
      augmix_word_error("'" + w + "' is not one of its settings (" + kAugMixText + ")");
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      augmix_word_error(key + " is given twice");
    seen.push_back(key);
    if (key == "interpolation") {
      if (value != "nearest" && value != "bilinear")
        augmix_word_error("interpolation must be nearest or bilinear, got '" + value + "'");
      interpolation = value == "nearest" ? Interpolation::kNearest : Interpolation::kBilinear;
      continue;
    }
    const double v = word_number("augmix", w, value);
    if (key == "severity") {
      severity = whole_setting(key, v);
    } else if (key == "width") {
      width = whole_setting(key, v);
    } else if (key == "depth") {
      depth = whole_setting(key, v);
    } else if (key == "alpha") {
      alpha = static_cast<float>(v);
    } else if (key == "all_ops") {
      const int b = whole_setting(key, v);
      if (b != 0 && b != 1) augmix_word_error("all_ops must be 0 or 1, got " + std::to_string(b));
      all_ops = b == 1;
    } else {  // fill; the sentinel for none is not a level a user can ask for
      fill = static_cast<float>(v);
      if (fill == kNoFill) augmix_word_error("fill must be a level in [0, 255], got -1");
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
    case ImageOp::kErase:
      return "erase";
    case ImageOp::kEraseNoise:
      return "erase_noise";
    case ImageOp::kEraseChannelNoise:
      return "erase_channel_noise";
    case ImageOp::kPilAutocontrast:
      return "pil_autocontrast";
    case ImageOp::kPilEqualize:
      return "pil_equalize";
    case ImageOp::kPilInvert:
      return "pil_invert";
    case ImageOp::kPilPosterize:
      return "pil_posterize";
    case ImageOp::kPilSolarize:
      return "pil_solarize";
    case ImageOp::kPilSolarizeAdd:
      return "pil_solarize_add";
    case ImageOp::kPilColor:
      return "pil_color";
    case ImageOp::kPilContrast:
      return "pil_contrast";
    case ImageOp::kPilBrightness:
      return "pil_brightness";
    case ImageOp::kPilSharpness:
      return "pil_sharpness";
    case ImageOp::kPilRotate:
      return "pil_rotate";
    case ImageOp::kPilShearX:
      return "pil_shear_x";
    case ImageOp::kPilShearY:
      return "pil_shear_y";
    case ImageOp::kPilTranslateXRel:
      return "pil_translate_x_rel";
    case ImageOp::kPilTranslateYRel:
      return "pil_translate_y_rel";
    case ImageOp::kTimmAugMixChain:
      return "timm_augmix_chain";
    case ImageOp::kTimmAugMixBlend:
      return "timm_augmix_blend";
    case ImageOp::kAffineBilinear:
      return "affine_bilinear";
    case ImageOp::kAugMix:
      return "augmix";
    case ImageOp::kAugMixChain:
      return "augmix_chain";
    case ImageOp::kNone:
      break;
  }
  return "";
}

int image_op_arg_count(ImageOp op) {
  switch (op) {
    case ImageOp::kNone:
    case ImageOp::kGrayscale:
    case ImageOp::kEqualize:
    case ImageOp::kAutocontrast:
    case ImageOp::kInvert:
    case ImageOp::kPilAutocontrast:
    case ImageOp::kPilEqualize:
    case ImageOp::kPilInvert:
      return 0;
    case ImageOp::kBrightness:
    case ImageOp::kHue:
    case ImageOp::kSolarize:
    case ImageOp::kPosterize:
    case ImageOp::kPilPosterize:
    case ImageOp::kPilSolarize:
    case ImageOp::kPilColor:
    case ImageOp::kPilContrast:
    case ImageOp::kPilBrightness:
    case ImageOp::kPilSharpness:
    case ImageOp::kTimmAugMixBlend:
      return 1;
    case ImageOp::kContrast:  // the factor, and the blend's 1 - factor as torch takes it
    case ImageOp::kSaturation:
    case ImageOp::kSharpness:
    case ImageOp::kRotate:
    case ImageOp::kPilSolarizeAdd:
    case ImageOp::kAugMixChain:
      return 2;
    case ImageOp::kGaussianBlur:
    case ImageOp::kShear:
      return 3;
    case ImageOp::kTimmAugMixChain:
    case ImageOp::kAugMix:
      return 4;
    case ImageOp::kPilRotate:
    case ImageOp::kPilShearX:
    case ImageOp::kPilShearY:
    case ImageOp::kPilTranslateXRel:
    case ImageOp::kPilTranslateYRel:
      return 5;
    case ImageOp::kAffine:
    case ImageOp::kAffineAtOrigin:
    case ImageOp::kAffineBilinear:
    case ImageOp::kErase:
    case ImageOp::kEraseNoise:
    case ImageOp::kEraseChannelNoise:
      return 7;
  }
  return 0;
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

Pipeline& Pipeline::random_erasing(float probability, float scale_min, float scale_max,
                                   float ratio_min, float ratio_max, EraseFill fill, float value_r,
                                   float value_g, float value_b) {
  Step s{.kind = StepKind::kRandomErasing};
  s.probability = checked_probability("random_erasing", probability);
  if (!(scale_min >= 0 && scale_min <= scale_max && scale_max <= 1))
    throw ConfigError("random_erasing: scale must satisfy 0 <= min <= max <= 1, got [" +
                      fmt(scale_min) + ", " + fmt(scale_max) + "]");
  if (!(ratio_min > 0 && ratio_min <= ratio_max && std::isfinite(ratio_max)))
    throw ConfigError("random_erasing: ratio must satisfy 0 < min <= max, got [" + fmt(ratio_min) +
                      ", " + fmt(ratio_max) + "]");
  if (fill != EraseFill::kConstant && fill != EraseFill::kPixelNoise &&
      fill != EraseFill::kChannelNoise)
    throw ConfigError("random_erasing: unknown fill " + std::to_string(static_cast<int>(fill)));
  for (float v : {value_r, value_g, value_b}) {
    if (!std::isfinite(v))
      throw ConfigError("random_erasing: values must be finite, got " + fmt(v));
  }
  s.scale_min = scale_min;
  s.scale_max = scale_max;
  s.ratio_min = ratio_min;
  s.ratio_max = ratio_max;
  s.erase_fill = fill;
  s.erase_value[0] = value_r;
  s.erase_value[1] = value_g;
  s.erase_value[2] = value_b;
  return add(s);
}

Pipeline& Pipeline::timm_augment(std::string_view config, TimmInterpolation interpolation,
                                 std::array<std::uint8_t, 3> fill, float translate_pct) {
  if (channels_ != 3)
    throw ConfigError(
        "timm_augment: timm's ops take RGB images (timm converts every image to "
        "RGB), but the output has 1 channel");
  detail::TimmConfig c = detail::parse_timm_config(config);
  if (interpolation != TimmInterpolation::kRandom &&
      interpolation != TimmInterpolation::kBilinear && interpolation != TimmInterpolation::kBicubic)
    throw ConfigError(
        "timm_augment: interpolation must be random (0), bilinear (2) or bicubic (3), "
        "got " +
        std::to_string(static_cast<int>(interpolation)));
  if (!(translate_pct <= 1.f))  // NaN too
    throw ConfigError("timm_augment: translate_pct must be a fraction of the side in [0, 1], got " +
                      fmt(translate_pct));
  c.settings.interpolation = interpolation;
  c.settings.fill = fill;
  if (translate_pct >= 0) c.settings.translate_pct = translate_pct;
  Step s{.kind = c.kind};
  s.timm = c.settings;
  return add(s);
}

Pipeline& Pipeline::random_affine(const RandomAffineRanges& r) {
  // The angle's bounds are inclusive; a shear of 90 degrees is not (its cosine divides).
  const auto range = [](const char* what, float lo, float hi, float bound, bool inclusive) {
    const bool inside = inclusive ? (lo >= -bound && hi <= bound) : (lo > -bound && hi < bound);
    const char* op = inclusive ? " <= " : " < ";
    if (!(lo <= hi && inside))
      throw ConfigError(std::string("random_affine: ") + what + " must satisfy -" + fmt(bound) +
                        op + "min <= max" + op + fmt(bound) + ", got [" + fmt(lo) + ", " + fmt(hi) +
                        "]");
  };
  range("degrees", r.degrees_min, r.degrees_max, kMaxDegrees, true);
  for (const auto& [what, v] :
       {std::pair{"translate_x", r.translate_x}, std::pair{"translate_y", r.translate_y}})
    if (!(v >= 0 && v <= 1))
      throw ConfigError(std::string("random_affine: ") + what +
                        " must be a fraction of the side in [0, 1], got " + fmt(v));
  if (!(r.scale_min > 0 && r.scale_min <= r.scale_max && r.scale_max <= kMaxFactor))
    throw ConfigError("random_affine: scale must satisfy 0 < min <= max <= " + fmt(kMaxFactor) +
                      ", got [" + fmt(r.scale_min) + ", " + fmt(r.scale_max) + "]");
  range("shear x", r.shear_x_min, r.shear_x_max, kMaxShear, false);
  range("shear y", r.shear_y_min, r.shear_y_max, kMaxShear, false);
  if (r.interpolation != Interpolation::kNearest && r.interpolation != Interpolation::kBilinear)
    throw ConfigError("random_affine: unknown interpolation " +
                      std::to_string(static_cast<int>(r.interpolation)));
  Step s{.kind = StepKind::kRandomAffine, .scale_min = r.scale_min, .scale_max = r.scale_max};
  s.fill = checked_fill("random_affine", r.fill);
  s.degrees_min = r.degrees_min;
  s.degrees_max = r.degrees_max;
  s.translate_x = r.translate_x;
  s.translate_y = r.translate_y;
  s.shear_x_min = r.shear_x_min;
  s.shear_x_max = r.shear_x_max;
  s.shear_y_min = r.shear_y_min;
  s.shear_y_max = r.shear_y_max;
  s.interpolation = r.interpolation;
  return add(s);
}

Pipeline& Pipeline::random_affine(float degrees) {
  return random_affine(symmetric_degrees(degrees));
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
  const Step* erasing = nullptr;
  for (const Step& s : steps_) {
    if (erasing != nullptr)
      throw ConfigError(
          "pipeline: random_erasing acts on the delivered image (after normalization for "
          "float outputs, where torchvision's recipes put it), so it must be the last step, "
          "but " +
          std::string(step_name(s.kind)) + " follows it");
    if (s.kind == StepKind::kRandomErasing) {
      erasing = &s;
      continue;
    }
    if (is_policy(s.kind) && policy == nullptr) policy = &s;
    if (policy != nullptr && !works_in_place(s.kind))
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
        if (works_in_place(s.kind)) break;  // the size stays
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
    else if (s.kind == StepKind::kTimmRandAugment)
      n += s.timm.num_ops;
    else if (s.kind == StepKind::kTimmAugMix)  // a mark and up to 3 drawn ops per chain, a blend
      n += s.timm.width * (1 + (s.timm.depth > 0 ? s.timm.depth : 3)) + (s.timm.blended ? 0 : 1);
    else if (s.kind == StepKind::kAugMix)
      n += 1 + s.mixture_width * (1 + (s.chain_depth > 0 ? s.chain_depth : kAugMixDrawnDepth));
    else if (works_in_place(s.kind) || s.kind == StepKind::kRandomErasing)
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
      case StepKind::kTimmRandAugment:
      case StepKind::kTimmAugMix:
        out << "timm_augment " << detail::timm_config_text(s.kind, s.timm) << " interpolation "
            << interpolation_name(s.timm.interpolation) << " fill " << int{s.timm.fill[0]} << ","
            << int{s.timm.fill[1]} << "," << int{s.timm.fill[2]} << " translate_pct "
            << fmt(s.timm.translate_pct);
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
      case StepKind::kRandomErasing:
        out << "random_erasing p=" << fmt(s.probability) << " scale [" << fmt(s.scale_min) << ", "
            << fmt(s.scale_max) << "] ratio [" << fmt(s.ratio_min) << ", " << fmt(s.ratio_max)
            << "] ";
        if (s.erase_fill == EraseFill::kPixelNoise)
          out << "fill N(0, 1) per value";
        else if (s.erase_fill == EraseFill::kChannelNoise)
          out << "fill N(0, 1) per channel";
        else
          out << "value " << fmt(s.erase_value[0]) << " " << fmt(s.erase_value[1]) << " "
              << fmt(s.erase_value[2]);
        break;
      case StepKind::kRandomAffine:
        out << "random_affine degrees [" << fmt(s.degrees_min) << ", " << fmt(s.degrees_max)
            << "] translate [" << fmt(s.translate_x) << ", " << fmt(s.translate_y) << "] scale ["
            << fmt(s.scale_min) << ", " << fmt(s.scale_max) << "] shear x [" << fmt(s.shear_x_min)
            << ", " << fmt(s.shear_x_max) << "] y [" << fmt(s.shear_y_min) << ", "
            << fmt(s.shear_y_max) << "] "
            << (s.interpolation == Interpolation::kBilinear ? "bilinear" : "nearest") << " fill "
            << fmt(s.fill);
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
    if (name == "timm_augment") {
      if (!v.empty())
        throw ConfigError(
            "pipeline step timm_augment takes its config string and key=value "
            "words, not numbers, got " +
            std::to_string(v.size()) + " number(s)");
      add_timm_augment(p, step.words);
      continue;
    }
    if (name == "augmix") {
      add_augmix(p, step);
      continue;
    }
    if (!step.words.empty())
      throw ConfigError("pipeline step " + name + ": '" + step.words[0] + "' is not a number");
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
    } else if (name == "adjust_sharpness" || name == "random_adjust_sharpness") {
      const bool random = name == "random_adjust_sharpness";
      count(1, random ? 2 : 1, random ? "(factor[, probability])" : "(factor)");
      p.adjust_sharpness(f(0, 0), random ? f(1, 0.5f) : 1.f);
    } else if (name == "random_erasing" || name == "random_erasing_pixel" ||
               name == "random_erasing_color") {
      const bool constant = name == "random_erasing";
      if (constant && (v.size() == 7 || v.size() > 8))
        throw ConfigError("pipeline step " + name +
                          " takes ([probability, scale_min, scale_max, ratio_min, ratio_max, "
                          "value or value_r value_g value_b]), got " +
                          std::to_string(v.size()) + " number(s)");
      if (!constant) count(0, 5, "([probability, scale_min, scale_max, ratio_min, ratio_max])");
      const float r = f(5, 0.f);
      p.random_erasing(f(0, 0.5f), f(1, 0.02f), f(2, 0.33f), f(3, 0.3f), f(4, 3.3f),
                       name == "random_erasing_pixel"   ? EraseFill::kPixelNoise
                       : name == "random_erasing_color" ? EraseFill::kChannelNoise
                                                        : EraseFill::kConstant,
                       r, f(6, r), f(7, r));
    } else if (name == "random_affine" || name == "random_affine_bilinear") {
      // degrees alone is [-degrees, degrees]; otherwise every range is a pair, in
      // RandomAffine's order, then the fill.
      if (v.empty() || (v.size() != 1 && v.size() != 11 && (v.size() % 2 != 0 || v.size() > 10)))
        throw ConfigError("pipeline step " + name +
                          " takes (degrees) or (degrees_min, degrees_max[, translate_x, "
                          "translate_y[, scale_min, scale_max[, shear_x_min, shear_x_max[, "
                          "shear_y_min, shear_y_max[, fill]]]]]), got " +
                          std::to_string(v.size()) + " number(s)");
      RandomAffineRanges r = v.size() == 1 ? symmetric_degrees(f(0, 0))
                                           : RandomAffineRanges{.degrees_min = f(0, 0),
                                                                .degrees_max = f(1, 0),
                                                                .translate_x = f(2, 0),
                                                                .translate_y = f(3, 0),
                                                                .scale_min = f(4, 1),
                                                                .scale_max = f(5, 1),
                                                                .shear_x_min = f(6, 0),
                                                                .shear_x_max = f(7, 0),
                                                                .shear_y_min = f(8, 0),
                                                                .shear_y_max = f(9, 0),
                                                                .fill = f(10, 0)};
      if (name == "random_affine_bilinear") r.interpolation = Interpolation::kBilinear;
      p.random_affine(r);
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
          "auto_augment_cifar10, auto_augment_svhn, augmix, timm_augment, random_erasing, "
          "random_erasing_pixel, random_erasing_color, random_affine, random_affine_bilinear");
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
        s.words.push_back(w);  // make_pipeline: timm_augment's, or not a number
      else
        s.args.push_back(v);
    }
    steps.push_back(std::move(s));
  }
  if (steps.empty()) throw ConfigError("pipeline: no steps in '" + std::string(text) + "'");
  return steps;
}

}  // namespace stoke
