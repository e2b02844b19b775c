// The step records (augment/steps/step_def.hpp): one for every kind, read by the parser,
// validation, describe(), max_applied_ops() and the worker; the text forms' defaults are the
// C++ builders' defaults.

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "augment/steps/step_def.hpp"
#include "stoke/error.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {
namespace {

constexpr int kLastKind = static_cast<int>(StepKind::kTimmAugMix);

TEST(StepRecords, EveryKindHasOneRecordAndNoOtherNumberHasOne) {
  EXPECT_EQ(find_step(StepKind{}), nullptr);
  EXPECT_EQ(find_step(static_cast<StepKind>(kLastKind + 1)), nullptr);
  EXPECT_EQ(find_step(static_cast<StepKind>(1000)), nullptr);
  std::set<int> seen;
  for (const StepDef* d : step_defs()) EXPECT_TRUE(seen.insert(static_cast<int>(d->kind)).second);
  for (int k = 1; k <= kLastKind; ++k) {
    const StepDef* d = find_step(static_cast<StepKind>(k));
    ASSERT_NE(d, nullptr) << "step kind " << k;
    EXPECT_EQ(static_cast<int>(d->kind), k);
    EXPECT_TRUE(seen.count(k)) << d->name;
    EXPECT_FALSE(d->name.empty());
    EXPECT_NE(d->describe, nullptr) << d->name;
    EXPECT_NE(d->max_ops, nullptr) << d->name;
    EXPECT_NE(d->apply, nullptr) << d->name;
    // In-place steps draw ops; the others move the window and draw none.
    EXPECT_EQ(d->shape == StepShape::kInPlace, works_in_place(d->kind)) << d->name;
    EXPECT_EQ(d->draw != nullptr, works_in_place(d->kind)) << d->name;
    EXPECT_EQ(d->shape == StepShape::kLast, d->kind == StepKind::kRandomErasing) << d->name;
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kLastKind));
  EXPECT_THROW(step_def(static_cast<StepKind>(99)), ConfigError);
}

TEST(StepRecords, FormNamesAreUniqueAndTheUnknownStepMessageListsThemAll) {
  std::set<std::string> names;
  const std::vector<StepFormInfo> forms = step_forms();
  for (const StepFormInfo& f : forms) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_FALSE(f.usage.empty()) << f.name;
    const StepDef* def = nullptr;
    ASSERT_NE(find_form(f.name, &def), nullptr) << f.name;
    ASSERT_NE(def, nullptr);
  }
  EXPECT_EQ(find_form("spin"), nullptr);
  try {
    make_pipeline(32, 32, 3, {{"spin", {3}, {}}});
    FAIL() << "an unknown step was taken";
  } catch (const ConfigError& e) {
    const std::string what = std::string(e.what()) + ",";  // so that every name ends in a comma
    EXPECT_EQ(what.rfind("pipeline step 'spin' is not one of resize_shorter, resize, ", 0), 0u)
        << what;
    for (const StepFormInfo& f : forms)
      EXPECT_NE(what.find(" " + f.name + ","), std::string::npos) << f.name << ": " << what;
  }
}

// Each form with the fewest numbers it takes, against the C++ builder with its defaults: the
// same step, field for field (Step is a plain record: its bytes), of the form's record.
struct FormCase {
  std::string text;
  std::function<void(Pipeline&)> builder;
};

std::vector<FormCase> form_cases() {
  return {
      {"resize_shorter 40", [](Pipeline& p) { p.resize_shorter(40); }},
      {"resize 32 32", [](Pipeline& p) { p.resize(32, 32); }},
      {"center_crop 32 32", [](Pipeline& p) { p.center_crop(32, 32); }},
      {"random_resized_crop 32 32", [](Pipeline& p) { p.random_resized_crop(32, 32); }},
      {"box_crop 32 32", [](Pipeline& p) { p.box_crop(32, 32); }},
      {"horizontal_flip", [](Pipeline& p) { p.horizontal_flip(); }},
      {"vertical_flip", [](Pipeline& p) { p.vertical_flip(); }},
      {"pad_random_crop 4 32 32", [](Pipeline& p) { p.pad_random_crop(4, 32, 32); }},
      {"scale_jitter 32 48", [](Pipeline& p) { p.scale_jitter(32, 48); }},
      {"color_jitter 0.4", [](Pipeline& p) { p.color_jitter(0.4f, 0.f); }},
      {"grayscale", [](Pipeline& p) { p.grayscale(); }},
      {"random_grayscale", [](Pipeline& p) { p.grayscale(0.1f); }},
      {"gaussian_blur 3", [](Pipeline& p) { p.gaussian_blur(3, 3); }},
      {"solarize 128", [](Pipeline& p) { p.solarize(128); }},
      {"random_solarize 128", [](Pipeline& p) { p.solarize(128, 0.5f); }},
      {"posterize 4", [](Pipeline& p) { p.posterize(4); }},
      {"random_posterize 4", [](Pipeline& p) { p.posterize(4, 0.5f); }},
      {"equalize", [](Pipeline& p) { p.equalize(); }},
      {"random_equalize", [](Pipeline& p) { p.equalize(0.5f); }},
      {"autocontrast", [](Pipeline& p) { p.autocontrast(); }},
      {"random_autocontrast", [](Pipeline& p) { p.autocontrast(0.5f); }},
      {"adjust_sharpness 2", [](Pipeline& p) { p.adjust_sharpness(2); }},
      {"random_adjust_sharpness 2", [](Pipeline& p) { p.adjust_sharpness(2, 0.5f); }},
      {"invert", [](Pipeline& p) { p.invert(); }},
      {"random_invert", [](Pipeline& p) { p.invert(0.5f); }},
      {"trivial_augment_wide", [](Pipeline& p) { p.trivial_augment_wide(); }},
      {"rand_augment", [](Pipeline& p) { p.rand_augment(); }},
      {"auto_augment", [](Pipeline& p) { p.auto_augment(); }},
      {"auto_augment_imagenet", [](Pipeline& p) { p.auto_augment(AutoAugmentPolicy::kImageNet); }},
      {"auto_augment_cifar10", [](Pipeline& p) { p.auto_augment(AutoAugmentPolicy::kCifar10); }},
      {"auto_augment_svhn", [](Pipeline& p) { p.auto_augment(AutoAugmentPolicy::kSvhn); }},
      {"augmix", [](Pipeline& p) { p.augmix(); }},
      {"timm_augment rand-m9-mstd0.5-inc1",
       [](Pipeline& p) { p.timm_augment("rand-m9-mstd0.5-inc1"); }},
      {"random_erasing", [](Pipeline& p) { p.random_erasing(); }},
      {"random_erasing_pixel",
       [](Pipeline& p) {
         p.random_erasing(0.5f, 0.02f, 0.33f, 0.3f, 3.3f, EraseFill::kPixelNoise);
       }},
      {"random_erasing_color",
       [](Pipeline& p) {
         p.random_erasing(0.5f, 0.02f, 0.33f, 0.3f, 3.3f, EraseFill::kChannelNoise);
       }},
      {"random_affine 15", [](Pipeline& p) { p.random_affine(15.f); }},
      {"random_affine_bilinear 15",
       [](Pipeline& p) {
         p.random_affine(
             {.degrees_min = -15, .degrees_max = 15, .interpolation = Interpolation::kBilinear});
       }},
  };
}

bool same_step(const Step& a, const Step& b) {
  // Compared field by field through describe() and the fields describe() leaves out.
  return step_def(a.kind).name == step_def(b.kind).name && a.kind == b.kind &&
         [&] {
           std::ostringstream x, y;
           step_def(a.kind).describe(x, a);
           step_def(b.kind).describe(y, b);
           return x.str() == y.str();
         }() &&
         a.probability == b.probability && a.interpolation == b.interpolation &&
         a.erase_fill == b.erase_fill && a.policy == b.policy && a.fill == b.fill;
}

TEST(StepRecords, EveryFormMakesItsRecordsStepWithTheBuildersDefaults) {
  const std::vector<FormCase> cases = form_cases();
  std::set<std::string> covered;
  for (const FormCase& c : cases) {
    SCOPED_TRACE(c.text);
    const std::vector<StepSpec> specs = parse_steps(c.text);
    ASSERT_EQ(specs.size(), 1u);
    const Pipeline text = make_pipeline(32, 32, 3, specs);
    Pipeline built(32, 32, 3);
    c.builder(built);
    ASSERT_EQ(text.steps().size(), 1u);
    ASSERT_EQ(built.steps().size(), 1u);
    const Step& s = text.steps()[0];
    EXPECT_TRUE(same_step(s, built.steps()[0])) << text.describe() << "\nvs\n" << built.describe();
    const StepDef* def = nullptr;
    ASSERT_NE(find_form(specs[0].name, &def), nullptr);
    EXPECT_EQ(def->kind == s.kind ||
                  (def->kind == StepKind::kTimmRandAugment && s.kind == StepKind::kTimmAugMix),
              true);
    // describe() starts with the record's name; max_applied_ops() is the record's count.
    EXPECT_EQ(text.describe().rfind(std::string(step_def(s.kind).name) + " ", 0), 0u)
        << text.describe();
    EXPECT_EQ(text.max_applied_ops(), step_def(s.kind).max_ops(s));
    covered.insert(specs[0].name);
  }
  // A form added without a case here fails this test.
  for (const StepFormInfo& f : step_forms()) EXPECT_TRUE(covered.count(f.name)) << f.name;
}

TEST(StepRecords, TheFormsCountsAndTheirUsageAreTheMessages) {
  const auto error = [](const std::string& text) {
    try {
      make_pipeline(32, 32, 3, parse_steps(text));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const StepFormInfo& f : step_forms()) {
    const StepForm* form = find_form(f.name);
    ASSERT_NE(form, nullptr);
    if (form->max_numbers > 20) continue;  // timm_augment and augmix: words, their own errors
    std::string text = f.name;
    for (std::size_t i = 0; i <= form->max_numbers; ++i) text += " 1";
    EXPECT_EQ(error(text), "pipeline step " + f.name + " takes " + f.usage + ", got " +
                               std::to_string(form->max_numbers + 1) + " number(s)");
  }
}

}  // namespace
}  // namespace stoke::detail
