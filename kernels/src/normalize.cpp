#include "stoke/kernels/normalize.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "normalize_coeffs.hpp"

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

// Output element writers; memcpy keeps dst free of alignment requirements.
struct StoreFloat32 {
  static void put(unsigned char* dst, std::size_t i, float v) {
    std::memcpy(dst + i * sizeof(float), &v, sizeof(float));
  }
};
struct StoreFloat16 {
  static void put(unsigned char* dst, std::size_t i, float v) {
    const std::uint16_t h = float_to_half_rn(v);
    std::memcpy(dst + i * sizeof(h), &h, sizeof(h));
  }
};
struct StoreBFloat16 {
  static void put(unsigned char* dst, std::size_t i, float v) {
    const std::uint16_t h = float_to_bfloat16_rn(v);
    std::memcpy(dst + i * sizeof(h), &h, sizeof(h));
  }
};

template <class Store, Layout kLayout>
void normalize_rows(const NormalizeParams& p, const std::uint8_t* src, unsigned char* dst) {
  const detail::NormalizeCoeffs k = detail::make_coeffs(p);
  const std::size_t oh = static_cast<std::size_t>(detail::resolved_out_height(p));
  const std::size_t ow = static_cast<std::size_t>(detail::resolved_out_width(p));
  const std::size_t h = static_cast<std::size_t>(p.height);
  const std::size_t w = static_cast<std::size_t>(p.width);
  const std::size_t ch = static_cast<std::size_t>(p.channels);
  const std::size_t rows = static_cast<std::size_t>(p.samples) * oh;

  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, rows), [&](const auto& range) {
    for (std::size_t row = range.begin(); row != range.end(); ++row) {
      const std::size_t n = row / oh;
      const std::size_t y = row % oh;
      const std::uint8_t* in_row =
          src + ((n * h + static_cast<std::size_t>(p.crop_y) + y) * w) * ch;
      const bool flip = p.flip != nullptr && p.flip[n] != 0;
      auto in_x = [&](std::size_t x) {
        return static_cast<std::size_t>(p.crop_x) + (flip ? ow - 1 - x : x);
      };
      if constexpr (kLayout == Layout::kNCHW) {
        for (std::size_t c = 0; c < ch; ++c) {
          const std::size_t out_row = ((n * ch + c) * oh + y) * ow;
          for (std::size_t x = 0; x < ow; ++x) {
            const float v = static_cast<float>(in_row[in_x(x) * ch + c]);
            Store::put(dst, out_row + x, std::fma(v, k.scale[c], k.bias[c]));
          }
        }
      } else {
        const std::size_t out_row = (n * oh + y) * ow * ch;
        for (std::size_t x = 0; x < ow; ++x) {
          for (std::size_t c = 0; c < ch; ++c) {
            const float v = static_cast<float>(in_row[in_x(x) * ch + c]);
            Store::put(dst, out_row + x * ch + c, std::fma(v, k.scale[c], k.bias[c]));
          }
        }
      }
    }
  });
}

template <class Store>
void normalize_as(const NormalizeParams& p, const std::uint8_t* src, unsigned char* dst) {
  if (p.layout == Layout::kNCHW) {
    normalize_rows<Store, Layout::kNCHW>(p, src, dst);
  } else {
    normalize_rows<Store, Layout::kNHWC>(p, src, dst);
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
      normalize_as<StoreFloat32>(p, src, out);
      break;
    case DType::kFloat16:
      normalize_as<StoreFloat16>(p, src, out);
      break;
    case DType::kBFloat16:
      normalize_as<StoreBFloat16>(p, src, out);
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
