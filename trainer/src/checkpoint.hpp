#pragma once
// Checkpoints: one model (not one per replica) with everything needed to continue exactly.
// Thread-safety: free functions, reentrant.
//
// File format (little-endian), version 1:
//   "STOKECKP"  u32 version  u32 0  u64 payload bytes  u32 crc32(payload)  payload
// The payload holds the configuration that shapes the run, the model (parameters, BatchNorm
// running statistics, SGD momentum), the step count and the loader's position.

#include <cstdint>
#include <string>

#include "model.hpp"
#include "stoke/state.hpp"
#include "trainer.hpp"

namespace stoke::train {

inline constexpr std::uint32_t kCheckpointVersion = 1;

// What a resumed run must reuse to reproduce the uninterrupted one.
struct RunConfig {
  ModelShape shape;
  Hyper hyper;
  std::uint64_t seed = 0;
  int batch = 0;  // global, over every rank and device
  int epochs = 0;
  int pad = 0;  // training augmentation of small images: pad-and-crop margin (0: flips only)
  bool operator==(const RunConfig&) const;
};

struct Checkpoint {
  RunConfig config;
  ModelState model;
  LoaderState loader;  // where the next batch comes from
};

// Writes `path` atomically: a temporary file beside it, flushed to disk, then renamed over it;
// a crash at any point leaves either the old file or the new one. Throws Error naming the path.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// Throws Error naming the path and the problem: missing, not a checkpoint, another version,
// truncated, or corrupt (checksum mismatch).
Checkpoint load_checkpoint(const std::string& path);

}  // namespace stoke::train
