#pragma once
// One delivered batch. Thread-safety: a Batch may be read from any thread; copies share the
// same memory. The bytes stay valid and unchanged while any copy of the Batch exists (or until
// release()); then the memory returns to the workers.
//
// A Batch after release(), or moved from, is empty(): every other accessor throws stoke::Error
// rather than reading a slot it no longer holds.
//
// GPU batches: each device's chunk (pixels, labels, valid flags and boxes) arrives asynchronously
// on stoke's stream for that device. Call wait_on(device, your_stream) before enqueuing work that
// reads it (the GPU waits, the host does not), or wait() to block the host. If work you
// enqueued still reads the chunk when you drop the Batch, call record_stream() first (as with
// torch's Tensor.record_stream): stoke then rewrites those buffers, and lets workers rewrite
// the slot, only after your stream has passed that work.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "stoke/dtype.hpp"
#include "stoke/mix_sample.hpp"
#include "stoke/pipeline.hpp"

// The CUDA runtime's handle types (cudaStream_t is CUstream_st*, cudaEvent_t is CUevent_st*),
// declared here so this header needs no CUDA include.
struct CUstream_st;
struct CUevent_st;

namespace stoke {

// The part of a batch that belongs to one device: samples [first, first + samples).
struct DeviceChunk {
  int device = 0;
  int first = 0;
  int samples = 0;
  // Host copies, always available: the uint8 NHWC pixels as the pipeline produced them (under
  // decode=gpu/hybrid on GPUs, only the samples the workers decoded: the devices hold the
  // others' pixels, in `data`).
  std::span<const std::uint8_t> pixels;  // samples x height x width x channels
  std::span<const std::int32_t> labels;
  std::span<const std::uint8_t> valid;
  std::span<const std::int32_t> sources;  // each sample's source in a mixture (0 otherwise)
  std::span<const std::int64_t> sample_ids;
  // Boxes (Batch::max_boxes() per sample; empty when the dataset has none): xyxy float32 in
  // output pixels, samples x max_boxes x 4; their classes (-1 in padding rows); and how many of
  // each sample's rows are real.
  std::span<const float> boxes;
  std::span<const std::int32_t> box_classes;  // samples x max_boxes
  std::span<const std::int32_t> box_counts;   // samples
  // Masks (Batch::mask_bytes() per label; empty when the data has none): samples x height x
  // width labels, uint8 or (mask_bytes 2) native-endian uint16.
  std::span<const std::uint8_t> masks;
  // Pass-through bytes (Batch::max_bytes() per sample; empty without): samples x max_bytes,
  // zero-padded, and each sample's length.
  std::span<const std::uint8_t> sample_bytes;
  std::span<const std::int32_t> byte_counts;
  // Soft labels (Batch::num_classes() per sample; empty without): samples x num_classes
  // float32, and each sample's mixing (empty when the loader does not mix).
  std::span<const float> soft_labels;
  std::span<const MixSample> mixing;

  // The chunk as the device receives it (Options::dtype and layout). On a GPU: device memory
  // there. On a host device: host memory (for uint8, the same bytes as `pixels`).
  const void* data = nullptr;
  std::size_t bytes = 0;
  DType dtype = DType::kUInt8;
  Layout layout = Layout::kNHWC;
  std::array<std::int64_t, 4> shape{};  // in layout order: {N, H, W, C} or {N, C, H, W}
  // The chunk's `samples` labels and valid flags where `data` is: device memory on a GPU
  // (copied with the pixels), else the host arrays above.
  const std::int32_t* device_labels = nullptr;
  const std::uint8_t* device_valid = nullptr;
  const std::int32_t* device_sources = nullptr;  // likewise for the sources
  // The chunk's boxes, box classes and counts where `data` is (null when there are none).
  const float* device_boxes = nullptr;
  const std::int32_t* device_box_classes = nullptr;
  const std::int32_t* device_box_counts = nullptr;
  const void* device_masks = nullptr;  // the chunk's masks where `data` is (null without)
  const std::uint8_t* device_sample_bytes = nullptr;  // likewise for the bytes and lengths
  const std::int32_t* device_byte_counts = nullptr;
  const float* device_soft_labels = nullptr;  // likewise for the soft labels and mixing
  const MixSample* device_mixing = nullptr;
  int cuda_device = -1;           // the CUDA ordinal, or -1 for a host device
  CUevent_st* ready = nullptr;    // completes when `data` and the labels are filled (GPU only)
  CUstream_st* stream = nullptr;  // stoke's stream for this device (GPU only)
};

class Batch {
 public:
  std::int64_t epoch() const;
  std::int64_t index() const;  // within the epoch
  int size() const;            // always the configured batch size
  int padded() const;          // samples that repeat earlier ones (valid == 0)
  int height() const;
  int width() const;
  int channels() const;

  std::span<const std::uint8_t> pixels() const;  // size() x height x width x channels
  std::span<const std::int32_t> labels() const;
  std::span<const std::uint8_t> valid() const;       // 1 = real sample, 0 = padding repeat
  // Each sample's source: its index among a mixture's datasets, 0 for a loader of one dataset.
  std::span<const std::int32_t> sources() const;
  std::span<const std::int64_t> sample_ids() const;  // dataset indices
  // Boxes (COCO data; docs/USAGE.md, "Detection and segmentation"): each sample has
  // max_boxes() rows of xyxy float32 in output pixels, the first box_counts()[i] of them real;
  // padding rows are 0 with class -1. All three are empty when max_boxes() is 0.
  int max_boxes() const;
  // Each sample's geometry, 6 float32 per sample (host memory): the map from its source image
  // to its output, output = (sx * x + tx, sy * y + ty) in continuous pixel coordinates (sx < 0
  // when mirrored), then the source's width and height: {sx, tx, sy, ty, width, height}. With
  // it, predictions in output pixels map back to the original image.
  std::span<const float> geometry() const;  // size() x 6
  // The photometric ops each sample got, in the order applied, with their drawn magnitudes
  // (stoke::AppliedOp): max_applied_ops() per sample, the rest kNone. With them a sample's
  // colours can be replayed in torchvision.transforms.v2.functional exactly. Empty when the
  // pipeline has no photometric step.
  int max_applied_ops() const;
  std::span<const AppliedOp> applied_ops() const;     // size() x max_applied_ops()
  std::span<const float> boxes() const;               // size() x max_boxes() x 4
  std::span<const std::int32_t> box_classes() const;  // size() x max_boxes()
  std::span<const std::int32_t> box_counts() const;   // size()
  // Masks (docs/USAGE.md, "Detection and segmentation"): size() x height() x width() labels of
  // mask_bytes() each (1: uint8, 2: uint16), following the pixels by nearest neighbour; padding
  // is Options::mask_ignore. Empty when mask_bytes() is 0.
  int mask_bytes() const;
  std::span<const std::uint8_t> masks() const;
  // Pass-through bytes (shards' Options::bytes_field members, untouched): max_bytes() per
  // sample, zero-padded, the first byte_counts()[i] of sample i real. Empty when max_bytes()
  // is 0.
  int max_bytes() const;
  std::span<const std::uint8_t> bytes() const;        // size() x max_bytes()
  std::span<const std::int32_t> byte_counts() const;  // size()

  // Soft labels (Options::num_classes > 0; docs/USAGE.md, "MixUp and CutMix"): num_classes()
  // float32 per sample, the smoothed one-hot label mixed with the partner's as the pixels were.
  // Empty when num_classes() is 0.
  int num_classes() const;
  std::span<const float> soft_labels() const;  // size() x num_classes()
  // Each sample's mixing (MixSample: its partner, an index within its device's chunk;
  // MixOp::kNone, kMixUp or kCutMix; the pixel and label weights; CutMix's box in output
  // pixels; the drawn lambda, CutMix's corrected to the box's area), so a loss can be built from
  // the integer labels instead. Empty when the loader does not mix.
  std::span<const MixSample> mixing() const;  // size()

  int device_count() const;
  // `device` out of 0..device_count()-1 throws Error, in the four calls below.
  DeviceChunk chunk(int device) const;
  // Blocks until chunk(device) is complete on the device (a no-op on host devices).
  void wait(int device) const;
  // Work enqueued on `stream` after this call waits until chunk(device) is complete; the host
  // does not wait (cudaStreamWaitEvent on chunk(device).ready). `stream` may be any stream of
  // that GPU, cudaStreamLegacy or cudaStreamPerThread (they name the chunk's GPU's); a no-op on
  // host devices. Throws Error when CUDA refuses the wait.
  void wait_on(int device, CUstream_st* stream) const;
  // Work already enqueued on `stream` may read chunk(device).data after this Batch is dropped;
  // stoke will not rewrite that memory before the stream passes it. Any thread; no-op on host
  // devices.
  void record_stream(int device, CUstream_st* stream) const;

  // Gives the memory back now; this Batch (not its other copies) becomes empty.
  void release();
  bool empty() const { return lease_ == nullptr; }

 private:
  friend class Loader;  // the only maker of batches
  // `lease` is the loader's private hold on one slot (its type lives in loader/src); erased
  // here so that the public header carries no implementation type.
  explicit Batch(std::shared_ptr<void> lease);
  // The lease, or Error when this Batch is empty.
  void* held() const;

  std::shared_ptr<void> lease_;
};

}  // namespace stoke
