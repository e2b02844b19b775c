// The steps that move the window: resizes, crops, flips and scale jitter. Each kind's builder,
// text forms, description and what the worker does are together below.

#include <algorithm>
#include <cmath>
#include <string>

#include "augment/steps/step_def.hpp"
#include "stoke/error.hpp"

namespace stoke {

using detail::check_side;
using detail::fmt;
using detail::kMaxSide;

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

Pipeline& Pipeline::horizontal_flip(float probability) {
  if (!(probability >= 0 && probability <= 1))
    throw ConfigError("horizontal_flip: probability must be in [0, 1], got " + fmt(probability));
  return add({.kind = StepKind::kHorizontalFlip, .probability = probability});
}

Pipeline& Pipeline::vertical_flip(float probability) {
  if (!(probability >= 0 && probability <= 1))
    throw ConfigError("vertical_flip: probability must be in [0, 1], got " + fmt(probability));
  return add({.kind = StepKind::kVerticalFlip, .probability = probability});
}

Pipeline& Pipeline::pad_random_crop(int pad, int height, int width) {
  if (pad < 0 || pad > kMaxSide)
    throw ConfigError("pad_random_crop: pad must be in 0.." + std::to_string(kMaxSide) + ", got " +
                      std::to_string(pad));
  check_side("pad_random_crop", "height", height);
  check_side("pad_random_crop", "width", width);
  return add({.kind = StepKind::kPadRandomCrop, .height = height, .width = width, .pad = pad});
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

}  // namespace stoke

namespace stoke::detail {

void Augmenter::apply_resize_shorter(Window& w, const Step& s, SampleRng&) {
  const double scale = static_cast<double>(s.size) / std::min(w.height, w.width);
  // A 1-pixel-high strip scaled up to `size` would ask for gigabytes (and overflow int).
  if (std::max(w.height, w.width) * scale > kMaxIntermediateSide) throw ImageTooLarge();
  if (w.height <= w.width)
    resize_to(w, s.size, static_cast<int>(w.width * scale));
  else
    resize_to(w, static_cast<int>(w.height * scale), s.size);
}

void Augmenter::apply_resize(Window& w, const Step& s, SampleRng&) {
  resize_to(w, s.height, s.width);
}

void Augmenter::apply_center_crop(Window& w, const Step& s, SampleRng&) {
  crop(w, static_cast<int>(std::nearbyint((w.width - s.width) / 2.0)),
       static_cast<int>(std::nearbyint((w.height - s.height) / 2.0)), s.width, s.height);
}

void Augmenter::apply_random_resized_crop(Window& w, const Step& s, SampleRng& rng) {
  random_resized_crop(w, s, rng, false);
}

void Augmenter::apply_box_crop(Window& w, const Step& s, SampleRng& rng) {
  random_resized_crop(w, s, rng, true);
}

void Augmenter::apply_horizontal_flip(Window& w, const Step& s, SampleRng& rng) {
  if (rng.bernoulli(s.probability)) w.flip = !w.flip;
}

void Augmenter::apply_vertical_flip(Window& w, const Step& s, SampleRng& rng) {
  if (rng.bernoulli(s.probability)) w.vflip = !w.vflip;
}

void Augmenter::apply_pad_random_crop(Window& w, const Step& s, SampleRng& rng) {
  const int span_x = w.width + 2 * s.pad - s.width;
  const int span_y = w.height + 2 * s.pad - s.height;
  const int x = span_x >= 0 ? static_cast<int>(rng.below(span_x + 1)) - s.pad : span_x / 2 - s.pad;
  const int y = span_y >= 0 ? static_cast<int>(rng.below(span_y + 1)) - s.pad : span_y / 2 - s.pad;
  crop(w, x, y, s.width, s.height);
}

void Augmenter::apply_scale_jitter(Window& w, const Step& s, SampleRng& rng) {
  const int side =
      s.size + static_cast<int>(rng.below(static_cast<std::uint64_t>(s.size_max - s.size) + 1));
  const int reference = s.longer_side ? std::max(w.height, w.width) : std::min(w.height, w.width);
  const double scale = static_cast<double>(side) / reference;
  if (std::max(w.height, w.width) * scale > kMaxIntermediateSide) throw ImageTooLarge();
  resize_to(w, std::max(1, static_cast<int>(std::lround(w.height * scale))),
            std::max(1, static_cast<int>(std::lround(w.width * scale))));
}

// torchvision's RandomResizedCrop.get_params, drawing from the sample's generator; box_crop
// (`keep_box`) takes only a window that keeps enough of some box.
void Augmenter::random_resized_crop(Window& w, const Step& s, SampleRng& rng, bool keep_box) {
  const double area = static_cast<double>(w.width) * w.height;
  const double log_lo = std::log(static_cast<double>(s.ratio_min));
  const double log_hi = std::log(static_cast<double>(s.ratio_max));
  int cw = 0, ch = 0, cx = 0, cy = 0;
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double target = area * rng.uniform(s.scale_min, s.scale_max);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    cw = static_cast<int>(std::nearbyint(std::sqrt(target * aspect)));
    ch = static_cast<int>(std::nearbyint(std::sqrt(target / aspect)));
    if (cw > 0 && cw <= w.width && ch > 0 && ch <= w.height) {
      cy = static_cast<int>(rng.below(w.height - ch + 1));
      cx = static_cast<int>(rng.below(w.width - cw + 1));
      found = !keep_box || keeps_a_box(w, cx, cy, cw, ch, s.min_visible);
    }
  }
  if (!found && keep_box) {  // no window kept a box: the whole image
    cx = cy = 0;
    cw = w.width;
    ch = w.height;
  } else if (!found) {  // fall back to a centre crop at the nearest allowed aspect ratio
    const double in_ratio = static_cast<double>(w.width) / w.height;
    if (in_ratio < s.ratio_min) {
      cw = w.width;
      ch = static_cast<int>(std::nearbyint(cw / static_cast<double>(s.ratio_min)));
    } else if (in_ratio > s.ratio_max) {
      ch = w.height;
      cw = static_cast<int>(std::nearbyint(ch * static_cast<double>(s.ratio_max)));
    } else {
      cw = w.width;
      ch = w.height;
    }
    cy = (w.height - ch) / 2;
    cx = (w.width - cw) / 2;
  }
  crop(w, cx, cy, std::max(cw, 1), std::max(ch, 1));
  resize_to(w, s.height, s.width);
}

namespace {

// The text forms.
constexpr StepForm kResizeShorterForms[] = {
    {"resize_shorter", "(size)", 1, 1, false,
     [](Pipeline& p, const StepNumbers& n) { p.resize_shorter(n.whole(0)); }}};
constexpr StepForm kResizeForms[] = {
    {"resize", "(height, width)", 2, 2, false,
     [](Pipeline& p, const StepNumbers& n) { p.resize(n.whole(0), n.whole(1)); }}};
constexpr StepForm kCenterCropForms[] = {
    {"center_crop", "(height, width)", 2, 2, false,
     [](Pipeline& p, const StepNumbers& n) { p.center_crop(n.whole(0), n.whole(1)); }}};
constexpr StepForm kRandomResizedCropForms[] = {
    {"random_resized_crop", "(height, width[, scale_min, scale_max, ratio_min, ratio_max])", 2, 6,
     false, [](Pipeline& p, const StepNumbers& n) {
       p.random_resized_crop(n.whole(0), n.whole(1), n.number(2, 0.08f), n.number(3, 1.0f),
                             n.number(4, 3.f / 4.f), n.number(5, 4.f / 3.f));
     }}};
constexpr StepForm kBoxCropForms[] = {
    {"box_crop", "(height, width[, min_visible, scale_min, scale_max, ratio_min, ratio_max])", 2, 7,
     false, [](Pipeline& p, const StepNumbers& n) {
       p.box_crop(n.whole(0), n.whole(1), n.number(2, 0.5f), n.number(3, 0.1f), n.number(4, 1.0f),
                  n.number(5, 0.5f), n.number(6, 2.0f));
     }}};
constexpr StepForm kHorizontalFlipForms[] = {
    {"horizontal_flip", "([probability])", 0, 1, false,
     [](Pipeline& p, const StepNumbers& n) { p.horizontal_flip(n.number(0, 0.5f)); }}};
constexpr StepForm kVerticalFlipForms[] = {
    {"vertical_flip", "([probability])", 0, 1, false,
     [](Pipeline& p, const StepNumbers& n) { p.vertical_flip(n.number(0, 0.5f)); }}};
constexpr StepForm kPadRandomCropForms[] = {
    {"pad_random_crop", "(pad, height, width)", 3, 3, false, [](Pipeline& p, const StepNumbers& n) {
       p.pad_random_crop(n.whole(0), n.whole(1), n.whole(2));
     }}};
constexpr StepForm kScaleJitterForms[] = {{"scale_jitter", "(min_side, max_side[, longer_side])", 2,
                                           3, false, [](Pipeline& p, const StepNumbers& n) {
                                             p.scale_jitter(n.whole(0), n.whole(1),
                                                            n.size() > 2 && n.numbers()[2] != 0);
                                           }}};

void describe_size(std::ostream& out, const Step& s) {
  out << s.height << "x" << s.width;
}

void describe_window_draws(std::ostream& out, const Step& s) {
  out << " scale [" << fmt(s.scale_min) << ", " << fmt(s.scale_max) << "] ratio ["
      << fmt(s.ratio_min) << ", " << fmt(s.ratio_max) << "]";
}

const StepDef kGeometricSteps[] = {
    {.kind = StepKind::kResizeShorter,
     .name = "resize_shorter",
     .shape = StepShape::kShorterSide,
     .forms = kResizeShorterForms,
     .describe = [](std::ostream& out, const Step& s) { out << "resize_shorter " << s.size; },
     .max_ops = no_ops,
     .apply = &Augmenter::apply_resize_shorter},
    {.kind = StepKind::kResize,
     .name = "resize",
     .shape = StepShape::kSetsSize,
     .forms = kResizeForms,
     .describe =
         [](std::ostream& out, const Step& s) {
           out << "resize ";
           describe_size(out, s);
         },
     .max_ops = no_ops,
     .apply = &Augmenter::apply_resize},
    {.kind = StepKind::kCenterCrop,
     .name = "center_crop",
     .shape = StepShape::kSetsSize,
     .forms = kCenterCropForms,
     .describe =
         [](std::ostream& out, const Step& s) {
           out << "center_crop ";
           describe_size(out, s);
         },
     .max_ops = no_ops,
     .apply = &Augmenter::apply_center_crop},
    {.kind = StepKind::kRandomResizedCrop,
     .name = "random_resized_crop",
     .shape = StepShape::kSetsSize,
     .forms = kRandomResizedCropForms,
     .describe =
         [](std::ostream& out, const Step& s) {
           out << "random_resized_crop ";
           describe_size(out, s);
           describe_window_draws(out, s);
         },
     .max_ops = no_ops,
     .apply = &Augmenter::apply_random_resized_crop},
    {.kind = StepKind::kBoxCrop,
     .name = "box_crop",
     .shape = StepShape::kSetsSize,
     .forms = kBoxCropForms,
     .describe =
         [](std::ostream& out, const Step& s) {
           out << "box_crop ";
           describe_size(out, s);
           out << " min_visible " << fmt(s.min_visible);
           describe_window_draws(out, s);
         },
     .max_ops = no_ops,
     .apply = &Augmenter::apply_box_crop},
    {.kind = StepKind::kHorizontalFlip,
     .name = "horizontal_flip",
     .shape = StepShape::kKeepsSize,
     .forms = kHorizontalFlipForms,
     .describe = [](std::ostream& out,
                    const Step& s) { out << "horizontal_flip p=" << fmt(s.probability); },
     .max_ops = no_ops,
     .apply = &Augmenter::apply_horizontal_flip},
    {.kind = StepKind::kVerticalFlip,
     .name = "vertical_flip",
     .shape = StepShape::kKeepsSize,
     .forms = kVerticalFlipForms,
     .describe = [](std::ostream& out,
                    const Step& s) { out << "vertical_flip p=" << fmt(s.probability); },
     .max_ops = no_ops,
     .apply = &Augmenter::apply_vertical_flip},
    {.kind = StepKind::kPadRandomCrop,
     .name = "pad_random_crop",
     .shape = StepShape::kSetsSize,
     .forms = kPadRandomCropForms,
     .describe =
         [](std::ostream& out, const Step& s) {
           out << "pad_random_crop pad " << s.pad << " to ";
           describe_size(out, s);
         },
     .max_ops = no_ops,
     .apply = &Augmenter::apply_pad_random_crop},
    {.kind = StepKind::kScaleJitter,
     .name = "scale_jitter",
     .shape = StepShape::kDrawnSize,
     .forms = kScaleJitterForms,
     .describe =
         [](std::ostream& out, const Step& s) {
           out << "scale_jitter " << (s.longer_side ? "longer" : "shorter") << " side " << s.size
               << ".." << s.size_max;
         },
     .max_ops = no_ops,
     .apply = &Augmenter::apply_scale_jitter},
};

}  // namespace

std::span<const StepDef> geometric_steps() {
  return kGeometricSteps;
}

}  // namespace stoke::detail
