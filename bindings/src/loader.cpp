// Loader: iteration (the GIL released while waiting), set_epoch, resize_workers, and its state
// as a string or a dict that a new loader resumes from.

#include "stoke/loader.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "bindings.hpp"

namespace stoke::python {

using namespace nb::literals;

namespace {

// The Python Loader: a Loader and the options it was made from, so load_state_dict()
// can replace it with one that resumes elsewhere (a C++ Loader's position is fixed at
// construction, apart from set_epoch).
struct PyLoader {
  Options options;
  std::unique_ptr<Loader> loader;

  explicit PyLoader(Options o) : options(std::move(o)), loader(std::make_unique<Loader>(options)) {}
};

// Calls f(key, field) for every field of a LoaderState: the keys of state_dict().
template <class State, class F>
void for_each_state_field(State& s, F f) {
  f("seed", s.seed);
  f("epoch", s.epoch);
  f("position", s.position);
  f("next_batch", s.next_batch);
  f("dataset_size", s.dataset_size);
  f("global_batch", s.global_batch);
}

// The torchdata / Lightning convention: a dict of plain ints, torch.save-able.
nb::dict state_dict(const LoaderState& s) {
  nb::dict d;
  for_each_state_field(s, [&d](const char* key, const auto& value) { d[key] = value; });
  if (s.repeats != 1) d["repeats"] = s.repeats;  // as in serialize(): absent means 1
  if (!s.sources.empty()) d["sources"] = s.sources;  // a mixture's counts
  return d;
}

template <class T>
T state_field(const nb::dict& d, const char* key) {
  if (!d.contains(key))
    throw ConfigError(std::string("state_dict lacks '") + key +
                      "' (expected a dict from Loader.state_dict())");
  try {
    return nb::cast<T>(d[key]);
  } catch (const nb::cast_error&) {
    throw ConfigError(std::string("state_dict['") + key + "'] is not an integer");
  }
}

// Replaces the loader by one continuing at `d`. The new one is made first, so a state that
// does not fit this loader (another dataset or batch) raises and leaves the old one working.
// A dict saved before states carried a position (no "position" key) still loads: its position
// is the plain one, as for a "stoke-state/1" string.
void load_state_dict(PyLoader& self, const nb::dict& d) {
  LoaderState s;
  const bool has_position = d.contains("position");
  for_each_state_field(s, [&](const char* key, auto& value) {
    if (std::string_view(key) == "position" && !has_position) return;
    value = state_field<std::decay_t<decltype(value)>>(d, key);
  });
  if (!has_position) s.position = s.plain_position();
  if (d.contains("repeats")) s.repeats = state_field<std::int64_t>(d, "repeats");
  if (d.contains("sources")) {
    try {
      s.sources = nb::cast<std::vector<std::int64_t>>(d["sources"]);
    } catch (const nb::cast_error&) {
      throw ConfigError("state_dict['sources'] is not a list of integers");
    }
  }
  Options o = self.options;
  o.resume = s;
  o.seed = s.seed;
  std::unique_ptr<Loader> fresh;
  {
    nb::gil_scoped_release unlocked;
    fresh = std::make_unique<Loader>(o);
  }
  self.options = std::move(o);
  self.loader = std::move(fresh);
}

}  // namespace

void bind_loader(nb::module_& m) {
  nb::class_<PyLoader>(m, "Loader")
      .def(
          "__init__",
          [](PyLoader* self, const std::map<std::string, std::string>& options,
             const std::vector<StepArgs>& pipeline, int channels) {
            Options o = options_from(options, pipeline, channels);
            // Indexing the data and starting the workers take a while; other threads run.
            nb::gil_scoped_release unlocked;
            new (self) PyLoader(std::move(o));
          },
          "options"_a, "pipeline"_a, "channels"_a,
          "The options as text by name (stoke.Loader's keywords write them), the pipeline's "
          "steps (none: the augment preset) and their channels.")
      .def("__len__", [](const PyLoader& l) { return l.loader->batches_per_epoch(); })
      .def(
          "__iter__", [](nb::handle self) { return self; }, nb::rv_policy::reference)
      .def("__next__",
           [](PyLoader& l) {
             std::optional<Batch> b;
             {
               nb::gil_scoped_release release;
               b = l.loader->next();
             }
             if (!b) throw nb::stop_iteration();
             return std::move(*b);
           })
      .def(
          "set_epoch", [](PyLoader& l, std::int64_t e) { l.loader->set_epoch(e); }, "epoch"_a)
      .def(
          "resize_workers", [](PyLoader& l, int n) { l.loader->resize_workers(n); }, "n"_a,
          "Grows or shrinks the live worker pool to n processes and stops automatic sizing. "
          "Returns at once; stats()['workers'] shows the new size within moments. The "
          "delivered bytes do not change.")
      .def(
          "state", [](const PyLoader& l) { return l.loader->state().serialize(); },
          "Where the next batch comes from, as a string for Loader(..., state=...).")
      .def(
          "state_dict", [](const PyLoader& l) { return state_dict(l.loader->state()); },
          "Where the next batch comes from, as a dict for load_state_dict() (the torchdata "
          "StatefulDataLoader and Lightning convention).")
      .def("load_state_dict", &load_state_dict, "state_dict"_a,
           "Continues exactly where state_dict() was taken: the next batch is the one that "
           "loader would have delivered next. A dict saved with other ranks, devices or batch "
           "continues that epoch from the saved sample position. Restarts the workers.")
      .def("stats", [](const PyLoader& l) { return stats_dict(l.loader->stats()); })
      .def_prop_ro("dataset_size", [](const PyLoader& l) { return l.loader->dataset_size(); })
      .def_prop_ro("class_names", [](const PyLoader& l) { return l.loader->class_names(); },
                   "the classes' names, label i's at i, where the dataset names them (an image "
                   "folder's class folders, a COCO file's categories, a Parquet file's "
                   "ClassLabel feature or string labels); [] where labels are bare numbers")
      .def_prop_ro("rank", [](const PyLoader& l) { return l.loader->rank(); })
      .def_prop_ro("world", [](const PyLoader& l) { return l.loader->world(); });
}

}  // namespace stoke::python
