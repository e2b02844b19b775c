// The Python module stoke._stoke: the Loader, its batches and their arrays over stoke's public
// C++ API. The Python package (bindings/stoke/__init__.py) re-exports it.
//
// Thread-safety: the GIL guards every object here; Loader.__next__ releases it while waiting
// for a batch, so other Python threads run meanwhile.
//
// Lifetimes: every array a batch hands out holds a copy of the C++ Batch (a shared lease on its
// slot) through its DLPack owner, so the bytes stay valid while the Batch, any of its arrays, or
// any tensor made from them (torch.from_dlpack, numpy.from_dlpack, jax.dlpack) is alive; the
// slot returns to the workers when the last of them is gone.

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <exception>
#include <string>

#include "array.hpp"
#include "bindings.hpp"
#include "stoke/devices.hpp"
#include "stoke/error.hpp"
#include "stoke/loader.hpp"
#include "stoke/pipeline.hpp"

namespace nb = nanobind;

NB_MODULE(_stoke, m) {
  m.doc() = "stoke: multi-process data loading for training (C++ core)";

  // Translators run newest first: the base class is registered before its subclasses.
  nb::exception<stoke::Error> error(m, "Error", PyExc_RuntimeError);
  nb::exception<stoke::DataError>(m, "DataError", error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const stoke::ConfigError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  stoke::python::bind_array(m);
  stoke::python::bind_batch(m);
  stoke::python::bind_loader(m);
  stoke::python::bind_options(m);

  m.def("devices", [] {
    nb::list out;
    for (const stoke::GpuInfo& g : stoke::devices().gpus) {
      nb::dict d;
      d["index"] = g.index;
      d["name"] = g.name;
      d["uuid"] = g.uuid;
      d["pci_bus_id"] = g.pci_bus_id;
      d["memory_bytes"] = g.memory_bytes;
      out.append(d);
    }
    return out;
  });
  m.def("version", [] { return std::string(stoke::version()); });
  // The pipeline's text vocabulary, from the steps' own records (stoke::step_forms()).
  m.def("pipeline_steps", [] {
    nb::list out;
    for (const stoke::StepFormInfo& f : stoke::step_forms())
      out.append(nb::make_tuple(f.name, f.usage));
    return out;
  });
}
