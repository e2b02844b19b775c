#pragma once
// Element types and layouts of delivered batches. Thread-safety: plain enums.

namespace stoke {

// uint8 is the pipeline's own output; the others are produced by the normalize step.
enum class DType { kUInt8, kFloat32, kFloat16, kBFloat16 };
// NHWC: samples x height x width x channels; NCHW: samples x channels x height x width.
enum class Layout { kNHWC, kNCHW };

}  // namespace stoke
