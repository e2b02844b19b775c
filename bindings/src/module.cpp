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
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "stoke/batch.hpp"
#include "stoke/devices.hpp"
#include "stoke/error.hpp"
#include "stoke/format.hpp"
#include "stoke/loader.hpp"
#include "stoke/names.hpp"
#include "stoke/state.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

nb::dlpack::dtype dlpack_dtype(stoke::DType d) {
  switch (d) {
    case stoke::DType::kUInt8:
      return nb::dtype<std::uint8_t>();
    case stoke::DType::kFloat32:
      return nb::dtype<float>();
    case stoke::DType::kFloat16:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case stoke::DType::kBFloat16:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
  }
  return nb::dtype<std::uint8_t>();
}

// One array of a batch: host memory, or one GPU's chunk. Its DLPack owner is a copy of the
// Batch, so the slot outlives every consumer of the bytes.
class Array {
 public:
  Array(const stoke::Batch& batch, int device, const void* data, std::vector<std::size_t> shape,
        nb::dlpack::dtype dtype, int cuda_device)
      : batch_(batch), device_(device), cuda_device_(cuda_device) {
    auto* keep = new stoke::Batch(batch);
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<stoke::Batch*>(p); });
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
        throw stoke::ConfigError(
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
  stoke::Batch batch_;
  int device_;
  int cuda_device_;
  nb::ndarray<nb::ro, nb::array_api> array_;
};

template <class T>
Array host_array(const stoke::Batch& b, std::span<const T> values) {
  return Array(b, 0, values.data(), {values.size()}, nb::dtype<T>(), -1);
}

nb::list pixels(const stoke::Batch& b) {
  nb::list out;
  for (int g = 0; g < b.device_count(); ++g) {
    const stoke::DeviceChunk c = b.chunk(g);
    std::vector<std::size_t> shape(c.shape.begin(), c.shape.end());
    out.append(Array(b, g, c.data, std::move(shape), dlpack_dtype(c.dtype), c.cuda_device));
  }
  return out;
}

// One array per device of a chunk's per-sample field (labels, valid flags, boxes, masks,
// bytes, ...), where its pixels are: `dtype`, shape {samples, tail...}. `absent`, when not
// null, names what the data lacks, and asking for it raises.
template <class Pointer>
nb::list per_device(const stoke::Batch& b, Pointer stoke::DeviceChunk::*field,
                    nb::dlpack::dtype dtype, std::vector<std::size_t> tail = {},
                    const char* absent = nullptr) {
  if (absent != nullptr)
    throw stoke::ConfigError(std::string("this loader's data has no ") + absent);
  nb::list out;
  for (int g = 0; g < b.device_count(); ++g) {
    const stoke::DeviceChunk c = b.chunk(g);
    std::vector<std::size_t> shape{static_cast<std::size_t>(c.samples)};
    shape.insert(shape.end(), tail.begin(), tail.end());
    out.append(Array(b, g, c.*field, std::move(shape), dtype, c.cuda_device));
  }
  return out;
}

const char* no_boxes(const stoke::Batch& b) {
  return b.max_boxes() > 0 ? nullptr
                           : "boxes (boxes come from a COCO annotation file: data='...json')";
}
const char* no_bytes(const stoke::Batch& b) {
  return b.max_bytes() > 0 ? nullptr : "pass-through bytes (set bytes_field)";
}

// One pipeline step as Python gives it: its name, its numbers and its words (timm_augment's
// config string and settings).
using StepArgs = std::tuple<std::string, std::vector<double>, std::vector<std::string>>;

// timm's ops as Python sees them: integers where timm's functions take ints, a warp's fill as
// an (r, g, b) tuple.
nb::tuple timm_op_tuple(const std::string& name, const stoke::AppliedOp& op) {
  const auto i = [&](int k) { return static_cast<int>(op.args[k]); };
  switch (op.op) {
    case stoke::ImageOp::kPilPosterize:
    case stoke::ImageOp::kPilSolarize:
      return nb::make_tuple(name, i(0));
    case stoke::ImageOp::kPilSolarizeAdd:
      return nb::make_tuple(name, i(0), i(1));
    case stoke::ImageOp::kPilRotate:
    case stoke::ImageOp::kPilShearX:
    case stoke::ImageOp::kPilShearY:
    case stoke::ImageOp::kPilTranslateXRel:
    case stoke::ImageOp::kPilTranslateYRel:
      return nb::make_tuple(name, op.args[0], i(1), nb::make_tuple(i(2), i(3), i(4)));
    case stoke::ImageOp::kTimmAugMixChain:
      return nb::make_tuple(name, op.args[0], i(1), i(2), op.args[3] != 0);
    default:
      break;
  }
  nb::list numbers;
  numbers.append(name);
  for (int k = 0; k < stoke::image_op_arg_count(op.op); ++k) numbers.append(op.args[k]);
  return nb::tuple(numbers);
}

// Batch.mixing: the slot's MixSamples as NumPy arrays (copies: a batch's worth of small
// numbers), one per field.
nb::dict mixing_dict(const stoke::Batch& b) {
  const std::span<const stoke::MixSample> mix = b.mixing();
  if (mix.empty())
    throw stoke::ConfigError(
        "this loader does not mix: set mixup_alpha or cutmix_alpha (and num_classes)");
  const std::size_t n = mix.size();
  auto partner = std::make_unique<std::int32_t[]>(n);
  auto op = std::make_unique<std::uint8_t[]>(n);
  auto lam = std::make_unique<double[]>(n);
  auto weights = std::make_unique<float[]>(2 * n);
  auto box = std::make_unique<std::int32_t[]>(4 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const stoke::MixSample& m = mix[i];
    partner[i] = m.partner;
    op[i] = static_cast<std::uint8_t>(m.op);
    lam[i] = m.lambda;
    weights[2 * i] = m.label_self;
    weights[2 * i + 1] = m.label_partner;
    const std::int32_t corners[4] = {m.top, m.left, m.bottom, m.right};
    std::copy(corners, corners + 4, box.get() + 4 * i);
  }
  // Each array takes its buffer over through a capsule (made before the buffer is released,
  // so that nothing leaks if making it throws).
  const auto numpy = [](auto& data, std::initializer_list<std::size_t> shape) {
    using T = std::remove_reference_t<decltype(data[0])>;
    nb::capsule owner(data.get(), [](void* p) noexcept { delete[] static_cast<T*>(p); });
    T* raw = data.release();
    return nb::ndarray<nb::numpy, T>(raw, shape.size(), shape.begin(), owner);
  };
  nb::dict d;
  d["partner"] = numpy(partner, {n});
  d["op"] = numpy(op, {n});
  d["lam"] = numpy(lam, {n});
  d["label_weights"] = numpy(weights, {n, 2});
  d["box"] = numpy(box, {n, 4});
  return d;
}

// The Python Loader's keyword arguments (defaults live in bindings/stoke/__init__.py).
struct LoaderArgs {
  std::string data;
  std::string image_root;
  int max_boxes = 0;
  std::string mask_field;
  int mask_ignore = 255;
  int mask_depth = 8;
  std::string bytes_field;
  int max_bytes = 0;
  std::string box_field;
  float min_box_size = 1;
  float min_box_area = 0;
  float min_box_visible = 0;
  int batch = 256;
  std::string devices = "cpu:1";
  int workers = 2;
  std::string size;                // "" (the default), "HxW" or "N"
  std::vector<StepArgs> pipeline;  // empty: the `augment` preset
  int channels = 3;                // with `pipeline`
  std::string augment = "train";
  std::string dtype = "uint8";
  std::string layout = "nchw";
  std::vector<float> mean;
  std::vector<float> std;
  std::uint64_t seed = 0;
  bool shuffle = true;
  std::string last_batch = "pad";
  std::optional<int> rank;
  std::optional<int> world;
  std::string on_error = "skip";
  std::optional<std::string> verify;  // unset: Options' default
  std::string split = "train";
  std::string label_field = "cls";
  int max_classes = stoke::kDefaultMaxClasses;
  int shuffle_window = 0;
  std::string cache_dir;
  std::string cache_limit = "16GiB";  // bytes, or a size such as "500MB"
  int prefetch = 0;
  int max_workers = 0;
  double stall_target = 0.02;
  int monitor_window = 50;
  std::optional<std::string> state;
  std::string worker_path;
  double mixup_alpha = 0;
  double cutmix_alpha = 0;
  double mix_prob = 1;
  double mix_switch_prob = 0.5;
  std::string mix_mode = "batch";
  std::string mix_rule = "torchvision";
  int num_classes = 0;
  double label_smoothing = 0;
  int repeats = 1;
};

// The words are stoke/names.hpp's, so Python, the tools and C++ accept the same ones.
stoke::Options options_from(const LoaderArgs& a) {
  stoke::Options o;
  o.data = a.data;
  o.image_root = a.image_root;
  o.max_boxes = a.max_boxes;
  o.mask_field = a.mask_field;
  o.mask_ignore = a.mask_ignore;
  o.mask_depth = a.mask_depth;
  o.bytes_field = a.bytes_field;
  o.box_field = a.box_field;
  o.max_bytes = a.max_bytes;
  o.min_box_size = a.min_box_size;
  o.min_box_area = a.min_box_area;
  o.min_box_visible = a.min_box_visible;
  o.batch = a.batch;
  o.devices = stoke::parse_devices(a.devices);
  o.workers = a.workers;
  if (!a.size.empty()) {
    const stoke::ImageSize size = stoke::parse_size(a.size);
    o.height = size.height;
    o.width = size.width;
  }
  o.augment = stoke::parse_augment(a.augment);
  if (!a.pipeline.empty()) {
    if (o.height == 0)
      throw stoke::ConfigError("pipeline= needs size= (the output height and width)");
    if (a.channels != 1 && a.channels != 3)
      throw stoke::ConfigError("channels must be 1 (gray) or 3 (RGB), got " +
                               std::to_string(a.channels));
    std::vector<stoke::StepSpec> steps;
    for (const auto& [name, numbers, words] : a.pipeline) steps.push_back({name, numbers, words});
    o.pipeline = stoke::make_pipeline(o.height, o.width, a.channels, steps);
  }
  o.dtype = stoke::parse_dtype(a.dtype);
  o.layout = stoke::parse_layout(a.layout);
  o.mean = a.mean;
  o.stddev = a.std;
  o.seed = a.seed;
  o.shuffle = a.shuffle;
  o.last_batch = stoke::parse_last_batch(a.last_batch);
  o.rank = a.rank.value_or(-1);
  o.world = a.world.value_or(-1);
  o.on_error = stoke::parse_on_error(a.on_error);
  if (a.verify) o.verify = stoke::parse_verify(*a.verify);
  o.split = stoke::parse_split(a.split);
  o.label_field = a.label_field;
  o.max_classes = a.max_classes;
  o.shuffle_window = a.shuffle_window;
  o.cache_dir = a.cache_dir;
  const auto limit = stoke::parse_bytes(a.cache_limit);
  if (!limit)
    throw stoke::ConfigError("cache_limit '" + a.cache_limit +
                             "' is not a size: give bytes (an int) or a string such as \"16GiB\" "
                             "or \"500MB\" (0: no local copies)");
  o.cache_limit = *limit;
  o.prefetch = a.prefetch;
  o.max_workers = a.max_workers;
  o.stall_target = a.stall_target;
  o.monitor_window = a.monitor_window;
  if (a.state) o.resume = stoke::LoaderState::parse(*a.state);
  o.worker_path = a.worker_path;
  o.mixup_alpha = a.mixup_alpha;
  o.cutmix_alpha = a.cutmix_alpha;
  o.mix_prob = a.mix_prob;
  o.mix_switch_prob = a.mix_switch_prob;
  o.mix_mode = stoke::parse_mix_mode(a.mix_mode);
  o.mix_rule = stoke::parse_mix_rule(a.mix_rule);
  o.num_classes = a.num_classes;
  o.label_smoothing = a.label_smoothing;
  o.repeats = a.repeats;
  return o;
}

// The Python Loader: a stoke::Loader and the options it was made from, so load_state_dict()
// can replace it with one that resumes elsewhere (a C++ Loader's position is fixed at
// construction, apart from set_epoch).
struct PyLoader {
  stoke::Options options;
  std::unique_ptr<stoke::Loader> loader;

  explicit PyLoader(stoke::Options o)
      : options(std::move(o)), loader(std::make_unique<stoke::Loader>(options)) {}
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
nb::dict state_dict(const stoke::LoaderState& s) {
  nb::dict d;
  for_each_state_field(s, [&d](const char* key, const auto& value) { d[key] = value; });
  if (s.repeats != 1) d["repeats"] = s.repeats;  // as in serialize(): absent means 1
  return d;
}

template <class T>
T state_field(const nb::dict& d, const char* key) {
  if (!d.contains(key))
    throw stoke::ConfigError(std::string("state_dict lacks '") + key +
                             "' (expected a dict from Loader.state_dict())");
  try {
    return nb::cast<T>(d[key]);
  } catch (const nb::cast_error&) {
    throw stoke::ConfigError(std::string("state_dict['") + key + "'] is not an integer");
  }
}

// Replaces the loader by one continuing at `d`. The new one is made first, so a state that
// does not fit this loader (another dataset or batch) raises and leaves the old one working.
// A dict saved before states carried a position (no "position" key) still loads: its position
// is the plain one, as for a "stoke-state/1" string.
void load_state_dict(PyLoader& self, const nb::dict& d) {
  stoke::LoaderState s;
  const bool has_position = d.contains("position");
  for_each_state_field(s, [&](const char* key, auto& value) {
    if (std::string_view(key) == "position" && !has_position) return;
    value = state_field<std::decay_t<decltype(value)>>(d, key);
  });
  if (!has_position) s.position = s.plain_position();
  if (d.contains("repeats")) s.repeats = state_field<std::int64_t>(d, "repeats");
  stoke::Options o = self.options;
  o.resume = s;
  o.seed = s.seed;
  std::unique_ptr<stoke::Loader> fresh;
  {
    nb::gil_scoped_release unlocked;
    fresh = std::make_unique<stoke::Loader>(o);
  }
  self.options = std::move(o);
  self.loader = std::move(fresh);
}

nb::dict stats_dict(const stoke::Stats& s) {
  nb::dict d;
  d["batches"] = s.batches;
  d["samples"] = s.samples;
  d["padded"] = s.padded;
  d["skipped"] = s.skipped;
  nb::dict reasons;
  for (const auto& [k, v] : s.skipped_by_reason) reasons[k.c_str()] = v;
  d["skipped_by_reason"] = reasons;
  d["worker_restarts"] = s.worker_restarts;
  d["startup_s"] = s.startup_s;
  d["active_s"] = s.active_s;
  d["samples_per_s"] = s.samples_per_s;
  d["wait_s"] = s.wait_s;
  d["wait_fraction"] = s.wait_fraction;
  d["released"] = s.released;
  d["staging"] = stoke::staging_mode_name(s.staging);
  d["read_s"] = s.read_s;
  d["shard_cache"] = s.shard_cache;
  d["cache_bytes_fetched"] = s.cache_bytes_fetched;
  d["cache_hits"] = s.cache_hits;
  d["cache_misses"] = s.cache_misses;
  d["cache_evictions"] = s.cache_evictions;
  d["cache_fetch_wait_s"] = s.cache_fetch_wait_s;
  d["decode_s"] = s.decode_s;
  d["augment_s"] = s.augment_s;
  d["compute_s"] = s.compute_s;
  d["window_batches"] = s.window_batches;
  d["window_wait_fraction"] = s.window_wait_fraction;
  d["window_samples_per_s"] = s.window_samples_per_s;
  d["demand_samples_per_s"] = s.demand_samples_per_s;
  d["worker_busy_fraction"] = s.worker_busy_fraction;
  d["worker_samples_per_s"] = s.worker_samples_per_s;
  d["gpu_monitor"] = s.gpu_monitor;
  nb::list gpus;
  for (const stoke::GpuActivity& g : s.gpus) {
    nb::dict e;
    e["device"] = g.device;
    e["samples"] = g.samples;
    e["mean_percent"] = g.mean_percent;
    e["idle_fraction"] = g.idle_fraction;
    e["busy_fraction"] = g.busy_fraction;
    e["bursts"] = g.bursts;
    e["burst_then_idle"] = g.burst_then_idle;
    gpus.append(e);
  }
  d["gpus"] = gpus;
  d["verdict"] = s.verdict;
  d["workers_auto"] = s.workers_auto;
  d["prefetch_auto"] = s.prefetch_auto;
  nb::list decisions;
  for (const stoke::TuneDecision& t : s.decisions) {
    nb::dict e;
    e["at_s"] = t.at_s;
    e["what"] = stoke::tune_target_name(t.what);
    e["from"] = t.from;
    e["to"] = t.to;
    e["reason"] = t.reason;
    decisions.append(e);
  }
  d["decisions"] = decisions;
  d["workers"] = s.workers;
  d["workers_starting"] = s.workers_starting;
  d["slots"] = s.slots;
  d["arena_bytes"] = s.arena_bytes;
  return d;
}

}  // namespace

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

  nb::class_<stoke::Batch>(m, "Batch",
                           "One batch: exactly `size` samples split into one equal chunk per "
                           "device. Its memory returns to the workers when the batch and every "
                           "array and tensor made from it are gone (or release() is called and "
                           "no array remains).")
      .def_prop_ro("epoch", &stoke::Batch::epoch)
      .def_prop_ro("index", &stoke::Batch::index, "position within the epoch")
      .def_prop_ro("size", &stoke::Batch::size)
      .def_prop_ro("padded", &stoke::Batch::padded, "samples repeating earlier ones (valid == 0)")
      .def_prop_ro("device_count", &stoke::Batch::device_count)
      .def_prop_ro("pixels", &pixels,
                   "One array per device, as the device receives it (dtype, layout).")
      .def_prop_ro("labels", [](const stoke::Batch& b) { return host_array(b, b.labels()); })
      .def_prop_ro(
          "valid", [](const stoke::Batch& b) { return host_array(b, b.valid()); },
          "1 for a real sample, 0 for a padding repeat")
      .def_prop_ro("sample_ids",
                   [](const stoke::Batch& b) { return host_array(b, b.sample_ids()); })
      .def_prop_ro(
          "device_labels",
          [](const stoke::Batch& b) {
            return per_device(b, &stoke::DeviceChunk::device_labels, nb::dtype<std::int32_t>());
          },
          "One int32 array per device: its chunk's labels where its pixels are (on a "
          "GPU, copied there with them).")
      .def_prop_ro(
          "device_valid",
          [](const stoke::Batch& b) {
            return per_device(b, &stoke::DeviceChunk::device_valid, nb::dtype<std::uint8_t>());
          },
          "One uint8 array per device: its chunk's valid flags where its pixels are.")
      .def_prop_ro(
          "geometry",
          [](const stoke::Batch& b) {
            return Array(b, 0, b.geometry().data(), {static_cast<std::size_t>(b.size()), 6},
                         nb::dtype<float>(), -1);
          },
          "float32 (size, 6), host memory: each sample's map from its source image to its "
          "output, output = (sx * x + tx, sy * y + ty) (sx < 0 when mirrored), and the source's "
          "width and height: [sx, tx, sy, ty, width, height].")
      .def_prop_ro(
          "applied_ops",
          [](const stoke::Batch& b) {
            const int width = b.max_applied_ops();
            const std::span<const stoke::AppliedOp> all = b.applied_ops();
            // kNoFill (torchvision's fill=None) as None.
            const auto fill = [](float f) -> nb::object {
              return f == stoke::kNoFill ? nb::none() : nb::cast(f);
            };
            nb::list samples;
            for (int i = 0; i < b.size(); ++i) {
              nb::list ops;
              for (int k = 0; k < width; ++k) {
                const stoke::AppliedOp& op = all[static_cast<std::size_t>(i * width + k)];
                if (op.op == stoke::ImageOp::kNone) break;
                const std::string name(stoke::image_op_name(op.op));
                if (op.op == stoke::ImageOp::kAffine || op.op == stoke::ImageOp::kAffineAtOrigin ||
                    op.op == stoke::ImageOp::kAffineBilinear)
                  ops.append(nb::make_tuple(name, op.args[0], op.args[1], op.args[2], op.args[3],
                                            op.args[4], op.args[5], fill(op.args[6])));
                else if (op.op == stoke::ImageOp::kRotate)
                  ops.append(nb::make_tuple(name, op.args[0], fill(op.args[1])));
                else if (op.op == stoke::ImageOp::kShear)
                  ops.append(nb::make_tuple(name, op.args[0], static_cast<int>(op.args[1]),
                                            fill(op.args[2])));
                else if (op.op == stoke::ImageOp::kAugMix)
                  ops.append(nb::make_tuple(name, op.args[0], static_cast<int>(op.args[1]),
                                            op.args[2] == 1.f ? "bilinear" : "nearest",
                                            fill(op.args[3])));
                else if (op.op == stoke::ImageOp::kAugMixChain)
                  ops.append(nb::make_tuple(name, op.args[0], static_cast<int>(op.args[1])));
                else if (op.op == stoke::ImageOp::kGaussianBlur)
                  ops.append(nb::make_tuple(name, static_cast<int>(op.args[0]),
                                            static_cast<int>(op.args[1]), op.args[2]));
                else if (op.op == stoke::ImageOp::kContrast ||
                         op.op == stoke::ImageOp::kSaturation ||
                         op.op == stoke::ImageOp::kSharpness)  // the factor, 1 - factor or 0
                  ops.append(nb::make_tuple(name, op.args[0], op.args[1]));
                else if (op.op == stoke::ImageOp::kPosterize)
                  ops.append(nb::make_tuple(name, static_cast<int>(op.args[0])));
                else if (op.op == stoke::ImageOp::kErase)
                  ops.append(nb::make_tuple(
                      name, static_cast<int>(op.args[0]), static_cast<int>(op.args[1]),
                      static_cast<int>(op.args[2]), static_cast<int>(op.args[3]), op.args[4],
                      op.args[5], op.args[6]));
                else if (op.op == stoke::ImageOp::kEraseNoise ||
                         op.op == stoke::ImageOp::kEraseChannelNoise) {
                  std::uint64_t key = 0;
                  for (int j = 0; j < 3; ++j)
                    key |= static_cast<std::uint64_t>(op.args[4 + j]) << (16 * j);
                  ops.append(nb::make_tuple(
                      name, static_cast<int>(op.args[0]), static_cast<int>(op.args[1]),
                      static_cast<int>(op.args[2]), static_cast<int>(op.args[3]), key));
                } else if (op.op >= stoke::ImageOp::kPilAutocontrast)
                  ops.append(timm_op_tuple(name, op));
                else if (op.op == stoke::ImageOp::kGrayscale ||
                         op.op == stoke::ImageOp::kEqualize ||
                         op.op == stoke::ImageOp::kAutocontrast || op.op == stoke::ImageOp::kInvert)
                  ops.append(nb::make_tuple(name));
                else
                  ops.append(nb::make_tuple(name, op.args[0]));
              }
              samples.append(ops);
            }
            return samples;
          },
          "Per sample, the photometric ops it got in the order applied, as tuples of the op's "
          "name and its drawn numbers: ('brightness', factor), ('contrast', factor, rest), "
          "('saturation', factor, rest), ('hue', factor), ('grayscale',), ('solarize', "
          "threshold), ('posterize', bits), ('equalize',), ('autocontrast',), ('sharpness', "
          "factor, rest) (rest: the blend's 1 - factor as torch takes it when the factor "
          "torchvision got was no float32, the policies' 1 + m; else 0), "
          "('invert',), ('gaussian_blur', kernel_width, kernel_height, sigma), ('affine', "
          "angle, translate_x, translate_y, scale, shear_x, shear_y, fill) and "
          "('affine_at_origin', ...) (center [0, 0]), ('rotate', angle, fill), ('shear', m, "
          "axis, fill) (the policies' ShearX/ShearY: F.affine with shear degrees(atan(m)) "
          "about [0, 0]) (nearest), ('affine_bilinear', angle, translate_x, translate_y, scale, "
          "shear_x, shear_y, fill) (random_affine_bilinear: F.affine with "
          "interpolation=BILINEAR): each "
          "torchvision.transforms.v2.functional's op of that name on uint8 pixels. timm's ops "
          "(timm_augment) come as ('pil_<name>', numbers...), timm.data.auto_augment's function "
          "<name> and its arguments: ('pil_rotate', degrees, filter, (r, g, b)) and the other "
          "warps alike (filter: Pillow's number, 2 bilinear or 3 bicubic), ('pil_posterize', "
          "bits), ('pil_solarize', threshold), ('pil_solarize_add', add, threshold), "
          "('pil_color', factor) and contrast, brightness, sharpness; AugMix as "
          "('timm_augmix_chain', weight, ops, index, blended) before each chain's ops and "
          "('timm_augmix_blend', m) after the last. torchvision's AugMix (augmix): "
          "('augmix', m0, chains, interpolation, fill), then per chain ('augmix_chain', "
          "weight, ops) and its ops, whose warps sample with that interpolation; the output is "
          "m0 * image + the sum of weight * chain in float32, truncated; a fill of None is "
          "torchvision's fill=None. Then "
          "random_erasing's rectangle, if any: ('erase', top, left, height, width, v0, v1, v2) "
          "(F.erase with those values, in normalized units for float outputs), or "
          "('erase_noise', top, left, height, width, key) and ('erase_channel_noise', ...) "
          "(N(0, 1) per value or per channel, from stoke's noise with that key).")
      .def_prop_ro(
          "masks",
          [](const stoke::Batch& b) {
            return per_device(
                b, &stoke::DeviceChunk::device_masks,
                b.mask_bytes() == 2 ? nb::dtype<std::uint16_t>() : nb::dtype<std::uint8_t>(),
                {static_cast<std::size_t>(b.height()), static_cast<std::size_t>(b.width())},
                b.mask_bytes() > 0 ? nullptr
                                   : "masks (masks come from a list file's third column "
                                     "or, in shards, the member named by mask_field)");
          },
          "One array per device, (samples, height, width) uint8 or uint16 labels, where "
          "its pixels are: each sample's mask, moved with its pixels by nearest "
          "neighbour (padding: mask_ignore).")
      .def_prop_ro("max_bytes", &stoke::Batch::max_bytes,
                   "pass-through bytes per sample (0: the data has none)")
      .def_prop_ro(
          "bytes",
          [](const stoke::Batch& b) {
            return per_device(b, &stoke::DeviceChunk::device_sample_bytes,
                              nb::dtype<std::uint8_t>(), {static_cast<std::size_t>(b.max_bytes())},
                              no_bytes(b));
          },
          "One uint8 array per device, (samples, max_bytes): each sample's bytes_field member, "
          "untouched and zero-padded; byte_counts[g][i] of them are real.")
      .def_prop_ro(
          "byte_counts",
          [](const stoke::Batch& b) {
            return per_device(b, &stoke::DeviceChunk::device_byte_counts, nb::dtype<std::int32_t>(),
                              {}, no_bytes(b));
          },
          "One int32 array per device, (samples,): the length of each sample's bytes.")
      .def_prop_ro("num_classes", &stoke::Batch::num_classes,
                   "soft label width (0: the loader makes no soft labels)")
      .def_prop_ro(
          "soft_labels",
          [](const stoke::Batch& b) {
            return per_device(b, &stoke::DeviceChunk::device_soft_labels, nb::dtype<float>(),
                              {static_cast<std::size_t>(b.num_classes())},
                              b.num_classes() > 0 ? nullptr : "soft labels (set num_classes)");
          },
          "One float32 array per device, (samples, num_classes), where its pixels are: each "
          "sample's one-hot label, smoothed by label_smoothing and mixed with its partner's as "
          "its pixels were (a target for a soft-target cross-entropy).")
      .def_prop_ro("mixing", &mixing_dict,
                   "Each sample's MixUp/CutMix, host NumPy arrays over the batch: 'partner' "
                   "(int32, the other sample's index within the same device chunk), 'op' (uint8: "
                   "0 none, 1 MixUp, 2 CutMix), 'lam' (float64: the drawn lambda, CutMix's "
                   "corrected to its box), 'label_weights' (float32 (size, 2): the sample's and "
                   "its partner's weights in the soft labels) and 'box' (int32 (size, 4): "
                   "CutMix's top, left, bottom, right in output pixels). Raises when the loader "
                   "does not mix.")
      .def_prop_ro("max_boxes", &stoke::Batch::max_boxes,
                   "box rows per sample (0: the data has no boxes)")
      .def_prop_ro(
          "boxes",
          [](const stoke::Batch& b) {
            return per_device(b, &stoke::DeviceChunk::device_boxes, nb::dtype<float>(),
                              {static_cast<std::size_t>(b.max_boxes()), 4}, no_boxes(b));
          },
          "One float32 array per device, (samples, max_boxes, 4): xyxy boxes in output pixels, "
          "where its pixels are; the first box_counts[g][i] rows of sample i are real, the rest "
          "0.")
      .def_prop_ro(
          "box_classes",
          [](const stoke::Batch& b) {
            return per_device(b, &stoke::DeviceChunk::device_box_classes, nb::dtype<std::int32_t>(),
                              {static_cast<std::size_t>(b.max_boxes())}, no_boxes(b));
          },
          "One int32 array per device, (samples, max_boxes): each box's class (contiguous "
          "indices of the categories in ascending id order), -1 in padding rows.")
      .def_prop_ro(
          "box_counts",
          [](const stoke::Batch& b) {
            return per_device(b, &stoke::DeviceChunk::device_box_counts, nb::dtype<std::int32_t>(),
                              {}, no_boxes(b));
          },
          "One int32 array per device, (samples,): how many of each sample's box rows are real.")
      .def(
          "release",
          [](stoke::Batch& b) {
            nb::gil_scoped_release unlocked;
            b.release();
          },
          "Drops this object's hold on the slot (arrays already taken keep theirs). After it, "
          "every attribute of the batch raises stoke.Error.");

  nb::class_<PyLoader>(m, "Loader")
      .def(
          "__init__",
          [](PyLoader* self, LoaderArgs args) {
            stoke::Options o = options_from(args);
            // Indexing the data and starting the workers take a while; other threads run.
            nb::gil_scoped_release unlocked;
            new (self) PyLoader(std::move(o));
          },
          "args"_a)
      .def("__len__", [](const PyLoader& l) { return l.loader->batches_per_epoch(); })
      .def(
          "__iter__", [](nb::handle self) { return self; }, nb::rv_policy::reference)
      .def("__next__",
           [](PyLoader& l) {
             std::optional<stoke::Batch> b;
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
      .def_prop_ro("rank", [](const PyLoader& l) { return l.loader->rank(); })
      .def_prop_ro("world", [](const PyLoader& l) { return l.loader->world(); });

  nb::class_<LoaderArgs>(m, "_LoaderArgs")
      .def(nb::init<>())
      .def_rw("data", &LoaderArgs::data)
      .def_rw("batch", &LoaderArgs::batch)
      .def_rw("devices", &LoaderArgs::devices)
      .def_rw("workers", &LoaderArgs::workers)
      .def_rw("size", &LoaderArgs::size)
      .def_rw("augment", &LoaderArgs::augment)
      .def_rw("dtype", &LoaderArgs::dtype)
      .def_rw("layout", &LoaderArgs::layout)
      .def_rw("mean", &LoaderArgs::mean)
      .def_rw("std", &LoaderArgs::std)
      .def_rw("seed", &LoaderArgs::seed)
      .def_rw("shuffle", &LoaderArgs::shuffle)
      .def_rw("last_batch", &LoaderArgs::last_batch)
      .def_rw("rank", &LoaderArgs::rank)
      .def_rw("world", &LoaderArgs::world)
      .def_rw("on_error", &LoaderArgs::on_error)
      .def_rw("verify", &LoaderArgs::verify)
      .def_rw("split", &LoaderArgs::split)
      .def_rw("label_field", &LoaderArgs::label_field)
      .def_rw("max_classes", &LoaderArgs::max_classes)
      .def_rw("image_root", &LoaderArgs::image_root)
      .def_rw("max_boxes", &LoaderArgs::max_boxes)
      .def_rw("pipeline", &LoaderArgs::pipeline)
      .def_rw("channels", &LoaderArgs::channels)
      .def_rw("mask_field", &LoaderArgs::mask_field)
      .def_rw("mask_ignore", &LoaderArgs::mask_ignore)
      .def_rw("mask_depth", &LoaderArgs::mask_depth)
      .def_rw("bytes_field", &LoaderArgs::bytes_field)
      .def_rw("box_field", &LoaderArgs::box_field)
      .def_rw("max_bytes", &LoaderArgs::max_bytes)
      .def_rw("min_box_size", &LoaderArgs::min_box_size)
      .def_rw("min_box_area", &LoaderArgs::min_box_area)
      .def_rw("min_box_visible", &LoaderArgs::min_box_visible)
      .def_rw("shuffle_window", &LoaderArgs::shuffle_window)
      .def_rw("cache_dir", &LoaderArgs::cache_dir)
      .def_rw("cache_limit", &LoaderArgs::cache_limit)
      .def_rw("prefetch", &LoaderArgs::prefetch)
      .def_rw("max_workers", &LoaderArgs::max_workers)
      .def_rw("stall_target", &LoaderArgs::stall_target)
      .def_rw("monitor_window", &LoaderArgs::monitor_window)
      .def_rw("state", &LoaderArgs::state)
      .def_rw("worker_path", &LoaderArgs::worker_path)
      .def_rw("mixup_alpha", &LoaderArgs::mixup_alpha)
      .def_rw("cutmix_alpha", &LoaderArgs::cutmix_alpha)
      .def_rw("mix_prob", &LoaderArgs::mix_prob)
      .def_rw("mix_switch_prob", &LoaderArgs::mix_switch_prob)
      .def_rw("mix_mode", &LoaderArgs::mix_mode)
      .def_rw("mix_rule", &LoaderArgs::mix_rule)
      .def_rw("num_classes", &LoaderArgs::num_classes)
      .def_rw("label_smoothing", &LoaderArgs::label_smoothing)
      .def_rw("repeats", &LoaderArgs::repeats);

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
}
