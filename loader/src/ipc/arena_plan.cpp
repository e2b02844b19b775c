#include "ipc/arena_plan.hpp"

#include <algorithm>

namespace stoke::detail {

ArenaHeader plan_arena(const ArenaPlanInput& in) {
  ArenaHeader h;
  const std::size_t b = in.batch;
  h.out_height = in.out_height;
  h.out_width = in.out_width;
  h.out_channels = in.out_channels;
  h.step_count = in.step_count;
  h.batch = in.batch;
  h.worker_capacity = in.worker_capacity;
  h.worker_stride = align_up(sizeof(WorkerRecord), 64);
  h.sample_bytes = std::size_t(h.out_height) * h.out_width * h.out_channels;
  h.labels_offset = align_up(h.sample_bytes * b, 64);
  h.max_boxes = in.max_boxes;
  const std::size_t boxes = b * in.max_boxes;
  h.boxes_offset = align_up(h.labels_offset + sizeof(std::int32_t) * b, 64);
  h.box_classes_offset = align_up(h.boxes_offset + 4 * sizeof(float) * boxes, 64);
  h.box_counts_offset = align_up(h.box_classes_offset + sizeof(std::int32_t) * boxes, 64);
  h.mask_bytes = in.mask_bytes;
  h.masks_offset = align_up(h.box_counts_offset + (boxes > 0 ? sizeof(std::int32_t) * b : 0), 64);
  const std::size_t mask_bytes = std::size_t(in.mask_bytes) * in.out_height * in.out_width * b;
  h.max_bytes = in.max_bytes;
  h.bytes_offset = align_up(h.masks_offset + mask_bytes, 64);
  h.byte_counts_offset = align_up(h.bytes_offset + std::size_t(in.max_bytes) * b, 64);
  h.ids_offset =
      align_up(h.byte_counts_offset + (in.max_bytes > 0 ? sizeof(std::int32_t) * b : 0), 64);
  h.planned_offset = align_up(h.ids_offset + sizeof(std::int64_t) * b, 64);
  h.erase_boxes = in.erase_boxes ? 1 : 0;
  h.erase_offset = align_up(h.planned_offset + sizeof(std::int64_t) * b, 64);
  h.mixing = in.mixing ? 1 : 0;
  h.mix_offset =
      align_up(h.erase_offset + (in.erase_boxes ? sizeof(kernels::EraseBox) * b : 0), 64);
  h.soft_classes = in.soft_classes;
  h.soft_labels_offset =
      align_up(h.mix_offset + (in.mixing ? sizeof(kernels::MixSample) * b : 0), 64);
  h.sources_offset =
      align_up(h.soft_labels_offset + sizeof(float) * std::size_t{in.soft_classes} * b, 64);
  h.valid_offset = align_up(h.sources_offset + sizeof(std::int32_t) * b, 64);
  h.bad_offset = align_up(h.valid_offset + b, 64);
  h.geometry_offset = align_up(h.bad_offset + b, 64);
  h.max_ops = in.max_ops;
  h.ops_offset = align_up(h.geometry_offset + 6 * sizeof(float) * b, 64);
  h.jpeg_jobs_offset = align_up(h.ops_offset + sizeof(AppliedOp) * in.max_ops * b, 64);
  h.compressed_bytes = in.compressed_bytes;
  const bool jobs = in.compressed_bytes > 0;
  h.compressed_offset = align_up(h.jpeg_jobs_offset + (jobs ? sizeof(JpegJob) * b : 0), 64);
  h.slot_stride = align_up(h.compressed_offset + in.compressed_bytes * b, kPage);

  h.steps_offset = kPage;
  h.workers_offset = align_up(h.steps_offset + sizeof(Step) * h.step_count, kPage);
  // Poison list: a count word, then the dataset indices.
  h.poison_capacity = in.poison_capacity;
  h.poison_offset = align_up(h.workers_offset + h.worker_stride * h.worker_capacity, kPage) +
                    sizeof(std::uint64_t);
  h.slots_offset = align_up(h.poison_offset + sizeof(std::int64_t) * h.poison_capacity, kPage);

  const std::size_t capacity = std::max(in.initial_slots, in.memory_budget / h.slot_stride);
  h.slot_capacity = static_cast<std::uint32_t>(capacity);
  h.total_size = arena_bytes_for(h, capacity);
  return h;
}

}  // namespace stoke::detail
