#pragma once
// MixUp/CutMix's draws and the soft labels of a batch (Options::mixup_alpha ... num_classes):
// what each device's chunk gets, written beside the batch in its slot (one kernels::MixSample
// and num_classes float32 per sample) by the training process's stager before the batch is
// staged; the device work (kernels/mix.hpp, after normalize and erase) reads the samples from
// there, and the consumer reads the soft labels.
//
// The draws follow torchvision.transforms.v2's MixUp/CutMix (MixRule::kTorchvision) or timm's
// Mixup (kTimm) rule for rule, distribution for distribution, each from (seed, epoch, the
// chunk's first position) alone; the weights are rounded as torch rounds them, so that given the
// same lambda, partner and box the pixels and soft labels are theirs (docs/USAGE.md, "MixUp and
// CutMix").
//
// Thread-safety: a BatchMixer is immutable; write() may run on any thread, one call per slot at
// a time, while nothing else writes that slot.

#include <array>
#include <cstdint>
#include <span>

#include "ipc/arena_layout.hpp"
#include "stoke/kernels/mix.hpp"
#include "stoke/options.hpp"

namespace stoke::detail {

struct MixConfig {
  double mixup_alpha = 0;
  double cutmix_alpha = 0;
  double prob = 1;
  double switch_prob = 0.5;
  MixMode mode = MixMode::kBatch;
  MixRule rule = MixRule::kTorchvision;
  int num_classes = 0;  // soft labels' width (0: none)
  double label_smoothing = 0;
  std::uint64_t seed = 0;
  int height = 0, width = 0;  // the output's
  bool mixing() const { return mixup_alpha > 0 || cutmix_alpha > 0; }
};

MixConfig mix_config(const Options& o, int height, int width);

// One sample's entry: partner, op, box (top, left, bottom, right) and lambda `lam` (the weight
// the sample itself gets: MixUp's drawn lambda, CutMix's corrected to its box; a float32 lambda
// passed as its exact double). The weights are float32(lam) and float32(1 - lam), what torch
// multiplies by for a Python-float lambda and for a float32 tensor's alike (1 - lam is exact in
// double for a float32 lam, so its one rounding is float32 arithmetic's).
kernels::MixSample mix_entry(int partner, kernels::MixOp op, double lam,
                             std::array<int, 4> box = {});

// The CutMix boxes of both rules for lambda `lam` around a given centre, as {top, left, bottom,
// right}: torchvision's half-sides int(0.5 * sqrt(1 - lam) * side) around (ry, rx), clamped to
// the image; timm's rand_bbox, sides int(side * sqrt(1 - lam)) (in float32 arithmetic for a
// float32 lambda, as numpy computes it) and the box [c - side // 2, c + (side + 1) // 2) around
// (cy, cx), clipped to the image.
std::array<int, 4> torchvision_cutmix_box(double lam, int ry, int rx, int height, int width);
std::array<int, 4> timm_cutmix_box(double lam, bool float32, int cy, int cx, int height, int width);

// The mixing of one device's chunk (valid.size() samples, the flags of its samples), drawn
// from (seed, epoch, key), key being the chunk's first position. A sample that is padding, or
// whose partner is, stays unmixed (kNone, label weights 1 and 0).
// REQUIRES: out.size() == valid.size() > 0; c.mixing(); kTimm: an even chunk.
void draw_chunk_mixing(const MixConfig& c, std::int64_t epoch, std::int64_t key,
                       std::span<const std::uint8_t> valid, std::span<kernels::MixSample> out);

// A chunk's soft labels, num_classes per sample: smoothed one-hot labels mixed with their
// partners' by the samples' label weights, rounded as torch's mul and add round (the product of
// each term, then the sum); `mix` empty: unmixed. A label outside 0..num_classes-1 (which
// resolve() refuses) gets an all-"off" row.
// REQUIRES: out.size() == labels.size() * num_classes; mix empty or labels.size() entries.
void write_soft_labels(const MixConfig& c, std::span<const std::int32_t> labels,
                       std::span<const kernels::MixSample> mix, std::span<float> out);

class BatchMixer {
 public:
  // REQUIRES: the arena's header has the mix samples (c.mixing()) and soft_classes ==
  // c.num_classes > 0.
  BatchMixer(const MixConfig& c, ArenaView view, int devices);
  // Fills the slot's mix samples and soft labels for the batch whose first sample (this rank's)
  // is at `first_position` of `epoch`, from the slot's labels and valid flags.
  void write(int slot, std::int64_t epoch, std::int64_t first_position) const;

 private:
  const MixConfig config_;
  const ArenaView view_;
  const int devices_;
};

}  // namespace stoke::detail
