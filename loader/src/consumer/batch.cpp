#include "stoke/batch.hpp"

#include <string>

#include "consumer/loader_core.hpp"
#include "stoke/error.hpp"

namespace stoke {

using detail::BatchLease;

namespace {

// Batch's constructor is private to Loader, which always passes a BatchLease.
BatchLease& as_lease(void* held) {
  return *static_cast<BatchLease*>(held);
}

// The held batch's shape and arrays, as its arena's header lays them out.
const detail::ArenaHeader& header(void* held) {
  return as_lease(held).core().view.header();
}

// The held slot's array `field` (an ArenaView accessor), `per_sample` elements per sample.
template <class T>
std::span<const T> slot_array(const BatchLease& l,
                              T* (detail::ArenaView::*field)(std::uint32_t) const,
                              std::size_t per_sample) {
  const auto& c = l.core();
  return {(c.view.*field)(static_cast<std::uint32_t>(l.slot())),
          std::size_t{c.view.header().batch} * per_sample};
}

void check_device(int device, int count) {
  if (device < 0 || device >= count)
    throw Error("device " + std::to_string(device) + " out of range: this batch has " +
                std::to_string(count) + " device(s)");
}

}  // namespace

Batch::Batch(std::shared_ptr<void> lease) : lease_(std::move(lease)) {}

void* Batch::held() const {
  if (lease_ == nullptr)
    throw Error("this batch was released (or moved from): its memory went back to the loader");
  return lease_.get();
}

std::int64_t Batch::epoch() const {
  return as_lease(held()).epoch();
}
std::int64_t Batch::index() const {
  return as_lease(held()).index();
}
int Batch::size() const {
  return static_cast<int>(header(held()).batch);
}
int Batch::padded() const {
  return as_lease(held()).padded();
}
int Batch::height() const {
  return header(held()).out_height;
}
int Batch::width() const {
  return header(held()).out_width;
}
int Batch::channels() const {
  return header(held()).out_channels;
}
int Batch::device_count() const {
  return as_lease(held()).core().devices.count;
}

std::span<const std::uint8_t> Batch::pixels() const {
  const BatchLease& l = as_lease(held());
  return slot_array(l, &detail::ArenaView::pixels, l.core().view.header().sample_bytes);
}
std::span<const std::int32_t> Batch::labels() const {
  return slot_array(as_lease(held()), &detail::ArenaView::labels, 1);
}
std::span<const std::int32_t> Batch::sources() const {
  return slot_array(as_lease(held()), &detail::ArenaView::sources, 1);
}

std::span<const std::uint8_t> Batch::valid() const {
  return slot_array(as_lease(held()), &detail::ArenaView::valid, 1);
}
std::span<const std::int64_t> Batch::sample_ids() const {
  return slot_array(as_lease(held()), &detail::ArenaView::ids, 1);
}

int Batch::max_boxes() const {
  return static_cast<int>(header(held()).max_boxes);
}
std::span<const float> Batch::boxes() const {
  const BatchLease& l = as_lease(held());
  return slot_array(l, &detail::ArenaView::boxes,
                    std::size_t{l.core().view.header().max_boxes} * 4);
}
std::span<const std::int32_t> Batch::box_classes() const {
  const BatchLease& l = as_lease(held());
  return slot_array(l, &detail::ArenaView::box_classes, l.core().view.header().max_boxes);
}
std::span<const std::int32_t> Batch::box_counts() const {
  const BatchLease& l = as_lease(held());
  return slot_array(l, &detail::ArenaView::box_counts,
                    l.core().view.header().max_boxes > 0 ? 1 : 0);
}

int Batch::mask_bytes() const {
  return static_cast<int>(header(held()).mask_bytes);
}
std::span<const std::uint8_t> Batch::masks() const {
  const BatchLease& l = as_lease(held());
  const detail::ArenaHeader& h = l.core().view.header();
  return slot_array(l, &detail::ArenaView::masks,
                    std::size_t(h.out_height) * std::size_t(h.out_width) * h.mask_bytes);
}

int Batch::max_bytes() const {
  return static_cast<int>(header(held()).max_bytes);
}
std::span<const std::uint8_t> Batch::bytes() const {
  const BatchLease& l = as_lease(held());
  return slot_array(l, &detail::ArenaView::bytes, l.core().view.header().max_bytes);
}
std::span<const std::int32_t> Batch::byte_counts() const {
  const BatchLease& l = as_lease(held());
  return slot_array(l, &detail::ArenaView::byte_counts,
                    l.core().view.header().max_bytes > 0 ? 1 : 0);
}

int Batch::num_classes() const {
  return static_cast<int>(header(held()).soft_classes);
}
std::span<const float> Batch::soft_labels() const {
  const BatchLease& l = as_lease(held());
  return slot_array(l, &detail::ArenaView::soft_labels, l.core().view.header().soft_classes);
}
std::span<const MixSample> Batch::mixing() const {
  const BatchLease& l = as_lease(held());
  return slot_array(l, &detail::ArenaView::mix_samples, l.core().view.header().mixing);
}

int Batch::max_applied_ops() const {
  return static_cast<int>(header(held()).max_ops);
}
std::span<const AppliedOp> Batch::applied_ops() const {
  const BatchLease& l = as_lease(held());
  return slot_array(l, &detail::ArenaView::applied_ops, l.core().view.header().max_ops);
}
std::span<const float> Batch::geometry() const {
  return slot_array(as_lease(held()), &detail::ArenaView::geometry, 6);
}

DeviceChunk Batch::chunk(int device) const {
  check_device(device, device_count());
  const BatchLease& lease = as_lease(held());
  const auto& core = lease.core();
  const detail::ArenaHeader& h = core.view.header();
  const detail::Staging* staging = core.staging.get();
  const int per = size() / device_count();
  const int first = device * per;
  DeviceChunk c;
  c.device = device;
  c.first = first;
  c.samples = per;
  // This device's samples of a per-sample array of the batch (empty ones stay empty).
  const auto mine = [&](auto all) {
    const std::size_t k = all.size() / std::size_t{h.batch};
    return all.subspan(first * k, per * k);
  };
  // ...and, for the arrays at `offset` in the slot's labels..valid bytes, where the device
  // reads them: its copy on a GPU, else the slot itself (null when the data has none).
  const auto place = [&](auto all, std::size_t offset, auto& part, auto& on_device) {
    part = mine(all);
    if (part.empty()) return;
    using T = typename decltype(all)::element_type;
    const std::size_t k = part.size() / static_cast<std::size_t>(per);
    on_device =
        staging == nullptr ? part.data() : staging->field<T>(lease.slot(), device, offset, k);
  };
  c.pixels = mine(pixels());
  c.sample_ids = mine(sample_ids());
  place(labels(), h.labels_offset, c.labels, c.device_labels);
  place(valid(), h.valid_offset, c.valid, c.device_valid);
  place(sources(), h.sources_offset, c.sources, c.device_sources);
  place(boxes(), h.boxes_offset, c.boxes, c.device_boxes);
  place(box_classes(), h.box_classes_offset, c.box_classes, c.device_box_classes);
  place(box_counts(), h.box_counts_offset, c.box_counts, c.device_box_counts);
  place(masks(), h.masks_offset, c.masks, c.device_masks);
  place(bytes(), h.bytes_offset, c.sample_bytes, c.device_sample_bytes);
  place(byte_counts(), h.byte_counts_offset, c.byte_counts, c.device_byte_counts);
  place(soft_labels(), h.soft_labels_offset, c.soft_labels, c.device_soft_labels);
  place(mixing(), h.mix_offset, c.mixing, c.device_mixing);
  c.shape = {per, h.out_height, h.out_width, h.out_channels};
  if (staging == nullptr) {
    c.data = c.pixels.data();
    c.bytes = c.pixels.size();
    return c;
  }
  const detail::StagingConfig& config = staging->config();
  c.data = staging->output(lease.slot(), device);
  c.bytes = staging->output_bytes();
  c.dtype = config.dtype;
  if (config.dtype != DType::kUInt8) {
    c.layout = config.layout;
    if (c.layout == Layout::kNCHW) c.shape = {per, h.out_channels, h.out_height, h.out_width};
  }
  if (staging->gpu()) {
    c.cuda_device = core.devices.ids[static_cast<std::size_t>(device)];
    c.ready = static_cast<CUevent_st*>(staging->ready(lease.slot(), device));
    c.stream = static_cast<CUstream_st*>(staging->stream(device));
  }
  return c;
}

void Batch::wait(int device) const {
  check_device(device, device_count());
  const BatchLease& lease = as_lease(held());
  if (const detail::Staging* staging = lease.core().staging.get())
    staging->wait(lease.slot(), device);
}

void Batch::wait_on(int device, CUstream_st* stream) const {
  check_device(device, device_count());
  const BatchLease& lease = as_lease(held());
  const detail::Staging* staging = lease.core().staging.get();
  if (staging != nullptr && staging->gpu()) staging->wait_on(lease.slot(), device, stream);
}

void Batch::record_stream(int device, CUstream_st* stream) const {
  check_device(device, device_count());
  as_lease(held()).record_stream(device, stream);
}

void Batch::release() {
  lease_.reset();
}

}  // namespace stoke
