#include "stoke/kernels/mix.hpp"

#include <tbb/blocked_range.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "float_chunk_checks.hpp"
#include "normalize_coeffs.hpp"
#include "parallel_for.hpp"

// MixUp's products and sum are rounded one by one, as torch's separate mul_ and add_ are and
// as the GPU kernel's __fmul_rn/__fadd_rn are: nothing is fused (the exact-float rule,
// cmake/StokeExactFloat.cmake).

namespace stoke::kernels {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("mix: " + what);
}

// One element type's loads, rounding and stores.
struct Float32 {
  using T = float;
  static float load(T v) { return v; }
  static T store(float v) { return v; }
};
struct Float16 {
  using T = std::uint16_t;
  static float load(T v) { return half_to_float(v); }
  static T store(float v) { return float_to_half_rn(v); }
};
struct BFloat16 {
  using T = std::uint16_t;
  static float load(T v) { return bfloat16_to_float(v); }
  static T store(float v) { return float_to_bfloat16_rn(v); }
};

template <class E>
typename E::T mixed(typename E::T self, typename E::T partner, float self_weight,
                    float partner_weight) {
  // Each product rounds to the element type before the sum, as torch's mul_ results do.
  const float a = E::load(E::store(E::load(partner) * partner_weight));
  const float b = E::load(E::store(E::load(self) * self_weight));
  return E::store(a + b);
}

template <class E>
void mix_sample(const MixParams& p, int n, const typename E::T* src, typename E::T* dst) {
  using T = typename E::T;
  const MixSample& m = p.mix[n];
  const std::size_t h = static_cast<std::size_t>(p.height), w = static_cast<std::size_t>(p.width);
  const std::size_t ch = static_cast<std::size_t>(p.channels);
  const std::size_t per = h * w * ch;
  const T* self = src + static_cast<std::size_t>(n) * per;
  T* out = dst + static_cast<std::size_t>(n) * per;
  switch (effective_op(m, p.samples, p.height, p.width)) {
    case MixOp::kNone:
      std::memcpy(out, self, per * sizeof(T));
      return;
    case MixOp::kMixUp: {
      const T* other = src + static_cast<std::size_t>(m.partner) * per;
      for (std::size_t i = 0; i < per; ++i)
        out[i] = mixed<E>(self[i], other[i], m.self_weight, m.partner_weight);
      return;
    }
    case MixOp::kCutMix: {
      const T* other = src + static_cast<std::size_t>(m.partner) * per;
      std::memcpy(out, self, per * sizeof(T));
      const auto top = static_cast<std::size_t>(m.top), bottom = static_cast<std::size_t>(m.bottom);
      const auto left = static_cast<std::size_t>(m.left), right = static_cast<std::size_t>(m.right);
      if (p.layout == Layout::kNCHW) {
        for (std::size_t c = 0; c < ch; ++c)
          for (std::size_t y = top; y < bottom; ++y) {
            const std::size_t at = (c * h + y) * w + left;
            std::memcpy(out + at, other + at, (right - left) * sizeof(T));
          }
      } else {
        for (std::size_t y = top; y < bottom; ++y) {
          const std::size_t at = (y * w + left) * ch;
          std::memcpy(out + at, other + at, (right - left) * ch * sizeof(T));
        }
      }
      return;
    }
  }
}

template <class E>
void mix_all(const MixParams& p, const void* src, void* dst) {
  const auto* in = static_cast<const typename E::T*>(src);
  auto* out = static_cast<typename E::T*>(dst);
  stoke::parallel_for(tbb::blocked_range<int>(0, p.samples), [&](const auto& range) {
    for (int n = range.begin(); n != range.end(); ++n) mix_sample<E>(p, n, in, out);
  });
}

}  // namespace

MixParams mix_params(const NormalizeParams& n, const MixSample* mix) {
  MixParams p;
  p.samples = n.samples;
  p.height = detail::resolved_out_height(n);
  p.width = detail::resolved_out_width(n);
  p.channels = n.channels;
  p.dtype = n.dtype;
  p.layout = n.layout;
  p.mix = mix;
  return p;
}

void validate(const MixParams& p) {
  detail::check_float_chunk("mix", p.samples, p.height, p.width, p.channels, p.dtype, p.layout,
                            "MixUp and CutMix mix normalized batches");
  if (p.mix == nullptr) fail("mix must not be null");
}

void mix_cpu(const MixParams& p, const void* src, void* dst) {
  validate(p);
  if (src == nullptr || dst == nullptr) fail("src and dst must not be null");
  switch (p.dtype) {
    case DType::kFloat32:
      mix_all<Float32>(p, src, dst);
      break;
    case DType::kFloat16:
      mix_all<Float16>(p, src, dst);
      break;
    case DType::kBFloat16:
      mix_all<BFloat16>(p, src, dst);
      break;
    case DType::kUInt8:
      break;  // rejected by validate()
  }
}

}  // namespace stoke::kernels
