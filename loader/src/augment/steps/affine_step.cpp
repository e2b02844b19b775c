// torchvision's RandomAffine: its builder, its text forms, its description and its draws. The
// warp itself is augment/geometric_ops.hpp's; boxes and masks follow it (augment/boxes.hpp,
// augment/masks.hpp).

#include <cmath>
#include <string>
#include <utility>

#include "augment/steps/step_def.hpp"
#include "stoke/error.hpp"

namespace stoke {

using detail::checked_fill;
using detail::fmt;
using detail::kMaxFactor;

namespace {

constexpr float kMaxDegrees = 360.f;
constexpr float kMaxShear = 90.f;  // exclusive: torchvision divides by cos(shear_y)

// RandomAffine(degrees) for one number: the range [-degrees, degrees].
RandomAffineRanges symmetric_degrees(float degrees) {
  if (!(degrees >= 0))
    throw ConfigError(
        "random_affine: a single degrees is the range [-degrees, degrees] and must be >= 0, got " +
        fmt(degrees));
  return RandomAffineRanges{.degrees_min = -degrees, .degrees_max = degrees};
}

}  // namespace

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

}  // namespace stoke

namespace stoke::detail {
namespace {

constexpr std::string_view kRandomAffineUsage =
    "(degrees) or (degrees_min, degrees_max[, translate_x, translate_y[, scale_min, "
    "scale_max[, shear_x_min, shear_x_max[, shear_y_min, shear_y_max[, fill]]]]])";

// degrees alone is [-degrees, degrees]; otherwise every range is a pair, in RandomAffine's
// order, then the fill: 1, 2, 4, 6, 8, 10 or 11 numbers.
template <Interpolation kInterpolation>
void add_random_affine(Pipeline& p, const StepNumbers& n) {
  const std::size_t k = n.size();
  if (k != 1 && k != 11 && k % 2 != 0) n.count(0, 0, kRandomAffineUsage);  // throws
  RandomAffineRanges r = k == 1 ? symmetric_degrees(n.number(0, 0))
                                : RandomAffineRanges{.degrees_min = n.number(0, 0),
                                                     .degrees_max = n.number(1, 0),
                                                     .translate_x = n.number(2, 0),
                                                     .translate_y = n.number(3, 0),
                                                     .scale_min = n.number(4, 1),
                                                     .scale_max = n.number(5, 1),
                                                     .shear_x_min = n.number(6, 0),
                                                     .shear_x_max = n.number(7, 0),
                                                     .shear_y_min = n.number(8, 0),
                                                     .shear_y_max = n.number(9, 0),
                                                     .fill = n.number(10, 0)};
  r.interpolation = kInterpolation;
  p.random_affine(r);
}

// RandomAffine.make_params: the angle; the translation when one is given, int(round(u)) pixels
// (Python's round: half to even) of a u drawn within +-translate times the side; the scale and
// the shears when given (the y shear when its range is). Each is a torch float32 draw.
void draw_random_affine(const Step& s, SampleRng& rng, int height, int width,
                        std::vector<AppliedOp>& out) {
  const auto draw = [&](double lo, double hi) { return static_cast<float>(rng.uniform(lo, hi)); };
  const float angle = draw(s.degrees_min, s.degrees_max);
  float tx = 0.f, ty = 0.f;
  if (s.translate_x > 0 || s.translate_y > 0) {
    const double max_dx = static_cast<double>(s.translate_x) * width;
    const double max_dy = static_cast<double>(s.translate_y) * height;
    tx = std::nearbyint(draw(-max_dx, max_dx));
    ty = std::nearbyint(draw(-max_dy, max_dy));
  }
  const float scale =
      s.scale_min != 1.f || s.scale_max != 1.f ? draw(s.scale_min, s.scale_max) : 1.f;
  float shear_x = 0.f, shear_y = 0.f;
  const bool shear_y_given = s.shear_y_min != 0.f || s.shear_y_max != 0.f;
  if (s.shear_x_min != 0.f || s.shear_x_max != 0.f || shear_y_given) {
    shear_x = draw(s.shear_x_min, s.shear_x_max);
    if (shear_y_given) shear_y = draw(s.shear_y_min, s.shear_y_max);
  }
  const ImageOp op =
      s.interpolation == Interpolation::kBilinear ? ImageOp::kAffineBilinear : ImageOp::kAffine;
  out.push_back({op, {angle, tx, ty, scale, shear_x, shear_y, s.fill}});
}

constexpr StepForm kRandomAffineForms[] = {
    {"random_affine", kRandomAffineUsage, 1, 11, false, add_random_affine<Interpolation::kNearest>},
    {"random_affine_bilinear", kRandomAffineUsage, 1, 11, false,
     add_random_affine<Interpolation::kBilinear>}};

const StepDef kAffineSteps[] = {
    {.kind = StepKind::kRandomAffine,
     .name = "random_affine",
     .shape = StepShape::kInPlace,
     .forms = kRandomAffineForms,
     .describe =
         [](std::ostream& out, const Step& s) {
           out << "random_affine degrees [" << fmt(s.degrees_min) << ", " << fmt(s.degrees_max)
               << "] translate [" << fmt(s.translate_x) << ", " << fmt(s.translate_y) << "] scale ["
               << fmt(s.scale_min) << ", " << fmt(s.scale_max) << "] shear x ["
               << fmt(s.shear_x_min) << ", " << fmt(s.shear_x_max) << "] y [" << fmt(s.shear_y_min)
               << ", " << fmt(s.shear_y_max) << "] "
               << (s.interpolation == Interpolation::kBilinear ? "bilinear" : "nearest") << " fill "
               << fmt(s.fill);
         },
     .max_ops = one_op,
     .draw = draw_random_affine,
     .apply = &Augmenter::apply_in_place},
};

}  // namespace

std::span<const StepDef> affine_steps() {
  return kAffineSteps;
}

}  // namespace stoke::detail
