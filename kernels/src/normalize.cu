// GPU normalize. The grid follows the output layout, so that no element needs a division or a
// modulo:
//   NCHW: blockIdx.z walks the (sample, channel) planes, y the output rows, x a row's columns. A
//         block keeps one channel for its whole life, so its scale and bias are two registers.
//   NHWC: blockIdx.z walks the samples, y the output rows, x a row's out_width * channels
//         elements. A thread finds the channel of its first element with one division per row and
//         steps through the channels from there.
// Each thread writes one group of kVector consecutive outputs (16 bytes) of each row it visits.
// Groups sit on the destination's 16-byte boundaries rather than on the row start, so every whole
// group is one 16-byte store whatever the row width, crop or base alignment; only the groups cut by
// a row's ends are written element by element.
//
// Within a row, indices are 32-bit (normalize_cuda rejects rows too wide for that); the offsets of
// samples and rows, which can pass 2^31, are 64-bit.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_check.hpp"
#include "normalize_coeffs.hpp"
#include "stoke/kernels/normalize.hpp"
#include "stoke/kernels/normalize_cuda.hpp"

namespace stoke::detail {
namespace {

constexpr unsigned kThreads = 256;      // per block
constexpr unsigned kMaxGridYZ = 65535;  // CUDA's limit on gridDim.y and gridDim.z
// The widest source row (width * channels bytes) the 32-bit row indices allow, with room for the
// groups a grid row launches past the row's end.
constexpr std::size_t kMaxRowBytes = std::size_t{1} << 30;

// Everything the kernels need, by value; no device allocation anywhere.
struct NormalizeShape {
  int samples, height, width, channels, crop_y, crop_x, out_height, out_width;
};

// Channel-periodic values for NHWC rows: entry i belongs to channel i % channels. A thread whose
// first element has channel c0 (< channels <= 4) reads entries c0..c0+3, hence 7 entries.
struct ChannelCycle {
  float scale[7];
  float bias[7];
  // Source offset step after an element of that channel in a flipped sample: +1 to the pixel's
  // next channel, or from its last channel back to the first channel of the pixel to its left.
  int flipped_step[7];
};

__device__ inline unsigned pack2(unsigned short lo, unsigned short hi) {
  return static_cast<unsigned>(lo) | static_cast<unsigned>(hi) << 16;
}

// Each output type: its rounding from float (the same as normalize_cpu's), and how kVector
// elements, lowest address first, make one 16-byte store.
struct StoreFloat32 {
  using Out = float;
  static constexpr int kVector = 4;
  __device__ static Out convert(float v) { return v; }
  __device__ static uint4 pack(const Out (&v)[kVector]) {
    return make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]),
                      __float_as_uint(v[3]));
  }
};
struct StoreFloat16 {
  using Out = unsigned short;
  static constexpr int kVector = 8;
  __device__ static Out convert(float v) { return __half_as_ushort(__float2half_rn(v)); }
  __device__ static uint4 pack(const Out (&v)[kVector]) {
    return make_uint4(pack2(v[0], v[1]), pack2(v[2], v[3]), pack2(v[4], v[5]), pack2(v[6], v[7]));
  }
};
struct StoreBFloat16 {
  using Out = unsigned short;
  static constexpr int kVector = 8;
  __device__ static Out convert(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
  __device__ static uint4 pack(const Out (&v)[kVector]) { return StoreFloat16::pack(v); }
};

// Entry k of (v0, v1, v2, v3) by selects: indexing an array with a runtime k would put the array
// in local memory.
template <class T>
__device__ inline T pick(unsigned k, T v0, T v1, T v2, T v3) {
  return k == 0 ? v0 : k == 1 ? v1 : k == 2 ? v2 : v3;
}

// The values of channels c, c+1, c+2, c+3 (mod channels), c being the current element's channel.
// Moving to the next element shifts the ring by one; the entry that comes in, channel c+4, is the
// one `channels` entries back: v[1] for 3 channels, v[0] for 4, and for 1 and 2 channels, whose
// rings repeat with period 4 anyway, v[0] too. So a step is register moves and one select.
template <class T>
struct ChannelRing {
  T v[4];

  ChannelRing() = default;
  // REQUIRES: c0 < channels; cycle is a ChannelCycle table for these channels.
  __device__ ChannelRing(const T (&cycle)[7], unsigned c0)
      : v{pick(c0, cycle[0], cycle[1], cycle[2], cycle[3]),
          pick(c0, cycle[1], cycle[2], cycle[3], cycle[4]),
          pick(c0, cycle[2], cycle[3], cycle[4], cycle[5]),
          pick(c0, cycle[3], cycle[4], cycle[5], cycle[6])} {}
  __device__ T current() const { return v[0]; }
  __device__ void advance(bool three_channels) {
    const T incoming = three_channels ? v[1] : v[0];
    v[0] = v[1];
    v[1] = v[2];
    v[2] = v[3];
    v[3] = incoming;
  }
};

// The outputs [lo, hi) of a row of `width` elements that this thread writes (none when lo >= hi):
// group g starts g * kVector elements after the 16-byte boundary at or before the row start.
// REQUIRES: row is aligned to its element size (normalize_cuda's contract on d_dst).
struct Span {
  int lo, hi;
};
template <class Store>
__device__ inline Span group_span(const typename Store::Out* row, int width) {
  const int past_boundary = static_cast<int>(reinterpret_cast<std::uintptr_t>(row) /
                                             sizeof(typename Store::Out) % Store::kVector);
  const int first =
      static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * Store::kVector - past_boundary;
  const int last = first + Store::kVector;
  return {first > 0 ? first : 0, last < width ? last : width};
}

// A row's source, read in output order: value() is the current output before rounding, advance()
// moves to the next output. Cursors never step outside the source row: write_group advances only
// between the outputs it writes.

// NCHW: one channel of the row's pixels, left to right or, flipped, right to left.
struct PlaneCursor {
  const std::uint8_t* at;
  int step;  // +-channels
  float scale, bias;

  __device__ float value() const { return __fmaf_rn(static_cast<float>(*at), scale, bias); }
  __device__ void advance() { at += step; }
};

// NHWC: the row's channels in order within each pixel; the pixels left to right or, flipped,
// right to left.
template <bool kFlipped>
struct PixelCursor {
  const std::uint8_t* at;
  ChannelRing<float> scale, bias;
  ChannelRing<int> step;  // read only when kFlipped
  bool three_channels;

  __device__ float value() const {
    return __fmaf_rn(static_cast<float>(*at), scale.current(), bias.current());
  }
  __device__ void advance() {
    at += kFlipped ? step.current() : 1;
    scale.advance(three_channels);
    bias.advance(three_channels);
    if (kFlipped) step.advance(three_channels);
  }
};

// Writes row[span.lo, span.hi), taking the values in order from `src`, which starts at span.lo. A
// whole group is one 16-byte store; its alignment holds by group_span's construction and is
// checked anyway, because a misaligned vector store faults where scalar stores are merely slower.
// REQUIRES: span.lo < span.hi.
template <class Store, class Cursor>
__device__ inline void write_group(typename Store::Out* __restrict__ row, Span span, Cursor& src) {
  using Out = typename Store::Out;
  Out* const first = row + span.lo;
  if (span.hi - span.lo == Store::kVector && reinterpret_cast<std::uintptr_t>(first) % 16 == 0) {
    Out v[Store::kVector];
#pragma unroll
    for (int j = 0; j < Store::kVector; ++j) {
      if (j != 0) src.advance();
      v[j] = Store::convert(src.value());
    }
    *reinterpret_cast<uint4*>(first) = Store::pack(v);
  } else {
    // The cut groups at the row ends: unrolling them only costs registers.
    row[span.lo] = Store::convert(src.value());
#pragma unroll 1
    for (int x = span.lo + 1; x < span.hi; ++x) {
      src.advance();
      row[x] = Store::convert(src.value());
    }
  }
}

template <class Store>
__global__ void __launch_bounds__(kThreads)
    normalize_nchw(const std::uint8_t* __restrict__ src, typename Store::Out* __restrict__ dst,
                   const std::uint8_t* __restrict__ flip, NormalizeShape s, NormalizeCoeffs k) {
  const unsigned channels = static_cast<unsigned>(s.channels);
  // gridDim.z is a multiple of channels (plan_grid), so a block keeps its channel while it steps
  // through the samples.
  const unsigned c = blockIdx.z % channels;
  const float scale = pick(c, k.scale[0], k.scale[1], k.scale[2], k.scale[3]);
  const float bias = pick(c, k.bias[0], k.bias[1], k.bias[2], k.bias[3]);
  const std::size_t in_row_bytes = static_cast<std::size_t>(s.width) * channels;
  const unsigned out_height = static_cast<unsigned>(s.out_height);
  const int out_width = s.out_width;
  for (unsigned n = blockIdx.z / channels; n < static_cast<unsigned>(s.samples);
       n += gridDim.z / channels) {
    // Output column x reads source column crop_x + x, or crop_x + out_width - 1 - x flipped.
    const bool flipped = flip != nullptr && flip[n] != 0;
    const std::uint8_t* in_plane =
        src + (static_cast<std::size_t>(n) * s.height + s.crop_y) * in_row_bytes +
        static_cast<std::size_t>(s.crop_x) * channels + c;
    typename Store::Out* out_plane =
        dst + (static_cast<std::size_t>(n) * channels + c) * out_height * out_width;
    for (unsigned y = blockIdx.y * blockDim.y + threadIdx.y; y < out_height;
         y += gridDim.y * blockDim.y) {
      typename Store::Out* out_row = out_plane + static_cast<std::size_t>(y) * out_width;
      const Span span = group_span<Store>(out_row, out_width);
      if (span.lo >= span.hi) continue;
      const int column = flipped ? out_width - 1 - span.lo : span.lo;
      PlaneCursor cursor{in_plane + y * in_row_bytes + column * s.channels,
                         flipped ? -s.channels : s.channels, scale, bias};
      write_group<Store>(out_row, span, cursor);
    }
  }
}

template <class Store>
__global__ void __launch_bounds__(kThreads)
    normalize_nhwc(const std::uint8_t* __restrict__ src, typename Store::Out* __restrict__ dst,
                   const std::uint8_t* __restrict__ flip, NormalizeShape s, ChannelCycle k) {
  const int channels = s.channels;
  const bool three_channels = channels == 3;
  const int row_elems = s.out_width * channels;  // fits: normalize_cuda checks kMaxRowBytes
  const std::size_t in_row_bytes = static_cast<std::size_t>(s.width) * channels;
  const unsigned out_height = static_cast<unsigned>(s.out_height);
  for (unsigned n = blockIdx.z; n < static_cast<unsigned>(s.samples); n += gridDim.z) {
    const bool flipped = flip != nullptr && flip[n] != 0;
    const std::uint8_t* in_sample =
        src + (static_cast<std::size_t>(n) * s.height + s.crop_y) * in_row_bytes +
        static_cast<std::size_t>(s.crop_x) * channels;
    typename Store::Out* out_sample = dst + static_cast<std::size_t>(n) * out_height * row_elems;
    for (unsigned y = blockIdx.y * blockDim.y + threadIdx.y; y < out_height;
         y += gridDim.y * blockDim.y) {
      typename Store::Out* out_row = out_sample + static_cast<std::size_t>(y) * row_elems;
      const Span span = group_span<Store>(out_row, row_elems);
      if (span.lo >= span.hi) continue;
      const int pixel = span.lo / channels;  // the one division per row
      const unsigned c0 = static_cast<unsigned>(span.lo - pixel * channels);
      const std::uint8_t* in_row = in_sample + y * in_row_bytes;
      const ChannelRing<float> scale(k.scale, c0), bias(k.bias, c0);
      if (!flipped) {
        PixelCursor<false> cursor{in_row + span.lo, scale, bias, {}, three_channels};
        write_group<Store>(out_row, span, cursor);
      } else {
        // Output pixel x reads source pixel out_width - 1 - x.
        PixelCursor<true> cursor{
            in_row + (s.out_width - 1 - pixel) * channels + static_cast<int>(c0), scale, bias,
            ChannelRing<int>(k.flipped_step, c0), three_channels};
        write_group<Store>(out_row, span, cursor);
      }
    }
  }
}

ChannelCycle make_cycle(const NormalizeCoeffs& k, int channels) {
  ChannelCycle cycle{};
  for (int i = 0; i < 7; ++i) {
    const int c = i % channels;
    cycle.scale[i] = k.scale[c];
    cycle.bias[i] = k.bias[c];
    cycle.flipped_step[i] = c == channels - 1 ? 1 - 2 * channels : 1;
  }
  return cycle;
}

struct GridPlan {
  dim3 grid, block;
};

// Blocks of up to kThreads threads: x over a row's groups (a whole number of warps), y over as
// many rows as fill the rest of the block; gridDim.y and gridDim.z are capped at CUDA's limit (the
// kernels loop over the rest), and gridDim.z is kept a multiple of z_multiple.
template <class Store>
GridPlan plan_grid(int row_elems, int rows, std::size_t planes, unsigned z_multiple) {
  constexpr unsigned kVector = Store::kVector;
  // A row starting up to kVector - 1 elements past a 16-byte boundary spans this many groups.
  const unsigned groups = (static_cast<unsigned>(row_elems) + 2 * kVector - 2) / kVector;
  const unsigned tx = std::min(kThreads, (groups + 31) / 32 * 32);
  const unsigned ty = std::min(kThreads / tx, static_cast<unsigned>(rows));
  GridPlan plan;
  plan.block = dim3(tx, ty);
  plan.grid.x = (groups + tx - 1) / tx;
  plan.grid.y = std::min(kMaxGridYZ, (static_cast<unsigned>(rows) + ty - 1) / ty);
  plan.grid.z =
      static_cast<unsigned>(std::min<std::size_t>(planes, kMaxGridYZ / z_multiple * z_multiple));
  return plan;
}

template <class Store>
void launch(kernels::Layout layout, const NormalizeShape& s, const NormalizeCoeffs& k,
            const std::uint8_t* d_src, void* d_dst, const std::uint8_t* d_flip,
            cudaStream_t stream) {
  auto* dst = static_cast<typename Store::Out*>(d_dst);
  const auto samples = static_cast<std::size_t>(s.samples);
  if (layout == kernels::Layout::kNCHW) {
    const GridPlan g = plan_grid<Store>(s.out_width, s.out_height, samples * s.channels,
                                        static_cast<unsigned>(s.channels));
    normalize_nchw<Store><<<g.grid, g.block, 0, stream>>>(d_src, dst, d_flip, s, k);
  } else {
    const GridPlan g = plan_grid<Store>(s.out_width * s.channels, s.out_height, samples, 1);
    normalize_nhwc<Store>
        <<<g.grid, g.block, 0, stream>>>(d_src, dst, d_flip, s, make_cycle(k, s.channels));
  }
  CUDA_CALL(cudaGetLastError());
}

}  // namespace
}  // namespace stoke::detail

namespace stoke::kernels {

void normalize_cuda(const NormalizeParams& p, const std::uint8_t* d_src, void* d_dst,
                    cudaStream_t stream) {
  validate(p);
  if (d_src == nullptr || d_dst == nullptr) {
    throw std::invalid_argument("normalize: d_src and d_dst must not be null");
  }
  const std::size_t row_bytes = static_cast<std::size_t>(p.width) * p.channels;
  if (row_bytes > detail::kMaxRowBytes) {
    throw std::invalid_argument(
        "normalize: the GPU kernel takes rows of at most 2^30 bytes (width " +
        std::to_string(p.width) + " x " + std::to_string(p.channels) + " channels is " +
        std::to_string(row_bytes) + ")");
  }
  const detail::NormalizeCoeffs k = detail::make_coeffs(p);
  detail::NormalizeShape s{};
  s.samples = p.samples;
  s.height = p.height;
  s.width = p.width;
  s.channels = p.channels;
  s.crop_y = p.crop_y;
  s.crop_x = p.crop_x;
  s.out_height = detail::resolved_out_height(p);
  s.out_width = detail::resolved_out_width(p);
  switch (p.dtype) {
    case DType::kFloat32:
      detail::launch<detail::StoreFloat32>(p.layout, s, k, d_src, d_dst, p.flip, stream);
      break;
    case DType::kFloat16:
      detail::launch<detail::StoreFloat16>(p.layout, s, k, d_src, d_dst, p.flip, stream);
      break;
    case DType::kBFloat16:
      detail::launch<detail::StoreBFloat16>(p.layout, s, k, d_src, d_dst, p.flip, stream);
      break;
    case DType::kUInt8:
      break;  // rejected by validate()
  }
}

}  // namespace stoke::kernels
