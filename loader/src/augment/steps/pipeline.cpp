// What a Pipeline does with its steps as a whole, through their records (step_def.hpp): the
// order and size checks, the widest applied-ops record, describe(), the presets, and the text
// vocabulary (make_pipeline, parse_steps). Each step's own builder is in its family's file.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "augment/steps/step_def.hpp"
#include "stoke/error.hpp"

namespace stoke {

using detail::check_side;
using detail::find_form;
using detail::step_def;
using detail::StepDef;
using detail::StepShape;

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
  const StepDef* policy = nullptr;          // the first policy so far
  const StepDef* erasing = nullptr;
  for (const Step& s : steps_) {
    const StepDef& d = step_def(s.kind);
    if (erasing != nullptr)
      throw ConfigError(
          "pipeline: random_erasing acts on the delivered image (after normalization for "
          "float outputs, where torchvision's recipes put it), so it must be the last step, "
          "but " +
          std::string(d.name) + " follows it");
    if (d.shape == StepShape::kLast) {
      erasing = &d;
      continue;
    }
    if (is_policy(s.kind) && policy == nullptr) policy = &d;
    if (policy != nullptr && d.shape != StepShape::kInPlace)
      throw ConfigError("pipeline: " + std::string(policy->name) +
                        " must come after every crop, resize and flip (where torchvision's "
                        "recipes put it), but " +
                        std::string(d.name) + " follows it");
    if (d.shape == StepShape::kShorterSide && h > 0 && w > 0) {
      const double scale = static_cast<double>(s.size) / std::min(h, w);
      const int nh = h <= w ? s.size : static_cast<int>(h * scale);
      const int nw = h <= w ? static_cast<int>(w * scale) : s.size;
      h = nh;
      w = nw;
    } else if (d.shape == StepShape::kDrawnSize) {
      h = w = 0;  // a size drawn per sample
    } else if (d.shape == StepShape::kSetsSize) {
      h = s.height;
      w = s.width;
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
  for (const Step& s : steps_) n += step_def(s.kind).max_ops(s);
  return n;
}

std::string Pipeline::describe() const {
  std::ostringstream out;
  for (const Step& s : steps_) {
    step_def(s.kind).describe(out, s);
    out << "\n";
  }
  out << "output " << height_ << "x" << width_ << "x" << channels_ << " uint8";
  return out.str();
}

Pipeline make_pipeline(int height, int width, int channels, const std::vector<StepSpec>& steps) {
  Pipeline p(height, width, channels);
  for (const StepSpec& step : steps) {
    const detail::StepForm* form = find_form(step.name);
    if (form == nullptr)
      throw ConfigError("pipeline step '" + step.name + "' is not one of " + detail::form_names());
    if (!form->takes_words && !step.words.empty())
      throw ConfigError("pipeline step " + step.name + ": '" + step.words[0] + "' is not a number");
    const detail::StepNumbers numbers(form->name, step.args, step.words);
    numbers.count(form->min_numbers, form->max_numbers, form->usage);
    form->add(p, numbers);
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
