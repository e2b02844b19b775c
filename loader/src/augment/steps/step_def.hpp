#pragma once
// One record per step kind: everything the engine knows of a step lives in the file of its
// family (geometric_steps.cpp, colour_steps.cpp, policy_steps.cpp, timm_steps.cpp,
// affine_step.cpp, erasing_step.cpp) and is reached through its StepDef. The text parser
// (make_pipeline), validation, describe(), max_applied_ops() and the worker's run() all read
// these records; none of them switches on the kind. docs/ARCHITECTURE.md, "Steps as records",
// says how to add a step.
//
// Thread-safety: the records are immutable after static initialization.

#include <cstddef>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "augment/augment.hpp"
#include "augment/photometric.hpp"
#include "plan/sample_rng.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {

// How a step changes the size of the image it gets (Pipeline::validate follows it).
enum class StepShape {
  kSetsSize,     // to the step's height x width (crops, resize)
  kShorterSide,  // the shorter side to `size`, the aspect ratio kept
  kDrawnSize,    // a size drawn per sample (scale_jitter): a crop to the output must follow
  kKeepsSize,    // moves pixels but keeps the size (flips)
  kInPlace,      // draws ops on the image as it is (photometric steps, policies, random_affine)
  kLast,         // acts on the delivered image (random_erasing): it must be the last step
};

// A form's numbers and words as the text gives them (Python's pipeline=, --pipeline), with the
// conversions every form shares and their errors, which name the form.
class StepNumbers {
 public:
  StepNumbers(std::string_view form, const std::vector<double>& numbers,
              const std::vector<std::string>& words)
      : form_(form), numbers_(numbers), words_(words) {}

  std::string_view form() const { return form_; }
  std::size_t size() const { return numbers_.size(); }
  const std::vector<double>& numbers() const { return numbers_; }
  const std::vector<std::string>& words() const { return words_; }
  // Number i, or `fallback` when the text stops before it.
  float number(std::size_t i, float fallback) const {
    return i < numbers_.size() ? static_cast<float>(numbers_[i]) : fallback;
  }
  // Number i as a whole number of pixels. Throws ConfigError when it is not one.
  int whole(std::size_t i) const;
  // Throws "pipeline step FORM takes USAGE, got N number(s)" unless lo <= size() <= hi.
  void count(std::size_t lo, std::size_t hi, std::string_view usage) const;

 private:
  std::string_view form_;
  const std::vector<double>& numbers_;
  const std::vector<std::string>& words_;
};

// One spelling of a step in the text vocabulary: "random_solarize 128 0.3". Several forms may
// make one kind (solarize and random_solarize differ in their defaults).
struct StepForm {
  std::string_view name;
  // What it takes ("(height, width[, scale_min, ...])"), as messages and stoke::step_forms()
  // show it, and how many numbers make_pipeline lets through to `add`.
  std::string_view usage;
  std::size_t min_numbers = 0, max_numbers = 0;
  // Whether it takes words (key=value settings, timm's config string); the others refuse them.
  bool takes_words = false;
  // Adds the step to `p` from `n` (min_numbers..max_numbers of them), giving the defaults of
  // those left out; any rule finer than the count is its own.
  void (*add)(Pipeline& p, const StepNumbers& n) = nullptr;
};

// The ops a sample gets from an in-place step, drawn from its generator (never from its pixels,
// so the augmenter may look ahead), for an image of height x width, appended in the order they
// apply.
using DrawOps = void (*)(const Step& s, SampleRng& rng, int height, int width,
                         std::vector<AppliedOp>& out);
// What a worker does at this step of a sample (an Augmenter member, defined beside the record).
using ApplyStep = void (Augmenter::*)(Augmenter::Window& w, const Step& s, SampleRng& rng);

struct StepDef {
  StepKind kind{};
  std::string_view name;  // in describe() and in every message about the step
  StepShape shape = StepShape::kInPlace;
  std::span<const StepForm> forms;
  void (*describe)(std::ostream& out, const Step& s) = nullptr;
  // The most ops one sample can get from it (the width of Batch::applied_ops()).
  int (*max_ops)(const Step& s) = nullptr;
  DrawOps draw = nullptr;  // kInPlace steps; null for the others
  ApplyStep apply = nullptr;
};

// The record of `kind`, or null for a number no step has.
const StepDef* find_step(StepKind kind);
// The record of `kind`. REQUIRES: find_step(kind) != nullptr (every step a Pipeline holds).
const StepDef& step_def(StepKind kind);
// The form called `name` (and its record in *def), or null.
const StepForm* find_form(std::string_view name, const StepDef** def = nullptr);
// Every record, family by family (geometric, photometric, policies, timm, erasing, affine).
std::span<const StepDef* const> step_defs();
// The forms' names in that order, comma-separated (the unknown-step message).
const std::string& form_names();

// Appends the ops in-place step `s` applies to this sample of height x width (none when its
// coin says no). REQUIRES: works_in_place(s.kind).
inline void draw_pixel_ops(const Step& s, SampleRng& rng, int height, int width,
                           std::vector<AppliedOp>& out) {
  step_def(s.kind).draw(s, rng, height, width, out);
}

// Each family's records (their files).
std::span<const StepDef> geometric_steps();
std::span<const StepDef> colour_steps();
std::span<const StepDef> policy_steps();
std::span<const StepDef> timm_steps();
std::span<const StepDef> affine_steps();
std::span<const StepDef> erasing_steps();

// What several families share: the bounds of sides, probabilities, fills and factors, their
// messages, and how numbers are written in them.
inline constexpr int kMaxSide = 16384;
inline constexpr float kMaxFactor = 100.f;  // keeps every factor's arithmetic finite
std::string fmt(float v);
void check_side(std::string_view step, std::string_view what, int v);
float checked_probability(std::string_view step, float p);
float checked_fill(std::string_view step, float fill);
// The errors and numbers of the forms that take key=value words (timm_augment, augmix).
[[noreturn]] void word_error(std::string_view step, const std::string& why);
// The number `text` of `word` (a finite double written whole).
double word_number(std::string_view step, const std::string& word, const std::string& text);
// No ops (geometric steps), one op (most in-place steps and erasing).
int no_ops(const Step&);
int one_op(const Step&);

}  // namespace stoke::detail
