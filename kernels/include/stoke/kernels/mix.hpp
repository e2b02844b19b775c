#pragma once
// MixUp and CutMix on a normalized batch chunk (torchvision.transforms.v2's MixUp/CutMix and
// timm's Mixup, which mix the float tensors after Normalize and RandomErasing): each sample
// either stays as it is, becomes a weighted sum of itself and its partner (MixUp), or takes its
// partner's pixels inside a box (CutMix). Host-only header; the GPU launch is in mix_cuda.hpp.
//
// Thread safety: every function here is pure with respect to its arguments; concurrent calls
// are safe as long as their destination buffers do not overlap each other or a source.
//
// Numerics (identical on CPU and GPU, and to torch's): a MixUp element is
//   round(round(partner * partner_weight) + round(self * self_weight))
// with each round to the output type (torch's `x.roll(1, 0).mul_(1 - lam).add_(x.mul(lam))`:
// two products and a sum, never fused), where the weights are float32 numbers the caller
// chose (float32(lam) and float32(1 - lam)). A CutMix element is copied, bit for bit, from the
// partner inside [top, bottom) x [left, right), from the sample itself outside.

#include <cstddef>
#include <cstdint>

#include "stoke/kernels/normalize.hpp"
#include "stoke/mix_sample.hpp"

namespace stoke::kernels {

// The public types (stoke/mix_sample.hpp), as the kernels name them.
using MixOp = stoke::MixOp;
using MixSample = stoke::MixSample;

struct MixParams {
  // The normalized chunk: samples x channels x height x width (NCHW) or samples x height x
  // width x channels (NHWC), of dtype.
  int samples = 0, height = 0, width = 0, channels = 0;
  DType dtype = DType::kFloat32;  // a float type
  Layout layout = Layout::kNCHW;
  // One per sample: host memory for mix_cpu, device memory for mix_cuda.
  const MixSample* mix = nullptr;
};

// The mixing of what normalize(n) writes: its output's shape, type and layout.
MixParams mix_params(const NormalizeParams& n, const MixSample* mix);

// Throws std::invalid_argument naming the problem: non-positive sizes, channels outside 1..4,
// a uint8 or unknown dtype, an unknown layout, null samples.
void validate(const MixParams&);

#if defined(__CUDACC__)
#define STOKE_MIX_HOST_DEVICE __host__ __device__
#else
#define STOKE_MIX_HOST_DEVICE
#endif

// What sample n of `samples` really does: kNone for an unknown op, a partner outside the
// chunk, or (kCutMix) a box not inside a height x width image, so a bad entry never reads or
// writes outside the chunk (the kernels then copy the sample unchanged).
STOKE_MIX_HOST_DEVICE constexpr MixOp effective_op(const MixSample& m, int samples, int height,
                                                       int width) {
  if (m.partner < 0 || m.partner >= samples) return MixOp::kNone;
  if (m.op == MixOp::kMixUp) return m.op;
  if (m.op == MixOp::kCutMix && m.top >= 0 && m.left >= 0 && m.top <= m.bottom &&
      m.left <= m.right && m.bottom <= height && m.right <= width)
    return m.op;
  return MixOp::kNone;
}

// CPU reference, oneTBB-parallel over samples. Validates p first.
// REQUIRES: src is the normalized chunk p describes; dst is as large and overlaps no part of src.
void mix_cpu(const MixParams& p, const void* src, void* dst);

}  // namespace stoke::kernels
