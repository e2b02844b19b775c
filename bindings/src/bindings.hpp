#pragma once
// The parts of the Python module stoke._stoke, one file each, which module.cpp registers:
// array.cpp (Array: DLPack), batch.cpp (Batch and its arrays), applied_ops.cpp (what each
// sample's ops drew), loader.cpp (Loader: iteration, state), stats.cpp (Loader.stats()) and
// options.cpp (the keywords, read through the table of options). Thread-safety: the GIL guards
// every object; Loader.__next__ releases it while waiting for a batch.

#include <nanobind/nanobind.h>
// The type casters every part uses, in every part: a file that missed one would convert that
// type differently, or not at all (a std::string returned as std::bad_cast).
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "stoke/batch.hpp"
#include "stoke/options.hpp"
#include "stoke/stats.hpp"

namespace stoke::python {

namespace nb = nanobind;

void bind_array(nb::module_& m);
void bind_batch(nb::module_& m);
void bind_loader(nb::module_& m);
void bind_options(nb::module_& m);

// One pipeline step as Python gives it: its name, its numbers and its words (timm_augment's
// config string and settings).
using StepArgs = std::tuple<std::string, std::vector<double>, std::vector<std::string>>;

// The Options of a Loader(...) call: `texts` maps option names to their values as text
// (bindings/stoke/__init__.py writes them), set through the table of options; `pipeline`, when
// not empty, is built from its steps at the size the texts give, with `channels`.
Options options_from(const std::map<std::string, std::string>& texts,
                     const std::vector<StepArgs>& pipeline, int channels);

// Batch.applied_ops: per sample, its ops as tuples of a name and numbers; and its docstring.
nb::list applied_ops(const Batch& b);
extern const char* const kAppliedOpsDoc;

// Loader.stats(): Stats as a dict, with the words of stoke/names.hpp.
nb::dict stats_dict(const Stats& s);

}  // namespace stoke::python
