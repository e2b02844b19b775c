#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "augment/steps/step_def.hpp"
#include "common/number_text.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

// Every record by kind (the kinds are small numbers), and family by family.
struct StepTable {
  std::vector<const StepDef*> by_kind;
  std::vector<const StepDef*> ordered;
  std::string form_names;

  StepTable() {
    for (const auto family :
         {geometric_steps, colour_steps, policy_steps, timm_steps, erasing_steps, affine_steps}) {
      for (const StepDef& d : family()) {
        const auto k = static_cast<std::size_t>(d.kind);
        if (k >= by_kind.size()) by_kind.resize(k + 1, nullptr);
        by_kind[k] = &d;
        ordered.push_back(&d);
        for (const StepForm& f : d.forms)
          form_names += (form_names.empty() ? "" : ", ") + std::string(f.name);
      }
    }
  }
};

const StepTable& table() {
  static const StepTable t;
  return t;
}

}  // namespace

const StepDef* find_step(StepKind kind) {
  const auto k = static_cast<std::size_t>(kind);
  const std::vector<const StepDef*>& by_kind = table().by_kind;
  return k < by_kind.size() ? by_kind[k] : nullptr;
}

const StepDef& step_def(StepKind kind) {
  const StepDef* d = find_step(kind);
  if (d == nullptr)
    throw ConfigError("pipeline: unknown step kind " + std::to_string(static_cast<unsigned>(kind)));
  return *d;
}

const StepForm* find_form(std::string_view name, const StepDef** def) {
  for (const StepDef* d : table().ordered)
    for (const StepForm& f : d->forms)
      if (f.name == name) {
        if (def != nullptr) *def = d;
        return &f;
      }
  return nullptr;
}

std::span<const StepDef* const> step_defs() {
  return table().ordered;
}

const std::string& form_names() {
  return table().form_names;
}

int StepNumbers::whole(std::size_t i) const {
  const double v = numbers_[i];
  if (!(std::abs(v) <= kMaxSide) || v != std::floor(v))
    throw ConfigError("pipeline step " + std::string(form_) + ": number " + std::to_string(i + 1) +
                      " must be a whole number of pixels, got " + fmt(static_cast<float>(v)));
  return static_cast<int>(v);
}

void StepNumbers::count(std::size_t lo, std::size_t hi, std::string_view usage) const {
  if (numbers_.size() < lo || numbers_.size() > hi)
    throw ConfigError("pipeline step " + std::string(form_) + " takes " + std::string(usage) +
                      ", got " + std::to_string(numbers_.size()) + " number(s)");
}

std::string fmt(float v) {
  return decimal_text(static_cast<double>(v));
}

void check_side(std::string_view step, std::string_view what, int v) {
  if (v <= 0 || v > kMaxSide)
    throw ConfigError(std::string(step) + ": " + std::string(what) + " must be in 1.." +
                      std::to_string(kMaxSide) + ", got " + std::to_string(v));
}

float checked_probability(std::string_view step, float p) {
  if (!(p >= 0 && p <= 1))
    throw ConfigError(std::string(step) + ": probability must be in [0, 1], got " + fmt(p));
  return p;
}

float checked_fill(std::string_view step, float fill) {
  if (!(fill >= 0 && fill <= 255))
    throw ConfigError(std::string(step) + ": fill must be a level in [0, 255], got " + fmt(fill));
  return fill;
}

void word_error(std::string_view step, const std::string& why) {
  throw ConfigError("pipeline step " + std::string(step) + ": " + why);
}

double word_number(std::string_view step, const std::string& word, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    word_error(step, "'" + word + "': '" + text + "' is not a number");
  return v;
}

int no_ops(const Step&) {
  return 0;
}
int one_op(const Step&) {
  return 1;
}

}  // namespace stoke::detail

namespace stoke {

std::vector<StepFormInfo> step_forms() {
  std::vector<StepFormInfo> out;
  for (const detail::StepDef* d : detail::step_defs())
    for (const detail::StepForm& f : d->forms)
      out.push_back({std::string(f.name), std::string(f.usage)});
  return out;
}

}  // namespace stoke
