// Batch: its pixels, labels and fields as arrays per device (array.hpp), its mixing as NumPy
// arrays, and release().

#include <nanobind/ndarray.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "array.hpp"
#include "bindings.hpp"

namespace stoke::python {
namespace {

nb::list pixels(const Batch& b) {
  nb::list out;
  for (int g = 0; g < b.device_count(); ++g) {
    const DeviceChunk c = b.chunk(g);
    std::vector<std::size_t> shape(c.shape.begin(), c.shape.end());
    out.append(Array(b, g, c.data, std::move(shape), dlpack_dtype(c.dtype), c.cuda_device));
  }
  return out;
}

const char* no_boxes(const Batch& b) {
  return b.max_boxes() > 0 ? nullptr
                           : "boxes (boxes come from a COCO annotation file: data='...json')";
}
const char* no_bytes(const Batch& b) {
  return b.max_bytes() > 0 ? nullptr : "pass-through bytes (set bytes_field)";
}

// Batch.mixing: the slot's MixSamples as NumPy arrays (copies: a batch's worth of small
// numbers), one per field.
nb::dict mixing_dict(const Batch& b) {
  const std::span<const MixSample> mix = b.mixing();
  if (mix.empty())
    throw ConfigError(
        "this loader does not mix: set mixup_alpha or cutmix_alpha (and num_classes)");
  const std::size_t n = mix.size();
  auto partner = std::make_unique<std::int32_t[]>(n);
  auto op = std::make_unique<std::uint8_t[]>(n);
  auto lam = std::make_unique<double[]>(n);
  auto weights = std::make_unique<float[]>(2 * n);
  auto box = std::make_unique<std::int32_t[]>(4 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const MixSample& m = mix[i];
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

}  // namespace

void bind_batch(nb::module_& m) {
  nb::class_<Batch>(m, "Batch",
                    "One batch: exactly `size` samples split into one equal chunk per "
                    "device. Its memory returns to the workers when the batch and every "
                    "array and tensor made from it are gone (or release() is called and "
                    "no array remains).")
      .def_prop_ro("epoch", &Batch::epoch)
      .def_prop_ro("index", &Batch::index, "position within the epoch")
      .def_prop_ro("size", &Batch::size)
      .def_prop_ro("padded", &Batch::padded, "samples repeating earlier ones (valid == 0)")
      .def_prop_ro("device_count", &Batch::device_count)
      .def_prop_ro("pixels", &pixels,
                   "One array per device, as the device receives it (dtype, layout).")
      .def_prop_ro("labels", [](const Batch& b) { return host_array(b, b.labels()); })
      .def_prop_ro(
          "valid", [](const Batch& b) { return host_array(b, b.valid()); },
          "1 for a real sample, 0 for a padding repeat")
      .def_prop_ro("sample_ids", [](const Batch& b) { return host_array(b, b.sample_ids()); })
      .def_prop_ro(
          "sources", [](const Batch& b) { return host_array(b, b.sources()); },
          "each sample's source: its index in a mixture's sources, 0 for one dataset")
      .def_prop_ro(
          "device_labels",
          [](const Batch& b) {
            return per_device(b, &DeviceChunk::device_labels, nb::dtype<std::int32_t>());
          },
          "One int32 array per device: its chunk's labels where its pixels are (on a "
          "GPU, copied there with them).")
      .def_prop_ro(
          "device_valid",
          [](const Batch& b) {
            return per_device(b, &DeviceChunk::device_valid, nb::dtype<std::uint8_t>());
          },
          "One uint8 array per device: its chunk's valid flags where its pixels are.")
      .def_prop_ro(
          "device_sources",
          [](const Batch& b) {
            return per_device(b, &DeviceChunk::device_sources, nb::dtype<std::int32_t>());
          },
          "One int32 array per device: its chunk's sources where its pixels are.")
      .def_prop_ro(
          "geometry",
          [](const Batch& b) {
            return Array(b, 0, b.geometry().data(), {static_cast<std::size_t>(b.size()), 6},
                         nb::dtype<float>(), -1);
          },
          "float32 (size, 6), host memory: each sample's map from its source image to its "
          "output, output = (sx * x + tx, sy * y + ty) (sx < 0 when mirrored), and the source's "
          "width and height: [sx, tx, sy, ty, width, height].")
      .def_prop_ro("applied_ops", &applied_ops, kAppliedOpsDoc)
      .def_prop_ro(
          "masks",
          [](const Batch& b) {
            return per_device(
                b, &DeviceChunk::device_masks,
                b.mask_bytes() == 2 ? nb::dtype<std::uint16_t>() : nb::dtype<std::uint8_t>(),
                {static_cast<std::size_t>(b.height()), static_cast<std::size_t>(b.width())},
                b.mask_bytes() > 0 ? nullptr
                                   : "masks (masks come from a list file's third column "
                                     "or, in shards, the member named by mask_field)");
          },
          "One array per device, (samples, height, width) uint8 or uint16 labels, where "
          "its pixels are: each sample's mask, moved with its pixels by nearest "
          "neighbour (padding: mask_ignore).")
      .def_prop_ro("max_bytes", &Batch::max_bytes,
                   "pass-through bytes per sample (0: the data has none)")
      .def_prop_ro(
          "bytes",
          [](const Batch& b) {
            return per_device(b, &DeviceChunk::device_sample_bytes, nb::dtype<std::uint8_t>(),
                              {static_cast<std::size_t>(b.max_bytes())}, no_bytes(b));
          },
          "One uint8 array per device, (samples, max_bytes): each sample's bytes_field member, "
          "untouched and zero-padded; byte_counts[g][i] of them are real.")
      .def_prop_ro(
          "byte_counts",
          [](const Batch& b) {
            return per_device(b, &DeviceChunk::device_byte_counts, nb::dtype<std::int32_t>(), {},
                              no_bytes(b));
          },
          "One int32 array per device, (samples,): the length of each sample's bytes.")
      .def_prop_ro("num_classes", &Batch::num_classes,
                   "soft label width (0: the loader makes no soft labels)")
      .def_prop_ro(
          "soft_labels",
          [](const Batch& b) {
            return per_device(b, &DeviceChunk::device_soft_labels, nb::dtype<float>(),
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
      .def_prop_ro("max_boxes", &Batch::max_boxes, "box rows per sample (0: the data has no boxes)")
      .def_prop_ro(
          "boxes",
          [](const Batch& b) {
            return per_device(b, &DeviceChunk::device_boxes, nb::dtype<float>(),
                              {static_cast<std::size_t>(b.max_boxes()), 4}, no_boxes(b));
          },
          "One float32 array per device, (samples, max_boxes, 4): xyxy boxes in output pixels, "
          "where its pixels are; the first box_counts[g][i] rows of sample i are real, the rest "
          "0.")
      .def_prop_ro(
          "box_classes",
          [](const Batch& b) {
            return per_device(b, &DeviceChunk::device_box_classes, nb::dtype<std::int32_t>(),
                              {static_cast<std::size_t>(b.max_boxes())}, no_boxes(b));
          },
          "One int32 array per device, (samples, max_boxes): each box's class (contiguous "
          "indices of the categories in ascending id order), -1 in padding rows.")
      .def_prop_ro(
          "box_counts",
          [](const Batch& b) {
            return per_device(b, &DeviceChunk::device_box_counts, nb::dtype<std::int32_t>(), {},
                              no_boxes(b));
          },
          "One int32 array per device, (samples,): how many of each sample's box rows are real.")
      .def(
          "release",
          [](Batch& b) {
            nb::gil_scoped_release unlocked;
            b.release();
          },
          "Drops this object's hold on the slot (arrays already taken keep theirs). After it, "
          "every attribute of the batch raises stoke.Error.");
}

}  // namespace stoke::python
