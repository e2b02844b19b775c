#pragma once
// A pipeline step as the augmenter takes it: fixed-width fields at fixed offsets, so that the
// loader can copy the steps into the arena as they are (ipc/arena_layout.hpp) and a worker of
// the same layout version reads exactly what the loader wrote. The public stoke::Step describes
// a step for users; this is the augmenter's own record of it, free to stay put when the public
// type grows.
//
// Thread-safety: plain values.

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "stoke/pipeline.hpp"

namespace stoke::detail {

// stoke::TimmAugment in fixed-width fields.
struct AugmentTimm {
  std::int32_t magnitude = 0;
  std::int32_t num_ops = 0;
  float probability = 0.f;
  float magnitude_std = 0.f;  // may be infinite
  std::int32_t magnitude_max = 0;
  std::int32_t increasing = 0;
  std::int32_t width = 0;
  std::int32_t depth = 0;
  float alpha = 0.f;
  std::int32_t blended = 0;
  std::int32_t interpolation = 0;  // TimmInterpolation
  std::uint8_t fill[4] = {};       // r, g, b, unused
  float translate_pct = 0.f;
  std::uint32_t reserved[3] = {};
};
static_assert(sizeof(AugmentTimm) == 64);

inline AugmentTimm to_augment_timm(const TimmAugment& t) {
  return AugmentTimm{t.magnitude,
                     t.num_ops,
                     t.probability,
                     t.magnitude_std,
                     t.magnitude_max,
                     t.increasing ? 1 : 0,
                     t.width,
                     t.depth,
                     t.alpha,
                     t.blended ? 1 : 0,
                     static_cast<std::int32_t>(t.interpolation),
                     {t.fill[0], t.fill[1], t.fill[2], 0},
                     t.translate_pct,
                     {}};
}

struct AugmentStep {
  std::uint32_t kind = 0;  // StepKind
  std::int32_t size = 0;
  std::int32_t height = 0;
  std::int32_t width = 0;
  std::int32_t pad = 0;
  float probability = 0.f;
  float scale_min = 0.f;
  float scale_max = 0.f;
  float ratio_min = 0.f;
  float ratio_max = 0.f;
  float brightness = 0.f;
  float contrast = 0.f;
  std::int32_t size_max = 0;
  std::int32_t longer_side = 0;
  float min_visible = 0.f;
  float saturation = 0.f;
  float hue = 0.f;
  float threshold = 0.f;
  float factor = 0.f;
  std::int32_t bits = 0;
  std::int32_t kernel_width = 0;
  std::int32_t kernel_height = 0;
  float sigma_min = 0.f;
  float sigma_max = 0.f;
  float fill = 0.f;
  std::int32_t num_ops = 0;
  std::int32_t magnitude = 0;
  std::int32_t magnitude_bins = 0;
  std::int32_t policy = 0;
  std::int32_t erase_fill = 0;  // EraseFill
  float erase_value[3] = {};
  // kRandomErasing: 1 when the workers erase the uint8 pixels (a uint8 output), 0 when the
  // batch's normalize does (the workers then only write the rectangle). Set by the loader.
  std::int32_t erase_pixels = 0;
  std::uint32_t reserved[6] = {};
  AugmentTimm timm;         // kTimmRandAugment, kTimmAugMix
  float degrees_min = 0.f;  // kRandomAffine, with scale_min, scale_max and fill
  float degrees_max = 0.f;
  float translate_x = 0.f;
  float translate_y = 0.f;
  float shear_x_min = 0.f;
  float shear_x_max = 0.f;
  float shear_y_min = 0.f;
  float shear_y_max = 0.f;
  std::int32_t interpolation = 0;  // Interpolation: kRandomAffine, kAugMix
  // kAugMix's settings, narrow to fit the record (the pipeline bounds them far below).
  float alpha = 0.f;
  std::int16_t severity = 0;
  std::int16_t mixture_width = 0;
  std::int16_t chain_depth = 0;
  std::uint8_t all_ops = 0;
  std::uint8_t pad_augmix = 0;
  std::uint32_t reserved_tail[4] = {};

  StepKind step_kind() const { return static_cast<StepKind>(kind); }
};
static_assert(std::is_trivially_copyable_v<AugmentStep> && std::is_standard_layout_v<AugmentStep>);
static_assert(sizeof(AugmentStep) == 288 && offsetof(AugmentStep, min_visible) == 56 &&
              offsetof(AugmentStep, sigma_max) == 92 && offsetof(AugmentStep, erase_value) == 120 &&
              offsetof(AugmentStep, timm) == 160 && offsetof(AugmentStep, shear_y_max) == 252 &&
              offsetof(AugmentStep, alpha) == 260);

inline AugmentStep to_augment_step(const Step& s) {
  return AugmentStep{static_cast<std::uint32_t>(s.kind),
                     s.size,
                     s.height,
                     s.width,
                     s.pad,
                     s.probability,
                     s.scale_min,
                     s.scale_max,
                     s.ratio_min,
                     s.ratio_max,
                     s.brightness,
                     s.contrast,
                     s.size_max,
                     s.longer_side ? 1 : 0,
                     s.min_visible,
                     s.saturation,
                     s.hue,
                     s.threshold,
                     s.factor,
                     s.bits,
                     s.kernel_width,
                     s.kernel_height,
                     s.sigma_min,
                     s.sigma_max,
                     s.fill,
                     s.num_ops,
                     s.magnitude,
                     s.magnitude_bins,
                     static_cast<std::int32_t>(s.policy),
                     static_cast<std::int32_t>(s.erase_fill),
                     {s.erase_value[0], s.erase_value[1], s.erase_value[2]},
                     0,
                     {},
                     to_augment_timm(s.timm),
                     s.degrees_min,
                     s.degrees_max,
                     s.translate_x,
                     s.translate_y,
                     s.shear_x_min,
                     s.shear_x_max,
                     s.shear_y_min,
                     s.shear_y_max,
                     static_cast<std::int32_t>(s.interpolation),
                     s.alpha,
                     static_cast<std::int16_t>(s.severity),
                     static_cast<std::int16_t>(s.mixture_width),
                     static_cast<std::int16_t>(s.chain_depth),
                     static_cast<std::uint8_t>(s.all_ops ? 1 : 0),
                     0,
                     {}};
}

inline std::vector<AugmentStep> augment_steps(const Pipeline& p) {
  std::vector<AugmentStep> out;
  out.reserve(p.steps().size());
  for (const Step& s : p.steps()) out.push_back(to_augment_step(s));
  return out;
}

}  // namespace stoke::detail
