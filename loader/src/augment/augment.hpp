#pragma once
// Runs a pipeline's steps on one decoded image and writes the result into its batch slot.
// Thread-safety: an Augmenter owns scratch buffers and is used by one thread at a time.
//
// Crops and flips are not applied to pixels as they come: the image is a Window (a region of the
// source that may extend past its edges, where pixels read as 0, possibly mirrored). Only resizes
// materialize pixels, and the final write applies crop, padding, flip and channel order in one
// pass, straight into the slot.
//
// In-place steps (their records' draws: augment/steps/) draw their ops when their turn comes. Those
// after the last step that moves pixels (only flips may follow; the ops commute with flips) run in
// place on the written output, so that a recipe's colour ops cost one pass over the output image;
// those before it run on the window's pixels at that point, as torchvision would. random_affine
// is drawn the same way but warps: it runs on the written output only when no flip follows it
// (a warp does not commute with a flip), and a warp that runs on the window's pixels first
// mirrors them as the flips so far say.
//
// A warp ends one axis-aligned stage of the geometry and starts the next: the sample's map is a
// list of warps, each with the axis-aligned map into the image it warps, then the map from the
// last warp's image to the output (warps(), map_after_warps()); boxes.hpp and masks.hpp follow
// that list.
//
// The source itself is not decoded until a step needs pixels. When that is a resize (or the
// final write) of a window inside the image, and the source can decode part of itself (a JPEG),
// only that region is decoded, at a reduced DCT scale when the resize shrinks it, and resampled
// from its fractional position (resample.hpp). Otherwise the whole image is decoded.

#include <cstdint>
#include <exception>
#include <opencv2/core/mat.hpp>
#include <span>
#include <vector>

#include "augment/photometric.hpp"
#include "augment/resample.hpp"
#include "data/image_source.hpp"
#include "data/sample_box.hpp"
#include "plan/sample_rng.hpp"
#include "stoke/kernels/erase.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {

// Thrown when a step would need an absurd intermediate image; the caller reports kTooLarge.
struct ImageTooLarge : std::exception {
  const char* what() const noexcept override { return "intermediate image too large"; }
};
inline constexpr double kMaxIntermediateSide = 65536;
inline constexpr std::int64_t kMaxIntermediatePixels = std::int64_t{1} << 26;

// When a resize shrinks a JPEG region at least 2x each way, the DCT scale chosen is the smallest
// whose scaled region is still at least kDefaultAreaOversample times the output size each way,
// and at least kDefaultAreaFloor pixels (or the whole region, when smaller); the area filter does
// the rest. Both chosen from the quality/speed sweep in docs/BENCHMARKS.md
// (stoke-decode-benchmarks --sweep): k = 2 keeps 224-px outputs within a level of the general
// path, and the floor keeps small outputs (64 px), where the area filter's share matters most,
// there too.
inline constexpr double kDefaultAreaOversample = 2;
inline constexpr int kDefaultAreaFloor = 256;

// Where a point of the source image lands in the output: (sx * x + tx, sy * y + ty), in
// continuous pixel coordinates (pixel i spans [i, i + 1)); sx < 0 when the output is mirrored.
// Every geometric step is an axis-aligned scale, shift or mirror, so one such map describes the
// whole pipeline: what boxes and other targets follow.
struct OutputMap {
  double sx = 1, tx = 0, sy = 1, ty = 0;
  int source_width = 0, source_height = 0;  // the source image's size
  double x(double v) const { return sx * v + tx; }
  double y(double v) const { return sy * v + ty; }
};

// `first`, then `second` (whose source is first's output); the source size is first's.
inline OutputMap then(const OutputMap& first, const OutputMap& second) {
  OutputMap m = first;
  m.sx = second.sx * first.sx;
  m.tx = second.sx * first.tx + second.tx;
  m.sy = second.sy * first.sy;
  m.ty = second.sy * first.ty + second.ty;
  return m;
}

// One random_affine warp of a sample: the axis-aligned map from the image before it (the source
// for the first warp, else the previous warp's image; before.source_width and source_height are
// that image's size) into the width x height image it warps, and its op (kAffine or
// kAffineBilinear, as Batch::applied_ops() records it).
struct Warp {
  OutputMap before;
  AppliedOp op;
  int width = 0, height = 0;
};

class Augmenter {
 public:
  // The image as the steps so far left it: a region of the source (see the top of this file).
  struct Window {
    ImageRef src;                               // valid once `lazy` is null
    ImageSource* lazy = nullptr;                // not decoded yet; coordinates are in its pixels
    int x0 = 0, y0 = 0, width = 0, height = 0;  // in source pixels; may exceed the source
    bool flip = false;   // mirrored left-right: its own x runs right to left in the image
    bool vflip = false;  // mirrored top-bottom: its own y runs upward

    int source_width() const { return lazy != nullptr ? lazy->width() : src.width; }
    int source_height() const { return lazy != nullptr ? lazy->height() : src.height; }
  };

  // REQUIRES: out_channels is 1 or 3; dst holds out_height * out_width * out_channels bytes.
  // Throws BadImage when the source finds its pixels bad, ImageTooLarge for absurd steps.
  void run(const Step* steps, int step_count, ImageSource& source, SampleRng& rng,
           std::uint8_t* dst, int out_height, int out_width, int out_channels);
  void run(const Step* steps, int step_count, const ImageRef& source, SampleRng& rng,
           std::uint8_t* dst, int out_height, int out_width, int out_channels) {
    PlainSource plain(source);
    run(steps, step_count, plain, rng, dst, out_height, out_width, out_channels);
  }

  // run()'s draws and geometry without its pixels (decode=gpu: the devices decode, resize and
  // flip): output_map(), warps(), erase_box() and applied_ops() as run() would leave them;
  // nothing is decoded or written. REQUIRES: no step works in place, and a random_erasing step
  // only under set_erase_pixels(false) (api/config.cpp, resolve_decode).
  void run_geometry(const Step* steps, int step_count, ImageSource& source, SampleRng& rng,
                    int out_height, int out_width, int out_channels);

  // The boxes of the sample the next run() makes, in its source's pixels, for box_crop (empty:
  // none). They must stay valid through that run().
  void set_boxes(std::span<const SampleBox> boxes) { boxes_ = boxes; }

  // The map of the last run() from its source to its output (the same for every path: the
  // general one, a JPEG region, a direct write): its crops, resizes and flips composed. Without
  // warps that is where every source point lands; with them it leaves the warps out
  // (Batch::geometry() reports it), and warps() and map_after_warps() say where points land.
  const OutputMap& output_map() const { return output_map_; }
  // The last run()'s random_affine warps in order (empty: none), and the map from the last
  // warp's image to the output (output_map() when there are no warps).
  std::span<const Warp> warps() const { return warps_; }
  const OutputMap& map_after_warps() const { return after_warps_; }
  // The photometric ops the last run() applied, in order, then its erasing, if any
  // (Batch::applied_ops()).
  std::span<const ColorOpArgs> applied_ops() const { return applied_; }
  // The last run()'s random_erasing rectangle (mode kNone: nothing erased), in output pixels.
  // Already applied to the pixels under set_erase_pixels(true) (a uint8 output); otherwise for
  // the batch's normalize to apply.
  const kernels::EraseBox& erase_box() const { return erase_; }

  // What each step does at its turn, one member per kind: the step's record
  // (augment/steps/step_def.hpp, StepDef::apply) names it, and run() calls them in order. Each
  // is defined beside its record in augment/steps/; in-place steps (photometric, policies,
  // random_affine) share apply_in_place, which draws the record's ops and runs them now or
  // leaves them for the written output; random_erasing draws its rectangle on the output.
  void apply_resize_shorter(Window& w, const Step& s, SampleRng& rng);
  void apply_resize(Window& w, const Step& s, SampleRng& rng);
  void apply_center_crop(Window& w, const Step& s, SampleRng& rng);
  void apply_random_resized_crop(Window& w, const Step& s, SampleRng& rng);
  void apply_box_crop(Window& w, const Step& s, SampleRng& rng);
  void apply_horizontal_flip(Window& w, const Step& s, SampleRng& rng);
  void apply_vertical_flip(Window& w, const Step& s, SampleRng& rng);
  void apply_pad_random_crop(Window& w, const Step& s, SampleRng& rng);
  void apply_scale_jitter(Window& w, const Step& s, SampleRng& rng);
  void apply_in_place(Window& w, const Step& s, SampleRng& rng);
  void apply_erasing(Window& w, const Step& s, SampleRng& rng);

  // Whether random_erasing writes its rectangle into the uint8 output (true), or leaves it to
  // the batch's normalize (false: a float output, whose slots hold erase boxes).
  void set_erase_pixels(bool on) { erase_pixels_ = on; }

  // The DCT-scale margin and floor above, for the sweep that chooses them (benchmarks and
  // tests only; a floor of 0 leaves the margin alone).
  void set_area_oversample(double k, int floor = kDefaultAreaFloor) {
    area_oversample_ = k;
    area_floor_ = floor;
  }

 private:
  void crop(Window& w, int x, int y, int width, int height) const;
  // The window's pixels became an image of height x width of their own (a resize): the map
  // follows, and the window is all of that image.
  void resized(Window& w, int height, int width);
  // random_resized_crop, and box_crop when `keep_box`.
  void random_resized_crop(Window& w, const Step& s, SampleRng& rng, bool keep_box);
  // Whether at least `fraction` of some box's area lies inside the window's own crop
  // (x, y, width, height); true when the sample has no boxes.
  bool keeps_a_box(const Window& w, int x, int y, int width, int height, double fraction) const;
  // Writes erase_'s levels into the output's pixels, and records it in applied_.
  void finish_erasing(std::uint8_t* dst);
  // Mirrors the written output top-bottom (a vertical flip is applied last: it commutes with
  // every other step once crops read the mirrored window, as crop() makes them).
  void mirror_rows(std::uint8_t* dst, int out_channels) const;
  void resize_to(Window& w, int height, int width);
  // Decodes the whole source into the window (no-op when it has pixels already).
  void realize(Window& w);
  // Decodes only the window's region of a lazy source, resized to height x width. False when
  // the source or the window does not allow it.
  bool resize_region(Window& w, int height, int width);
  // Runs applied_[first..] on the window's pixels, which become an image of their own; with
  // `warp` (random_affine's op), mirrored first as the window's flips say, and a warp stage ends.
  void apply_now(Window& w, std::size_t first, bool warp);
  // Mirrors the window's pixels (an image of their own, x0 = y0 = 0) as its flips say, which
  // then are cleared, and the map follows.
  void bake_flips(Window& w);
  // Ends the current axis-aligned stage at a warp of `op` on the w x h image the map reaches.
  void end_stage(const AppliedOp& op, int width, int height);
  // The window's pixels, unmirrored: a view when it lies inside the source and `copy` is
  // false, else an image of its own with 0 outside the source.
  cv::Mat materialize(const Window& w, bool copy = false);
  void write_output(Window& w, std::uint8_t* dst, int out_channels);
  bool write_small_gray(const Window& w, std::uint8_t* dst);

  // Whether the steps after the current one move no pixels (flips and in-place steps only, and no
  // flip after a warp from the current step on), so a resize may write the final output straight
  // into dst (mirrored as those flips will decide) and in-place ops may wait for it.
  bool nothing_moves_after() const;

  // The current run(), for resize_region's direct write.
  const Step* steps_ = nullptr;
  int step_count_ = 0;
  int step_index_ = 0;
  SampleRng* rng_ = nullptr;
  std::uint8_t* dst_ = nullptr;
  int out_height_ = 0, out_width_ = 0, out_channels_ = 0;
  bool written_ = false;  // dst already holds the output
  bool geometry_only_ = false;  // run_geometry(): windows and maps only, no pixels
  bool erase_pixels_ = false;
  // The current stage's start (the source, or the last warp's image) in the current image's
  // coordinates (what the window's x0, y0 refer to): (ax_ * x + bx_, ay_ * y + by_); that
  // start's size.
  double ax_ = 1, bx_ = 0, ay_ = 1, by_ = 0;
  int stage_width_ = 0, stage_height_ = 0;
  OutputMap composed_;  // the stages ended so far, their axis-aligned maps composed
  OutputMap output_map_;
  std::vector<Warp> warps_;
  OutputMap after_warps_;
  std::vector<std::size_t> deferred_warps_;  // indices in applied_ of warps left for the output
  std::span<const SampleBox> boxes_;

  double area_oversample_ = kDefaultAreaOversample;
  int area_floor_ = kDefaultAreaFloor;
  std::vector<ColorOpArgs> applied_;  // this run's photometric ops, in order
  // applied_[deferred_from_..] run on the written output; kNotDeferred: none do (yet).
  static constexpr std::size_t kNotDeferred = static_cast<std::size_t>(-1);
  std::size_t deferred_from_ = kNotDeferred;
  std::vector<ColorOpArgs> lookahead_;  // draws of later steps, for the direct write
  kernels::EraseBox erase_;
  PhotometricScratch photometric_;
  std::vector<std::uint8_t> scratch_[3];
  ResampleScratch resample_;
  std::vector<std::uint8_t> padded_;  // write_small_gray's zero-margined copy of the source
  int padded_width_ = 0;
  int next_scratch_ = 0;
};

}  // namespace stoke::detail
