#include "stoke/batch.hpp"

#include <string>

#include "loader_core.hpp"
#include "stoke/error.hpp"

namespace stoke {

using detail::BatchLease;

namespace {

// Batch's constructor is private to Loader, which always passes a BatchLease.
BatchLease& as_lease(void* held) {
  return *static_cast<BatchLease*>(held);
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
  return as_lease(held()).core().batch;
}
int Batch::padded() const {
  return as_lease(held()).padded();
}
int Batch::height() const {
  return as_lease(held()).core().height;
}
int Batch::width() const {
  return as_lease(held()).core().width;
}
int Batch::channels() const {
  return as_lease(held()).core().channels;
}
int Batch::device_count() const {
  return as_lease(held()).core().devices;
}

std::span<const std::uint8_t> Batch::pixels() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.pixels(static_cast<std::uint32_t>(l.slot())),
          static_cast<std::size_t>(c.batch) * c.view.header().sample_bytes};
}

std::span<const std::int32_t> Batch::labels() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.labels(static_cast<std::uint32_t>(l.slot())), static_cast<std::size_t>(c.batch)};
}

std::span<const std::uint8_t> Batch::valid() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.valid(static_cast<std::uint32_t>(l.slot())), static_cast<std::size_t>(c.batch)};
}

std::span<const std::int64_t> Batch::sample_ids() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.ids(static_cast<std::uint32_t>(l.slot())), static_cast<std::size_t>(c.batch)};
}

int Batch::max_boxes() const {
  return as_lease(held()).core().max_boxes;
}

int Batch::mask_bytes() const {
  return as_lease(held()).core().mask_bytes;
}

std::span<const std::uint8_t> Batch::masks() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.masks(static_cast<std::uint32_t>(l.slot())),
          static_cast<std::size_t>(c.batch) * c.height * c.width * c.mask_bytes};
}

int Batch::max_bytes() const {
  return as_lease(held()).core().max_bytes;
}

std::span<const std::uint8_t> Batch::bytes() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.bytes(static_cast<std::uint32_t>(l.slot())),
          static_cast<std::size_t>(c.batch) * c.max_bytes};
}

std::span<const std::int32_t> Batch::byte_counts() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.byte_counts(static_cast<std::uint32_t>(l.slot())),
          c.max_bytes > 0 ? static_cast<std::size_t>(c.batch) : 0};
}

std::span<const float> Batch::geometry() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.geometry(static_cast<std::uint32_t>(l.slot())),
          static_cast<std::size_t>(c.batch) * 6};
}

std::span<const float> Batch::boxes() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.boxes(static_cast<std::uint32_t>(l.slot())),
          static_cast<std::size_t>(c.batch) * c.max_boxes * 4};
}

std::span<const std::int32_t> Batch::box_classes() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.box_classes(static_cast<std::uint32_t>(l.slot())),
          static_cast<std::size_t>(c.batch) * c.max_boxes};
}

std::span<const std::int32_t> Batch::box_counts() const {
  const BatchLease& l = as_lease(held());
  const auto& c = l.core();
  return {c.view.box_counts(static_cast<std::uint32_t>(l.slot())),
          c.max_boxes > 0 ? static_cast<std::size_t>(c.batch) : 0};
}

DeviceChunk Batch::chunk(int device) const {
  check_device(device, device_count());
  const BatchLease& lease = as_lease(held());
  const int per = size() / device_count();
  const int first = device * per;
  const std::size_t sample_bytes = lease.core().view.header().sample_bytes;
  DeviceChunk c;
  c.device = device;
  c.first = first;
  c.samples = per;
  c.pixels = pixels().subspan(first * sample_bytes, per * sample_bytes);
  c.labels = labels().subspan(first, per);
  c.valid = valid().subspan(first, per);
  c.sample_ids = sample_ids().subspan(first, per);
  const auto& core = lease.core();
  const std::size_t max_boxes = static_cast<std::size_t>(core.max_boxes);
  c.boxes = boxes().subspan(first * max_boxes * 4, per * max_boxes * 4);
  c.box_classes = box_classes().subspan(first * max_boxes, per * max_boxes);
  c.box_counts = box_counts().subspan(max_boxes > 0 ? first : 0, max_boxes > 0 ? per : 0);
  const std::size_t mask_bytes =
      static_cast<std::size_t>(core.mask_bytes) * core.height * core.width;
  c.masks = masks().subspan(first * mask_bytes, per * mask_bytes);
  const std::size_t max_bytes = static_cast<std::size_t>(core.max_bytes);
  c.sample_bytes = bytes().subspan(first * max_bytes, per * max_bytes);
  c.byte_counts = byte_counts().subspan(max_bytes > 0 ? first : 0, max_bytes > 0 ? per : 0);
  const detail::Staging* staging = core.staging.get();
  c.shape = {per, core.height, core.width, core.channels};
  if (staging == nullptr) {
    c.data = c.pixels.data();
    c.bytes = c.pixels.size();
    c.device_labels = c.labels.data();
    c.device_valid = c.valid.data();
    if (max_boxes > 0) {
      c.device_boxes = c.boxes.data();
      c.device_box_classes = c.box_classes.data();
      c.device_box_counts = c.box_counts.data();
    }
    if (mask_bytes > 0) c.device_masks = c.masks.data();
    if (max_bytes > 0) {
      c.device_sample_bytes = c.sample_bytes.data();
      c.device_byte_counts = c.byte_counts.data();
    }
    return c;
  }
  const detail::StagingConfig& config = staging->config();
  c.data = staging->output(lease.slot(), device);
  c.bytes = staging->output_bytes();
  c.device_labels = staging->labels(lease.slot(), device);
  c.device_valid = staging->valid(lease.slot(), device);
  if (max_boxes > 0) {
    const detail::ArenaHeader& h = core.view.header();
    c.device_boxes = staging->field<float>(lease.slot(), device, h.boxes_offset, max_boxes * 4);
    c.device_box_classes =
        staging->field<std::int32_t>(lease.slot(), device, h.box_classes_offset, max_boxes);
    c.device_box_counts = staging->field<std::int32_t>(lease.slot(), device, h.box_counts_offset, 1);
  }
  if (mask_bytes > 0)
    c.device_masks = staging->field<std::uint8_t>(lease.slot(), device,
                                                  core.view.header().masks_offset, mask_bytes);
  if (max_bytes > 0) {
    c.device_sample_bytes = staging->field<std::uint8_t>(lease.slot(), device,
                                                         core.view.header().bytes_offset, max_bytes);
    c.device_byte_counts = staging->field<std::int32_t>(
        lease.slot(), device, core.view.header().byte_counts_offset, 1);
  }
  c.dtype = config.dtype;
  if (config.dtype != DType::kUInt8) {
    c.layout = config.layout;
    if (c.layout == Layout::kNCHW) c.shape = {per, core.channels, core.height, core.width};
  }
  if (staging->gpu()) {
    c.cuda_device = core.cuda_ids[static_cast<std::size_t>(device)];
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
