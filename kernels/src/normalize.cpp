#include "stoke/kernels/normalize.hpp"

#include <tbb/blocked_range.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cpu_features.hpp"
#include "normalize_coeffs.hpp"
#include "parallel_for.hpp"

#if STOKE_AVX2_FMA_DISPATCH
#include <immintrin.h>
#endif

namespace stoke::kernels {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("normalize: " + what);
}

void require_positive(const char* name, int value) {
  if (value <= 0) fail(std::string(name) + " must be positive (got " + std::to_string(value) + ")");
}

// Checks that [offset, offset + extent) lies inside [0, limit).
void require_window(const char* axis, int offset, int extent, int limit) {
  if (offset < 0 || extent <= 0 ||
      static_cast<long long>(offset) + extent > static_cast<long long>(limit)) {
    fail(std::string("crop window ") + axis + " [" + std::to_string(offset) + ", " +
         std::to_string(static_cast<long long>(offset) + extent) + ") is outside the image " +
         axis + " [0, " + std::to_string(limit) + ")");
  }
}

// Product of the factors; fails when it does not fit in size_t.
std::size_t checked_product(std::initializer_list<std::size_t> factors, const char* what) {
  std::size_t product = 1;
  for (std::size_t f : factors) {
    if (f != 0 && product > std::numeric_limits<std::size_t>::max() / f) {
      fail(std::string(what) + " size overflows size_t");
    }
    product *= f;
  }
  return product;
}

// Output element types and their rounding from float.
struct AsFloat32 {
  using T = float;
  static T convert(float v) { return v; }
};
struct AsFloat16 {
  using T = std::uint16_t;
  static T convert(float v) { return float_to_half_rn(v); }
};
struct AsBFloat16 {
  using T = std::uint16_t;
  static T convert(float v) { return float_to_bfloat16_rn(v); }
};

// The input is uint8, so each channel's output is one of 256 values: they are computed once,
// with the GPU kernel's exact operation sequence (fmaf, then round to the output type), and the
// rows are then table lookups. Bit-identical to evaluating every element, and several times
// faster on CPUs where fmaf is a library call.
template <class Out>
struct Table {
  typename Out::T value[4][256];
  explicit Table(const detail::NormalizeCoeffs& k, int channels) {
    for (int c = 0; c < channels; ++c) {
      for (int x = 0; x < 256; ++x) {
        value[c][x] = Out::convert(std::fma(static_cast<float>(x), k.scale[c], k.bias[c]));
      }
    }
  }
};

#if STOKE_AVX2_FMA_DISPATCH
// A float32 NCHW row of an RGB image (`ow` pixels from `first`, mirrored under `flip`) into its
// three planes' rows, 8 pixels at a time: fmaf(x, scale, bias) in 8 lanes, the one rounding the
// tables' values have, so the same bits. Returns the pixels written (a multiple of 8; the
// caller writes the rest).
STOKE_TARGET_AVX2_FMA std::size_t rgb_float_row_avx2(const std::uint8_t* first, std::size_t ow,
                                                     bool flip, const detail::NormalizeCoeffs& k,
                                                     unsigned char* o0, unsigned char* o1,
                                                     unsigned char* o2) {
  // Lane j of channel c takes byte 3j + c of the 8 pixels (3(7 - j) + c mirrored), from the
  // first 16 bytes or the last 8.
  alignas(16) std::uint8_t lo[3][16], hi[3][16];
  for (int c = 0; c < 3; ++c) {
    for (int j = 0; j < 16; ++j) {
      const int b = j < 8 ? 3 * (flip ? 7 - j : j) + c : 0x80;
      lo[c][j] = static_cast<std::uint8_t>(b < 16 ? b : 0x80);
      hi[c][j] = static_cast<std::uint8_t>(b >= 16 && b < 24 ? b - 16 : 0x80);
    }
  }
  __m128i mlo[3], mhi[3];
  __m256 scale[3], bias[3];
  for (int c = 0; c < 3; ++c) {
    mlo[c] = _mm_load_si128(reinterpret_cast<const __m128i*>(lo[c]));
    mhi[c] = _mm_load_si128(reinterpret_cast<const __m128i*>(hi[c]));
    scale[c] = _mm256_set1_ps(k.scale[c]);
    bias[c] = _mm256_set1_ps(k.bias[c]);
  }
  unsigned char* out[3] = {o0, o1, o2};
  std::size_t x = 0;
  for (; x + 8 <= ow; x += 8) {
    const std::uint8_t* at = first + 3 * (flip ? ow - 8 - x : x);
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(at + 16));
    for (int c = 0; c < 3; ++c) {
      const __m128i bytes = _mm_or_si128(_mm_shuffle_epi8(a, mlo[c]), _mm_shuffle_epi8(b, mhi[c]));
      const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
      _mm256_storeu_ps(reinterpret_cast<float*>(out[c] + x * sizeof(float)),
                       _mm256_fmadd_ps(v, scale[c], bias[c]));
    }
  }
  return x;
}
#endif

template <class Out, Layout kLayout>
void normalize_rows(const NormalizeParams& p, const std::uint8_t* src, unsigned char* dst) {
  using T = typename Out::T;
  const detail::NormalizeCoeffs coeffs = detail::make_coeffs(p);
  const Table<Out> table(coeffs, p.channels);
#if STOKE_AVX2_FMA_DISPATCH
  const bool avx2 = std::is_same_v<Out, AsFloat32> && detail::has_avx2_fma();
#endif
  const std::size_t oh = static_cast<std::size_t>(detail::resolved_out_height(p));
  const std::size_t ow = static_cast<std::size_t>(detail::resolved_out_width(p));
  const std::size_t h = static_cast<std::size_t>(p.height);
  const std::size_t w = static_cast<std::size_t>(p.width);
  const std::size_t ch = static_cast<std::size_t>(p.channels);
  const std::size_t rows = static_cast<std::size_t>(p.samples) * oh;

  stoke::parallel_for(tbb::blocked_range<std::size_t>(0, rows), [&](const auto& range) {
    for (std::size_t row = range.begin(); row != range.end(); ++row) {
      const std::size_t n = row / oh;
      const std::size_t y = row % oh;
      const std::uint8_t* in_row =
          src + ((n * h + static_cast<std::size_t>(p.crop_y) + y) * w) * ch;
      const bool flip = p.flip != nullptr && p.flip[n] != 0;
      // memcpy keeps dst free of alignment requirements.
      auto put = [dst](std::size_t i, T v) { std::memcpy(dst + i * sizeof(T), &v, sizeof(T)); };
      const std::uint8_t* first = in_row + static_cast<std::size_t>(p.crop_x) * ch;
      if constexpr (kLayout == Layout::kNCHW) {
        // One pass over the input row, writing every channel plane's row.
        const std::size_t plane = oh * ow;
        const std::size_t out_row = (n * ch * oh + y) * ow;
        const std::ptrdiff_t step =
            flip ? -static_cast<std::ptrdiff_t>(ch) : static_cast<std::ptrdiff_t>(ch);
        const std::uint8_t* px = flip ? first + (ow - 1) * ch : first;
        if (ch == 3) {
          // (RGB, the common case: the channel loop unrolled, each plane's row written in turn;
          // float32 8 pixels at a time where the CPU has AVX2.)
          const T* t0 = table.value[0];
          const T* t1 = table.value[1];
          const T* t2 = table.value[2];
          std::size_t x = 0;
#if STOKE_AVX2_FMA_DISPATCH
          if (avx2) {
            unsigned char* o0 = dst + out_row * sizeof(T);
            x = rgb_float_row_avx2(first, ow, flip, coeffs, o0, o0 + plane * sizeof(T),
                                   o0 + 2 * plane * sizeof(T));
            px += step * static_cast<std::ptrdiff_t>(x);
          }
#endif
          for (; x < ow; ++x, px += step) {
            put(out_row + x, t0[px[0]]);
            put(out_row + plane + x, t1[px[1]]);
            put(out_row + 2 * plane + x, t2[px[2]]);
          }
        } else {
          for (std::size_t x = 0; x < ow; ++x, px += step) {
            for (std::size_t c = 0; c < ch; ++c)
              put(out_row + c * plane + x, table.value[c][px[c]]);
          }
        }
      } else {
        const std::size_t out_row = (n * oh + y) * ow * ch;
        for (std::size_t x = 0; x < ow; ++x) {
          const std::uint8_t* px = first + (flip ? ow - 1 - x : x) * ch;
          for (std::size_t c = 0; c < ch; ++c) put(out_row + x * ch + c, table.value[c][px[c]]);
        }
      }
    }
  });
}

template <class Out>
void normalize_as(const NormalizeParams& p, const std::uint8_t* src, unsigned char* dst) {
  if (p.layout == Layout::kNCHW) {
    normalize_rows<Out, Layout::kNCHW>(p, src, dst);
  } else {
    normalize_rows<Out, Layout::kNHWC>(p, src, dst);
  }
}

}  // namespace

void validate(const NormalizeParams& p) {
  require_positive("samples", p.samples);
  require_positive("height", p.height);
  require_positive("width", p.width);
  if (p.channels < 1 || p.channels > 4) {
    fail("channels must be in 1..4 (got " + std::to_string(p.channels) + ")");
  }
  if (p.out_height < 0) fail("out_height must be >= 0 (got " + std::to_string(p.out_height) + ")");
  if (p.out_width < 0) fail("out_width must be >= 0 (got " + std::to_string(p.out_width) + ")");
  require_window("rows", p.crop_y, detail::resolved_out_height(p), p.height);
  require_window("columns", p.crop_x, detail::resolved_out_width(p), p.width);
  switch (p.dtype) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
      break;
    case DType::kUInt8:
      fail("dtype uint8 is not a normalize target (use float32, float16 or bfloat16)");
    default:
      fail("unknown dtype value " + std::to_string(static_cast<int>(p.dtype)));
  }
  if (p.layout != Layout::kNCHW && p.layout != Layout::kNHWC) {
    fail("unknown layout value " + std::to_string(static_cast<int>(p.layout)));
  }
  for (int c = 0; c < p.channels; ++c) {
    if (!std::isfinite(p.stddev[c]) || p.stddev[c] == 0.0f) {
      fail("stddev[" + std::to_string(c) + "] must be finite and nonzero (got " +
           std::to_string(p.stddev[c]) + ")");
    }
    if (!std::isfinite(p.mean[c])) {
      fail("mean[" + std::to_string(c) + "] must be finite (got " + std::to_string(p.mean[c]) +
           ")");
    }
  }
  const auto n = static_cast<std::size_t>(p.samples);
  const auto c = static_cast<std::size_t>(p.channels);
  checked_product({n, static_cast<std::size_t>(p.height), static_cast<std::size_t>(p.width), c},
                  "input");
  checked_product({n, c, static_cast<std::size_t>(detail::resolved_out_height(p)),
                   static_cast<std::size_t>(detail::resolved_out_width(p)), sizeof(float)},
                  "output");
}

std::size_t normalized_bytes(const NormalizeParams& p) {
  return static_cast<std::size_t>(p.samples) * static_cast<std::size_t>(p.channels) *
         static_cast<std::size_t>(detail::resolved_out_height(p)) *
         static_cast<std::size_t>(detail::resolved_out_width(p)) * dtype_size(p.dtype);
}

void normalize_cpu(const NormalizeParams& p, const std::uint8_t* src, void* dst) {
  validate(p);
  if (src == nullptr || dst == nullptr) fail("src and dst must not be null");
  auto* out = static_cast<unsigned char*>(dst);
  switch (p.dtype) {
    case DType::kFloat32:
      normalize_as<AsFloat32>(p, src, out);
      break;
    case DType::kFloat16:
      normalize_as<AsFloat16>(p, src, out);
      break;
    case DType::kBFloat16:
      normalize_as<AsBFloat16>(p, src, out);
      break;
    case DType::kUInt8:
      break;  // rejected by validate()
  }
}

}  // namespace stoke::kernels

namespace stoke::detail {

NormalizeCoeffs make_coeffs(const kernels::NormalizeParams& p) {
  NormalizeCoeffs k{};  // unused channels stay 0
  for (int c = 0; c < p.channels; ++c) {
    k.scale[c] = 1.0f / p.stddev[c];
    k.bias[c] = -p.mean[c] * k.scale[c];
  }
  return k;
}

}  // namespace stoke::detail
