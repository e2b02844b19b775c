// Array: one array of a batch, handed to PyTorch, NumPy and JAX through DLPack (array.hpp).

#include "array.hpp"

#include <cstdint>

namespace stoke::python {

using namespace nb::literals;

nb::dlpack::dtype dlpack_dtype(DType d) {
  switch (d) {
    case DType::kUInt8:
      return nb::dtype<std::uint8_t>();
    case DType::kFloat32:
      return nb::dtype<float>();
    case DType::kFloat16:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::kBFloat16:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
  }
  return nb::dtype<std::uint8_t>();
}

void bind_array(nb::module_& m) {
  nb::class_<Array>(m, "Array",
                    "One array of a batch (pixels of one device, labels, valid flags or sample "
                    "ids), shared zero-copy through DLPack: torch.from_dlpack(a), "
                    "numpy.from_dlpack(a), jax.dlpack.from_dlpack(a).")
      .def("__dlpack__", &Array::dlpack, nb::kw_only(), "stream"_a = nb::none(),
           "max_version"_a = nb::none(), "dl_device"_a = nb::none(), "copy"_a = nb::none(),
           "Exports the array as a DLPack capsule (zero-copy).")
      .def("__dlpack_device__", &Array::dlpack_device)
      .def_prop_ro("shape", &Array::shape)
      .def_prop_ro("dtype", &Array::dtype, "'uint8', 'int32', 'int64', 'float32', ...")
      .def_prop_ro("device", &Array::device, "'cpu' or 'cuda:N'");
}

}  // namespace stoke::python
