// torchvision's RandomErasing on the delivered image: its builder, its text forms, its
// description, and what the worker does (it draws the rectangle; a uint8 output takes it at
// once, a float output's normalize later: kernels/src/erase.cpp).

#include <cmath>
#include <string>

#include "augment/steps/step_def.hpp"
#include "stoke/error.hpp"

namespace stoke {

using detail::fmt;

Pipeline& Pipeline::random_erasing(float probability, float scale_min, float scale_max,
                                   float ratio_min, float ratio_max, EraseFill fill, float value_r,
                                   float value_g, float value_b) {
  Step s{.kind = StepKind::kRandomErasing};
  s.probability = detail::checked_probability("random_erasing", probability);
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

}  // namespace stoke

namespace stoke::detail {

// The rectangle of torchvision's RandomErasing.get_params on the output, into erase_.
void Augmenter::apply_erasing(Window&, const Step& s, SampleRng& rng) {
  if (!rng.bernoulli(s.probability)) return;
  const int height = out_height_, width = out_width_;  // validation: the step is the last
  const double area = static_cast<double>(height) * width;
  const double log_lo = std::log(static_cast<double>(s.ratio_min));
  const double log_hi = std::log(static_cast<double>(s.ratio_max));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(s.scale_min, s.scale_max);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int h = static_cast<int>(std::nearbyint(std::sqrt(target * aspect)));
    const int w = static_cast<int>(std::nearbyint(std::sqrt(target / aspect)));
    if (!(h < height && w < width)) continue;
    erase_.top = static_cast<int>(rng.below(static_cast<std::uint64_t>(height - h + 1)));
    erase_.left = static_cast<int>(rng.below(static_cast<std::uint64_t>(width - w + 1)));
    erase_.height = h;
    erase_.width = w;
    const EraseFill fill = s.erase_fill;
    if (fill == EraseFill::kConstant) {
      erase_.mode = kernels::EraseMode::kConstant;
      for (int c = 0; c < 3; ++c) erase_.value[c] = s.erase_value[c];
    } else {
      erase_.mode = fill == EraseFill::kPixelNoise ? kernels::EraseMode::kPixelNoise
                                                   : kernels::EraseMode::kChannelNoise;
      const std::uint64_t key = rng.next() & 0xffffffffffffull;  // 48 bits: the record's three
      erase_.key_lo = static_cast<std::uint32_t>(key);
      erase_.key_hi = static_cast<std::uint32_t>(key >> 32);
    }
    // A rectangle of no area (a tiny scale) erases nothing, as torchvision's empty slice.
    if (h == 0 || w == 0) erase_ = kernels::EraseBox{};
    return;
  }
}

void Augmenter::finish_erasing(std::uint8_t* dst) {
  const kernels::EraseBox& b = erase_;
  if (b.mode == kernels::EraseMode::kNone) return;
  ColorOpArgs op;
  op.args[0] = static_cast<float>(b.top);
  op.args[1] = static_cast<float>(b.left);
  op.args[2] = static_cast<float>(b.height);
  op.args[3] = static_cast<float>(b.width);
  if (b.mode == kernels::EraseMode::kConstant) {
    op.op = ImageOp::kErase;
    for (int k = 0; k < 3; ++k) op.args[4 + k] = b.value[k];
  } else {
    op.op = b.mode == kernels::EraseMode::kPixelNoise ? ImageOp::kEraseNoise
                                                      : ImageOp::kEraseChannelNoise;
    const std::uint64_t key = static_cast<std::uint64_t>(b.key_hi) << 32 | b.key_lo;
    for (int k = 0; k < 3; ++k) op.args[4 + k] = static_cast<float>((key >> (16 * k)) & 0xffff);
  }
  // A uint8 output takes the levels now (config refuses noise there).
  if (erase_pixels_)
    apply_color_op(op,
                   Pixels{dst, out_height_, out_width_, out_channels_,
                          static_cast<std::size_t>(out_width_) * out_channels_},
                   photometric_);
  applied_.push_back(op);
}

namespace {

// random_erasing's forms: a constant fill (one value or three), or noise per value or per
// channel (no values).
constexpr std::string_view kConstantUsage =
    "([probability, scale_min, scale_max, ratio_min, ratio_max, value or value_r value_g "
    "value_b])";
constexpr std::string_view kNoiseUsage =
    "([probability, scale_min, scale_max, ratio_min, ratio_max])";

template <EraseFill kFill>
void add_random_erasing(Pipeline& p, const StepNumbers& n) {
  if (n.size() == 7) n.count(0, 0, kConstantUsage);  // one value or three: throws
  const float r = n.number(5, 0.f);
  p.random_erasing(n.number(0, 0.5f), n.number(1, 0.02f), n.number(2, 0.33f), n.number(3, 0.3f),
                   n.number(4, 3.3f), kFill, r, n.number(6, r), n.number(7, r));
}

constexpr StepForm kRandomErasingForms[] = {
    {"random_erasing", kConstantUsage, 0, 8, false, add_random_erasing<EraseFill::kConstant>},
    {"random_erasing_pixel", kNoiseUsage, 0, 5, false, add_random_erasing<EraseFill::kPixelNoise>},
    {"random_erasing_color", kNoiseUsage, 0, 5, false,
     add_random_erasing<EraseFill::kChannelNoise>}};

const StepDef kErasingSteps[] = {
    {.kind = StepKind::kRandomErasing,
     .name = "random_erasing",
     .shape = StepShape::kLast,
     .forms = kRandomErasingForms,
     .describe =
         [](std::ostream& out, const Step& s) {
           out << "random_erasing p=" << fmt(s.probability) << " scale [" << fmt(s.scale_min)
               << ", " << fmt(s.scale_max) << "] ratio [" << fmt(s.ratio_min) << ", "
               << fmt(s.ratio_max) << "] ";
           if (s.erase_fill == EraseFill::kPixelNoise)
             out << "fill N(0, 1) per value";
           else if (s.erase_fill == EraseFill::kChannelNoise)
             out << "fill N(0, 1) per channel";
           else
             out << "value " << fmt(s.erase_value[0]) << " " << fmt(s.erase_value[1]) << " "
                 << fmt(s.erase_value[2]);
         },
     .max_ops = one_op,
     .apply = &Augmenter::apply_erasing},
};

}  // namespace

std::span<const StepDef> erasing_steps() {
  return kErasingSteps;
}

}  // namespace stoke::detail
