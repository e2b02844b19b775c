#pragma once
// One annotated box of a sample, as a dataset gives it: xyxy in the source image's pixels and
// its class. The same 20 bytes in the COCO reader's result, the dataset index and the arena.
// Thread-safety: a value type.

#include <cstdint>

namespace stoke::detail {

struct SampleBox {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // x1 < x2, y1 < y2, in source pixels
  std::int32_t label = 0;                // class index, 0..classes-1
};
static_assert(sizeof(SampleBox) == 20);

}  // namespace stoke::detail
