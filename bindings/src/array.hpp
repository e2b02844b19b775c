#pragma once
// A batch's arrays as Python sees them: Array, one array (host memory or one GPU's chunk) shared
// zero-copy through DLPack, and the helpers that make them from a Batch. Thread-safety: the GIL
// guards every object (bindings/src/module.cpp).
//
// Lifetimes: every array holds a copy of the C++ Batch (a shared lease on its slot) through its
// DLPack owner, so the bytes stay valid while the Batch, any of its arrays, or any tensor made
// from them (torch.from_dlpack, numpy.from_dlpack, jax.dlpack) is alive; the slot returns to the
// workers when the last of them is gone.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "stoke/batch.hpp"
#include "stoke/error.hpp"

namespace stoke::python {

nb::dlpack::dtype dlpack_dtype(DType d);

// One array of a batch: host memory, or one GPU's chunk. Its DLPack owner is a copy of the
// Batch, so the slot outlives every consumer of the bytes.
class Array {
 public:
  Array(const Batch& batch, int device, const void* data, std::vector<std::size_t> shape,
        nb::dlpack::dtype dtype, int cuda_device)
      : batch_(batch), device_(device), cuda_device_(cuda_device) {
    auto* keep = new Batch(batch);
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Batch*>(p); });
    const int device_type = cuda_device >= 0 ? nb::device::cuda::value : nb::device::cpu::value;
    array_ = nb::ndarray<nb::ro, nb::array_api>(const_cast<void*>(data), shape.size(), shape.data(),
                                                owner, nullptr, dtype, device_type,
                                                cuda_device >= 0 ? cuda_device : 0);
  }

  // The DLPack protocol. On a GPU, `stream` (an int, as the consumer passes it) is the stream
  // that will read the array: 1 = the legacy default stream, 2 = the per-thread default stream
  // (cudaStreamLegacy and cudaStreamPerThread have those very values), else a cudaStream_t of
  // the array's GPU; None means 1, as the standard says. That stream is made to wait for
  // stoke's copy on the GPU (the host does not wait), and is recorded on the batch, so the
  // memory is not reused before the stream passes the work enqueued on it so far. -1 asks for
  // no synchronization: the consumer orders its work after `ready` itself.
  nb::object dlpack(nb::handle stream, nb::handle max_version, nb::handle dl_device,
                    nb::handle copy) {
    if (cuda_device_ >= 0) {
      const std::intptr_t s = stream.is_none() ? 1 : nb::cast<std::intptr_t>(stream);
      if (s == 0)
        throw ConfigError(
            "stream 0 is ambiguous for a CUDA array in DLPack: pass 1 (the legacy default "
            "stream), 2 (the per-thread default stream), a cudaStream_t, or -1");
      if (s != -1) {
        auto* consumer = reinterpret_cast<CUstream_st*>(s);
        nb::gil_scoped_release unlocked;  // CUDA calls; no Python object is touched
        batch_.wait_on(device_, consumer);
        batch_.record_stream(device_, consumer);
      }
    }
    nb::object nd = nb::cast(array_);
    nb::dict kwargs;
    if (!max_version.is_none()) kwargs["max_version"] = max_version;
    if (!dl_device.is_none()) kwargs["dl_device"] = dl_device;
    if (!copy.is_none()) kwargs["copy"] = copy;
    return nd.attr("__dlpack__")(**kwargs);
  }

  nb::tuple dlpack_device() const {
    return nb::make_tuple(cuda_device_ >= 0 ? 2 : 1, cuda_device_ >= 0 ? cuda_device_ : 0);
  }
  nb::tuple shape() const {
    nb::list l;
    for (std::size_t i = 0; i < array_.ndim(); ++i) l.append(array_.shape(i));
    return nb::tuple(l);
  }
  std::string dtype() const {
    const nb::dlpack::dtype d = array_.dtype();
    if (d == nb::dtype<std::uint8_t>()) return "uint8";
    if (d == nb::dtype<std::uint16_t>()) return "uint16";
    if (d == nb::dtype<std::int32_t>()) return "int32";
    if (d == nb::dtype<std::int64_t>()) return "int64";
    if (d == nb::dtype<float>()) return "float32";
    return d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat) ? "bfloat16"
                                                                               : "float16";
  }
  std::string device() const {
    return cuda_device_ >= 0 ? "cuda:" + std::to_string(cuda_device_) : "cpu";
  }

 private:
  Batch batch_;
  int device_;
  int cuda_device_;
  nb::ndarray<nb::ro, nb::array_api> array_;
};

template <class T>
Array host_array(const Batch& b, std::span<const T> values) {
  return Array(b, 0, values.data(), {values.size()}, nb::dtype<T>(), -1);
}

// One array per device of a chunk's per-sample field (labels, valid flags, boxes, masks,
// bytes, ...), where its pixels are: `dtype`, shape {samples, tail...}. `absent`, when not
// null, names what the data lacks, and asking for it raises.
template <class Pointer>
nb::list per_device(const Batch& b, Pointer DeviceChunk::*field, nb::dlpack::dtype dtype,
                    std::vector<std::size_t> tail = {}, const char* absent = nullptr) {
  if (absent != nullptr) throw ConfigError(std::string("this loader's data has no ") + absent);
  nb::list out;
  for (int g = 0; g < b.device_count(); ++g) {
    const DeviceChunk c = b.chunk(g);
    std::vector<std::size_t> shape{static_cast<std::size_t>(c.samples)};
    shape.insert(shape.end(), tail.begin(), tail.end());
    out.append(Array(b, g, c.*field, std::move(shape), dtype, c.cuda_device));
  }
  return out;
}

}  // namespace stoke::python
