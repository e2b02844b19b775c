#pragma once
// Where everything goes in a loader's arena: the offsets and sizes of the header's sections
// (ipc/arena_layout.hpp draws the map), computed from the dataset, the pipeline and the pool.
//
// Thread-safety: a plain function.

#include <cstddef>
#include <cstdint>

#include "ipc/arena_layout.hpp"

namespace stoke::detail {

// Bytes a slot holds per sample for each box (its corners, then its class) and each
// pass-through byte: what max_boxes and max_bytes cost, times the batch, in every slot.
inline constexpr std::size_t kSlotBytesPerBox = 4 * sizeof(float) + sizeof(std::int32_t);
inline constexpr std::size_t kSlotBytesPerByte = 1;

// decode=gpu/hybrid: the compressed bytes a slot may hold per sample
// (Options::max_compressed_bytes).
inline constexpr std::size_t kMinCompressedBytes = std::size_t{4} << 10;
inline constexpr std::size_t kMaxCompressedBytes = std::size_t{256} << 20;

struct ArenaPlanInput {
  std::uint32_t step_count = 0;
  std::uint32_t batch = 0;
  std::uint32_t out_height = 0, out_width = 0, out_channels = 0;
  std::uint32_t max_boxes = 0;
  std::uint32_t mask_bytes = 0;    // per mask label: 0 (no masks), 1 or 2
  std::uint32_t max_bytes = 0;     // pass-through bytes per sample (0: none)
  std::uint32_t max_ops = 0;       // photometric ops recorded per sample (0: none)
  bool erase_boxes = false;        // one EraseBox per sample, for the batch's normalize
  bool mixing = false;             // one MixSample per sample, for the batch's mixing
  std::uint32_t soft_classes = 0;  // soft labels: float32 per sample (0: none)
  // decode=gpu/hybrid: a JpegJob and so many compressed bytes per sample (0: decode=cpu, none).
  std::size_t compressed_bytes = 0;
  std::uint32_t worker_capacity = 0;
  std::uint32_t poison_capacity = 0;
  std::size_t initial_slots = 0;
  std::size_t memory_budget = 0;  // bytes for slots; the capacity is at least initial_slots
};

// The header's layout fields (offsets, strides, capacities, total_size); the caller fills in
// the rest (version, dataset kind, seed, ...).
// Slot: pixels | labels | boxes | box classes | box counts | masks | bytes | byte counts | ids |
// planned | erase boxes | mix samples | soft labels | valid | bad |
// geometry | ops | jpeg jobs | compressed bytes, each 64-byte aligned (labels..valid: the bytes a
// GPU receives beside the pixels), the slot page-aligned so it can be page-locked on its own.
ArenaHeader plan_arena(const ArenaPlanInput& in);

// Bytes of the arena that hold `slots` slots: what must be reserved before they are used.
inline std::size_t arena_bytes_for(const ArenaHeader& h, std::size_t slots) {
  return h.slots_offset + slots * h.slot_stride;
}

}  // namespace stoke::detail
