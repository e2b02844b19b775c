#include <stdexcept>
#include <string>

#include "stoke/kernels/normalize.hpp"

namespace stoke::kernels {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kUInt8:
      return 1;
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
      return 2;
    case DType::kBFloat16:
      return 2;
  }
  throw std::invalid_argument("dtype_size: unknown DType value " +
                              std::to_string(static_cast<int>(t)));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kUInt8:
      return "uint8";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  throw std::invalid_argument("dtype_name: unknown DType value " +
                              std::to_string(static_cast<int>(t)));
}

DType parse_dtype(std::string_view name) {
  for (DType t : {DType::kUInt8, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    if (name == dtype_name(t)) return t;
  }
  throw std::invalid_argument("unknown dtype '" + std::string(name) +
                              "': expected one of uint8, float32, float16, bfloat16");
}

}  // namespace stoke::kernels
