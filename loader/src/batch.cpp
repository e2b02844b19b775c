#include "stoke/batch.hpp"

#include <cassert>

#include "loader_core.hpp"

namespace stoke {

using detail::BatchLease;

Batch::Batch(std::shared_ptr<BatchLease> lease) : lease_(std::move(lease)) {}

std::int64_t Batch::epoch() const {
  return lease_->epoch();
}
std::int64_t Batch::index() const {
  return lease_->index();
}
int Batch::size() const {
  return lease_->core().batch;
}
int Batch::padded() const {
  return lease_->padded();
}
int Batch::height() const {
  return lease_->core().height;
}
int Batch::width() const {
  return lease_->core().width;
}
int Batch::channels() const {
  return lease_->core().channels;
}
int Batch::device_count() const {
  return lease_->core().devices;
}

std::span<const std::uint8_t> Batch::pixels() const {
  const auto& c = lease_->core();
  return {c.view.pixels(static_cast<std::uint32_t>(lease_->slot())),
          static_cast<std::size_t>(c.batch) * c.view.header().sample_bytes};
}

std::span<const std::int32_t> Batch::labels() const {
  const auto& c = lease_->core();
  return {c.view.labels(static_cast<std::uint32_t>(lease_->slot())),
          static_cast<std::size_t>(c.batch)};
}

std::span<const std::uint8_t> Batch::valid() const {
  const auto& c = lease_->core();
  return {c.view.valid(static_cast<std::uint32_t>(lease_->slot())),
          static_cast<std::size_t>(c.batch)};
}

std::span<const std::int64_t> Batch::sample_ids() const {
  const auto& c = lease_->core();
  return {c.view.ids(static_cast<std::uint32_t>(lease_->slot())),
          static_cast<std::size_t>(c.batch)};
}

DeviceChunk Batch::chunk(int device) const {
  assert(device >= 0 && device < device_count());
  const int per = size() / device_count();
  const int first = device * per;
  const std::size_t sample_bytes = lease_->core().view.header().sample_bytes;
  DeviceChunk c;
  c.device = device;
  c.first = first;
  c.samples = per;
  c.pixels = pixels().subspan(first * sample_bytes, per * sample_bytes);
  c.labels = labels().subspan(first, per);
  c.valid = valid().subspan(first, per);
  c.sample_ids = sample_ids().subspan(first, per);
  const auto& core = lease_->core();
  const detail::Staging* staging = core.staging.get();
  c.shape = {per, core.height, core.width, core.channels};
  if (staging == nullptr) {
    c.data = c.pixels.data();
    c.bytes = c.pixels.size();
    return c;
  }
  const detail::StagingConfig& config = staging->config();
  c.data = staging->output(lease_->slot(), device);
  c.bytes = staging->output_bytes();
  c.dtype = config.dtype;
  if (config.dtype != DType::kUInt8) {
    c.layout = config.layout;
    if (c.layout == Layout::kNCHW) c.shape = {per, core.channels, core.height, core.width};
  }
  if (staging->gpu()) {
    c.cuda_device = core.cuda_ids[static_cast<std::size_t>(device)];
    c.ready = static_cast<CUevent_st*>(staging->ready(lease_->slot(), device));
    c.stream = static_cast<CUstream_st*>(staging->stream(device));
  }
  return c;
}

void Batch::wait(int device) const {
  assert(device >= 0 && device < device_count());
  if (const detail::Staging* staging = lease_->core().staging.get())
    staging->wait(lease_->slot(), device);
}

void Batch::record_stream(int device, CUstream_st* stream) const {
  assert(device >= 0 && device < device_count());
  lease_->record_stream(device, stream);
}

void Batch::release() {
  lease_.reset();
}

}  // namespace stoke
