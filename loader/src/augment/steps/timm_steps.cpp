// timm's RandAugment and AugMix from their config strings (timm_config.hpp). The builder, the
// text form with its key=value words, the description and the draws (augment/timm_augment.hpp)
// of both kinds are together below.

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "augment/steps/step_def.hpp"
#include "augment/steps/timm_config.hpp"
#include "augment/timm_augment.hpp"
#include "stoke/error.hpp"

namespace stoke {

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
                      detail::fmt(translate_pct));
  c.settings.interpolation = interpolation;
  c.settings.fill = fill;
  if (translate_pct >= 0) c.settings.translate_pct = translate_pct;
  Step s{.kind = c.kind};
  s.timm = c.settings;
  return add(s);
}

}  // namespace stoke

namespace stoke::detail {
namespace {

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

const char* interpolation_name(TimmInterpolation i) {
  if (i == TimmInterpolation::kBilinear) return "bilinear";
  if (i == TimmInterpolation::kBicubic) return "bicubic";
  return "random";
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
void add_timm_augment(Pipeline& p, const StepNumbers& n) {
  if (n.size() != 0)
    throw ConfigError(
        "pipeline step timm_augment takes its config string and key=value "
        "words, not numbers, got " +
        std::to_string(n.size()) + " number(s)");
  const std::vector<std::string>& words = n.words();
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

void describe_timm(std::ostream& out, const Step& s) {
  out << "timm_augment " << timm_config_text(s.kind, s.timm) << " interpolation "
      << interpolation_name(s.timm.interpolation) << " fill " << int{s.timm.fill[0]} << ","
      << int{s.timm.fill[1]} << "," << int{s.timm.fill[2]} << " translate_pct "
      << fmt(s.timm.translate_pct);
}

void draw(const Step& s, SampleRng& rng, int, int, std::vector<AppliedOp>& out) {
  draw_timm(s, rng, out);
}

// Both kinds are spelled "timm_augment"; the config string says which.
// Numbers are refused with the words' usage (add_timm_augment), so the form takes any count.
constexpr StepForm kTimmForms[] = {
    {"timm_augment",
     "(CONFIG [interpolation=random|bilinear|bicubic] [fill=R,G,B] [translate_pct=F])", 0,
     static_cast<std::size_t>(-1), true, add_timm_augment}};

const StepDef kTimmSteps[] = {
    {.kind = StepKind::kTimmRandAugment,
     .name = "timm_augment",
     .shape = StepShape::kInPlace,
     .forms = kTimmForms,
     .describe = describe_timm,
     .max_ops = [](const Step& s) { return s.timm.num_ops; },
     .draw = draw,
     .apply = &Augmenter::apply_in_place},
    {.kind = StepKind::kTimmAugMix,
     .name = "timm_augment",
     .shape = StepShape::kInPlace,
     .forms = {},  // the form above makes both kinds
     .describe = describe_timm,
     // A mark and up to 3 drawn ops per chain, then the final blend.
     .max_ops =
         [](const Step& s) {
           return s.timm.width * (1 + (s.timm.depth > 0 ? s.timm.depth : 3)) +
                  (s.timm.blended ? 0 : 1);
         },
     .draw = draw,
     .apply = &Augmenter::apply_in_place},
};

}  // namespace

std::span<const StepDef> timm_steps() {
  return kTimmSteps;
}

}  // namespace stoke::detail
