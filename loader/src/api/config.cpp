#include "api/config.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>

#include "augment/steps/step_def.hpp"
#include "common/fd.hpp"
#include "common/number_text.hpp"
#include "common/text.hpp"
#include "data/cache_folder.hpp"
#include "data/tar_index.hpp"
#include "ipc/arena_plan.hpp"
#include "stoke/error.hpp"
#include "stoke/kernels/normalize.hpp"
#include "stoke/names.hpp"
#include "tuning/cores.hpp"

namespace stoke::detail {

namespace {

// A loader needs a memfd, two eventfds and a pidfd per worker, all moved to kFirstRaisedFd
// (common/fd.hpp) and above. Checking up front turns a too-low `ulimit -n` into a message
// instead of a failure halfway through.
void check_descriptor_limit(int workers) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  std::error_code ec;
  long open = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++open;
  const long needed = 3 + workers + 1;  // +1: the directory listing's own descriptor, above
  const long limit_n = static_cast<long>(limit.rlim_cur);
  const long least = kFirstRaisedFd + needed;  // its descriptors are numbered from there
  if (limit_n < least || open + needed > limit_n) {
    throw ConfigError("the open-file limit (ulimit -n) is " + std::to_string(limit_n) + " and " +
                      std::to_string(open) + " descriptors are open, but a loader with " +
                      std::to_string(workers) + " workers needs " + std::to_string(needed) +
                      " more (and at least " + std::to_string(least) +
                      " in all); raise the limit (ulimit -n 4096) or use fewer workers");
  }
}

Pipeline choose_pipeline(const Options& o, const DatasetIndex& index) {
  if (o.pipeline) return *o.pipeline;
  if ((o.height > 0) != (o.width > 0) || o.height < 0 || o.width < 0)
    throw ConfigError("set both height and width (e.g. 224x224), or neither for the default size");
  const bool raw = index.kind == DatasetKind::kRaw;
  const int h = o.height > 0 ? o.height : (raw ? index.height : 224);
  const int w = o.width > 0 ? o.width : (raw ? index.width : 224);
  const int c = raw ? index.channels : 3;
  if (o.augment == Augment::kEvaluation) return Pipeline::evaluation(h, w, c, raw);
  if (!raw) return Pipeline::training(h, w, c, false);
  // Small images: bring them to the output size first, then the pad-crop-flip recipe.
  Pipeline p(h, w, c);
  if (h != index.height || w != index.width) p.resize(h, w);
  p.pad_random_crop(std::max(1, std::min(h, w) / 7), h, w).horizontal_flip(0.5f);
  return p;
}

PlanConfig plan_config(const Options& o, std::int64_t samples) {
  RankInfo ranks = rank_from_environment();
  if (o.rank >= 0) ranks.rank = o.rank;
  if (o.world >= 0) ranks.world = o.world;
  PlanConfig plan;
  plan.samples = samples;
  plan.batch = o.batch;
  plan.devices = o.devices.count;
  plan.rank = ranks.rank;
  plan.world = ranks.world;
  plan.seed = o.seed;
  plan.shuffle = o.shuffle;
  plan.last_batch = o.last_batch;
  plan.repeats = o.repeats;
  return plan;
}

void resolve_pool(ResolvedConfig& r) {
  const Options& o = r.options;
  r.workers_auto = o.workers == kAuto;
  r.prefetch_auto = o.prefetch == kAuto;
  r.capacity = o.workers == 0 ? 0 : kMaxWorkers;
  r.cores = available_cores();
  r.initial_workers = r.workers_auto ? 1 : o.workers;
  if (r.workers_auto) {
    r.max_workers = o.max_workers > 0 ? std::min(o.max_workers, kMaxWorkers) : r.cores;
    r.max_workers_reason =
        o.max_workers > 0
            ? "max_workers " + std::to_string(o.max_workers)
            : std::to_string(r.cores) + (r.cores == 1 ? " core" : " cores") + " available";
  }
  r.initial_slots =
      o.prefetch > 0 ? static_cast<std::size_t>(o.prefetch) : 2 * r.initial_workers + 2;
  r.memory_budget = o.memory_budget > 0 ? o.memory_budget : kDefaultMemoryBudget;
}

// A saved state resumes on any ranks, devices and global batch: the dataset and seed must match,
// and the epoch continues from the saved global position (EpochPlan's elastic resume).
void resolve_resume(ResolvedConfig& r) {
  if (!r.options.resume) return;
  const LoaderState& s = *r.options.resume;
  const std::int64_t n = r.plan.samples;
  const auto refuse = [&s](const std::string& why) {
    return ConfigError("cannot resume from '" + s.serialize() + "': " + why);
  };
  if (s.dataset_size != n || s.seed != r.options.seed)
    throw refuse("it was saved with another dataset size or seed (now dataset_size=" +
                 std::to_string(n) + " seed=" + std::to_string(r.options.seed) + ")");
  if (s.epoch < 0 || s.epoch > kMaxEpoch)
    throw refuse("epoch must be in 0.." + std::to_string(kMaxEpoch));
  if (!s.sources.empty())
    throw refuse("it was saved by a mixture of " + std::to_string(s.sources.size()) +
                 " sources (its sources= counts); this loader reads one dataset");
  if (s.global_batch <= 0) throw refuse("global_batch must be positive");
  // The saving loader's batches: at most ceil(N / global_batch) of them (pad), so next_batch
  // (informational here) is at most that.
  if (s.repeats != r.plan.repeats)
    throw refuse("it was saved with repeats " + std::to_string(s.repeats) + " (now " +
                 std::to_string(r.plan.repeats) +
                 "): its position counts another epoch order; resume with the same repeats");
  // Under repeats the epoch's length L depends on the devices in all, which a resume may change:
  // a position past this job's L is its epoch's end. (The saving loader's L was at most N.)
  const std::int64_t l = EpochPlan(r.plan).positions();  // N, or L under repeats
  const std::int64_t bound = r.plan.repeats > 1 ? n : l;
  const std::int64_t saved_batches = bound / s.global_batch + (bound % s.global_batch != 0 ? 1 : 0);
  if (s.next_batch < 0 || s.next_batch > saved_batches)
    throw refuse("next_batch must be in 0.." + std::to_string(saved_batches));
  if (s.position < 0 || s.position > bound)
    throw refuse("position must be in 0.." + std::to_string(bound) + " (the dataset's samples; " +
                 std::to_string(bound) + ": the epoch is done)");
  r.plan.resume_epoch = s.epoch;
  r.plan.resume_position = std::min(s.position, l);
  r.start_epoch = s.epoch;
  r.start_batch = EpochPlan(r.plan).resume_first();
}

// Options::mean/stddev (0..1 units, one per channel or one for all) in uint8 units.
void resolve_normalization(ResolvedConfig& r) {
  const Options& o = r.options;
  if (o.dtype == DType::kUInt8) return;
  static constexpr float kImageNetMean[3] = {0.485f, 0.456f, 0.406f};
  static constexpr float kImageNetStd[3] = {0.229f, 0.224f, 0.225f};
  const int channels = r.pipeline.output_channels();
  auto fill = [&](const std::vector<float>& given, const float* rgb, float other, float* out,
                  const char* name) {
    const auto n = given.size();
    if (n != 0 && n != 1 && n != static_cast<std::size_t>(channels))
      throw ConfigError(std::string(name) + " has " + std::to_string(n) +
                        " values; give one per channel (" + std::to_string(channels) +
                        "), a single value for all, or none for the default");
    for (int ch = 0; ch < channels; ++ch) {
      const float v = n == 0 ? (channels == 3 ? rgb[ch] : other)
                             : given[n == 1 ? 0 : static_cast<std::size_t>(ch)];
      out[ch] = v * 255.0f;
    }
  };
  fill(o.mean, kImageNetMean, 0.5f, r.mean, "mean");
  fill(o.stddev, kImageNetStd, 0.5f, r.stddev, "stddev");
}

// random_erasing on a uint8 output writes levels into the pixels: noise (a normalized value)
// has no level, and a constant must be one.
void resolve_erasing(const ResolvedConfig& r) {
  if (r.options.dtype != DType::kUInt8) return;
  for (const Step& s : r.pipeline.steps()) {
    if (s.kind != StepKind::kRandomErasing) continue;
    if (s.erase_fill != EraseFill::kConstant)
      throw ConfigError(
          "random_erasing with noise draws N(0, 1) values of the normalized image; it needs a "
          "float dtype (float32, float16 or bfloat16), not uint8");
    for (float v : s.erase_value) {
      if (!(v >= 0 && v <= 255) || v != std::floor(v))
        throw ConfigError(
            "random_erasing on a uint8 output writes levels: its values must be whole numbers in "
            "[0, 255], got " +
            std::to_string(v) + " (with a float dtype they are in normalized units)");
    }
  }
}

// decode=gpu/hybrid: the devices decode, resize and flip; a step that needs the pixels in the
// worker (colour ops, policies, affine) has no device version, and a uint8 output's erasing is
// the worker's (a float output's is the normalize's, on the device).
void resolve_decode(const ResolvedConfig& r) {
  const Options& o = r.options;
  if (o.decode == Decode::kCpu) return;
  const std::string mode = std::string("decode=") + decode_name(o.decode);
  for (const Step& s : r.pipeline.steps()) {
    if (works_in_place(s.kind))
      throw ConfigError(mode + ": the pipeline's step " + std::string(step_def(s.kind).name) +
                        " works on the decoded pixels, which the devices hold; the devices "
                        "resize, crop and flip only (docs/USAGE.md, Decoding on the GPU): use "
                        "decode=cpu for this pipeline");
    if (s.kind == StepKind::kRandomErasing && o.dtype == DType::kUInt8)
      throw ConfigError(mode +
                        ": random_erasing on a uint8 output writes the worker's pixels; "
                        "use a float dtype (the devices then erase after the normalize) or "
                        "decode=cpu");
  }
}

// The ranges of the mixing, soft-label and repeat options, and the combinations that mean
// nothing.
void check_mixing_ranges(const Options& o) {
  const auto finite_at_least_0 = [](double v) { return v >= 0 && v <= 1e6; };
  if (!finite_at_least_0(o.mixup_alpha) || !finite_at_least_0(o.cutmix_alpha))
    throw ConfigError(
        "mixup_alpha and cutmix_alpha must be in [0, 1e6] (0: off; 0.2 and 1.0 in "
        "torchvision's recipe), got " +
        decimal_text(o.mixup_alpha) + " and " + decimal_text(o.cutmix_alpha));
  if (!(o.mix_prob >= 0 && o.mix_prob <= 1) || !(o.mix_switch_prob >= 0 && o.mix_switch_prob <= 1))
    throw ConfigError("mix_prob and mix_switch_prob are probabilities in 0..1, got " +
                      decimal_text(o.mix_prob) + " and " + decimal_text(o.mix_switch_prob));
  if (!(o.label_smoothing >= 0 && o.label_smoothing < 1))
    throw ConfigError("label_smoothing must be in [0, 1) (0.1 in the common recipes), got " +
                      decimal_text(o.label_smoothing));
  if (o.num_classes < 0 || o.num_classes > kMaxSoftClasses)
    throw ConfigError("num_classes must be 0 (no soft labels) or 1.." +
                      std::to_string(kMaxSoftClasses) + ", got " + std::to_string(o.num_classes));
  if (o.repeats < 1 || o.repeats > kMaxRepeats)
    throw ConfigError("repeats must be 1 (off) .. " + std::to_string(kMaxRepeats) +
                      " (copies of each sample per epoch; 4 in torchvision's recipe), got " +
                      std::to_string(o.repeats));
  const bool mixing = mixing_on(o);
  if (mixing && o.num_classes == 0)
    throw ConfigError(
        "mixing (mixup_alpha or cutmix_alpha) mixes the labels too: set num_classes to the "
        "dataset's number of classes, and read Batch::soft_labels");
  if (o.label_smoothing > 0 && o.num_classes == 0)
    throw ConfigError("label_smoothing smooths the soft labels: set num_classes as well");
  if (o.mix_rule == MixRule::kTorchvision && o.mix_mode != MixMode::kBatch)
    throw ConfigError(std::string("mix_mode ") + mix_mode_name(o.mix_mode) +
                      " is timm's: torchvision's MixUp and CutMix draw once per batch; use "
                      "mix_rule timm, or mix_mode batch");
}

// Mixing and soft labels, against the output, the data and the devices.
void resolve_mixing(const ResolvedConfig& r, const DatasetIndex& index, const DatasetView& view) {
  const Options& o = r.options;
  const bool mixing = mixing_on(o);
  if (o.num_classes == 0) return;
  if (o.dtype == DType::kUInt8)
    throw ConfigError(std::string(mixing ? "mixing" : "soft labels (num_classes)") +
                      " works on the normalized output: it needs a float dtype (float32, "
                      "float16 or bfloat16), not uint8");
  if (mixing && (r.max_boxes > 0 || index.has_masks))
    throw ConfigError(std::string("MixUp and CutMix would blend the pixels but not the ") +
                      (index.has_masks ? "masks" : "boxes") +
                      " (torchvision leaves that to the user too); mixing is for "
                      "classification data");
  const int per_device = o.batch / o.devices.count;
  if (mixing && o.mix_rule == MixRule::kTimm && per_device % 2 != 0)
    throw ConfigError(
        "mix_rule timm mixes sample i with sample n-1-i of each device's chunk, and timm's "
        "Mixup refuses an odd batch: the chunk (batch " +
        std::to_string(o.batch) + " / " + std::to_string(o.devices.count) +
        " devices = " + std::to_string(per_device) + ") must be even");
  const std::uint64_t soft_bytes =
      sizeof(float) * std::uint64_t(o.num_classes) * std::uint64_t(o.batch);
  if (soft_bytes > r.memory_budget / std::max<std::size_t>(r.initial_slots, 1))
    throw ConfigError("soft labels of " + std::to_string(o.num_classes) + " classes take " +
                      bytes_text(soft_bytes) + " in each batch slot, and " +
                      std::to_string(r.initial_slots) + " slots would pass memory_budget " +
                      bytes_text(r.memory_budget) + "; raise memory_budget");
  std::int64_t top = -1, at = -1;
  const auto see = [&](std::int64_t label, std::int64_t i) {
    if (label > top) top = label, at = i;
  };
  // (A dataset-level index's shards are not read yet: their labels are held below num_classes
  // when each one is indexed, and a shard with one over it is a bad_shard.)
  if (view.lazy()) return;
  for (std::int64_t i = 0; i < view.size(); ++i) see(view.label(i), i);
  if (top >= o.num_classes)
    throw ConfigError("num_classes is " + std::to_string(o.num_classes) + ", but sample " +
                      std::to_string(at) + " has label " + std::to_string(top) +
                      "; set num_classes to at least " + std::to_string(top + 1));
}

}  // namespace

int chunk_for(const Options& o, int pool_size) {
  const int b = o.batch;
  if (o.chunk > 0) return std::min(o.chunk, b);
  return pool_size == 0 ? b : std::max(1, (b + pool_size - 1) / pool_size);
}

void check_options(const Options& o) {
  if ((o.workers < 0 && o.workers != kAuto) || o.workers > kMaxWorkers)
    throw ConfigError("workers must be in 0.." + std::to_string(kMaxWorkers) +
                      " (0 runs in-process) or kAuto, got " + std::to_string(o.workers));
  if (o.max_workers < 0)
    throw ConfigError("max_workers must be 0 (the cores available) or positive, got " +
                      std::to_string(o.max_workers));
  if (!(o.stall_target > 0 && o.stall_target < 1))
    throw ConfigError("stall_target must be a fraction between 0 and 1 (e.g. 0.02 for 2%)");
  if (o.monitor_window < 4 || o.monitor_window > 100000)
    throw ConfigError("monitor_window must be 4..100000 batches, got " +
                      std::to_string(o.monitor_window));
  if (!(o.task_timeout_s >= 0))
    throw ConfigError("task_timeout_s must be >= 0 (0 disables the timeout)");
  if (!(o.startup_timeout_s > 0))
    throw ConfigError("startup_timeout_s must be positive (seconds a worker may take to start)");
  if (o.max_classes <= 0)
    throw ConfigError("max_classes must be positive (labels are 0..max_classes - 1), got " +
                      std::to_string(o.max_classes));
  if (o.max_pixels <= 0)
    throw ConfigError("max_pixels must be positive, got " + std::to_string(o.max_pixels));
  if (o.mask_depth != 8 && o.mask_depth != 16)
    throw ConfigError("mask_depth must be 8 or 16 (bits per mask label), got " +
                      std::to_string(o.mask_depth));
  if (o.mask_ignore < 0 || o.mask_ignore >= (1 << o.mask_depth))
    throw ConfigError("mask_ignore must be a label of mask_depth " + std::to_string(o.mask_depth) +
                      " bits (0.." + std::to_string((1 << o.mask_depth) - 1) + "), got " +
                      std::to_string(o.mask_ignore));
  if (o.max_bytes < 0 || static_cast<std::uint64_t>(o.max_bytes) > kMaxSampleBytes)
    throw ConfigError("max_bytes must be 0 (the longest member) or 1.." +
                      std::to_string(kMaxSampleBytes) + ", got " + std::to_string(o.max_bytes));
  if (o.max_boxes < 0)
    throw ConfigError("max_boxes must be 0 (the most any image has) or positive, got " +
                      std::to_string(o.max_boxes));
  if (!(o.min_box_size >= 0) || !(o.min_box_area >= 0) ||
      !(o.min_box_visible >= 0 && o.min_box_visible <= 1))
    throw ConfigError(
        "min_box_size and min_box_area must be >= 0, and min_box_visible a fraction in 0..1");
  if ((o.prefetch < 0 && o.prefetch != kAuto) || o.chunk < 0)
    throw ConfigError(
        "prefetch must be 0 (2 per worker plus 2), kAuto or positive, and chunk 0 "
        "(automatic) or positive");
  if (o.prefetch == kAuto && o.workers == 0)
    throw ConfigError(
        "prefetch=auto needs worker processes (workers >= 1 or auto); the "
        "in-process pipeline fills one batch at a time");
  if (!(o.gpu_share >= 0 && o.gpu_share <= 1))
    throw ConfigError(
        "gpu_share must be a fraction in 0..1 (the share of samples decode=hybrid "
        "decodes on the devices), got " +
        decimal_text(o.gpu_share));
  if (o.max_compressed_bytes < kMinCompressedBytes || o.max_compressed_bytes > kMaxCompressedBytes)
    throw ConfigError("max_compressed_bytes must be " + std::to_string(kMinCompressedBytes) + ".." +
                      std::to_string(kMaxCompressedBytes) + " (4KiB..256MiB), got " +
                      std::to_string(o.max_compressed_bytes));
  check_mixing_ranges(o);
  check_descriptor_limit(o.workers == kAuto ? 1 : o.workers);
}

namespace {

// A sample's path as a message shows it (a URL without its secrets).
std::string entry_path(const DatasetView& view, std::int64_t i) {
  return redact_url(std::string(view.path(i)));
}

// What a per-sample limit counts, and what it costs in the slots (ipc/arena_plan.hpp).
struct SampleLimit {
  const char* option;      // "max_boxes"
  const char* has;         // "has", as in "PATH has 12 boxes"
  const char* unit;        // "boxes"
  std::size_t slot_bytes;  // per unit, per sample of a slot
  const char* keeps;       // what on_error=skip leaves of a sample with more
};

std::string size_text(double bytes) {
  char text[32];
  if (bytes >= double(std::size_t{1} << 30))
    std::snprintf(text, sizeof text, "%.1f GiB", bytes / double(std::size_t{1} << 30));
  else
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / double(std::size_t{1} << 20));
  return text;
}

// A limit of 0 takes the data's largest count, and every sample of every slot gets room for it:
// one sample with a million boxes would make each slot gigabytes. The starting slots' room for
// it must fit memory_budget (the pixels are not counted: images larger than the budget are the
// user's choice, a count the data chose is not), checked before anything is allocated.
// `sample` names the sample with the most, asked for only when the limit does not fit (a shard
// member's name is read back from the shard).
void check_derived_limit(const ResolvedConfig& r, const SampleLimit& what, std::uint32_t largest,
                         const std::function<std::string()>& sample) {
  const std::uint64_t samples =
      std::uint64_t{r.initial_slots} * static_cast<std::uint64_t>(r.options.batch);
  const std::uint64_t per_sample = std::uint64_t{largest} * what.slot_bytes;
  if (samples == 0) return;
  if (largest <= static_cast<std::uint32_t>(std::numeric_limits<int>::max()) &&
      per_sample <= r.memory_budget / samples)
    return;
  throw ConfigError(sample() + " " + what.has + " " + std::to_string(largest) + " " + what.unit +
                    ", the most of any sample, and " + what.option +
                    " 0 sizes every slot by them: " + std::to_string(r.initial_slots) +
                    " slots of " + std::to_string(r.options.batch) + " samples would need " +
                    size_text(double(per_sample) * double(samples)) + " for " + what.unit +
                    ", more than memory_budget " + size_text(double(r.memory_budget)) + "; set " +
                    what.option + " to the " + what.unit +
                    " a sample needs (with on_error=skip a sample with more " + what.keeps +
                    ") or raise memory_budget");
}

// A per-sample limit (max_boxes, max_bytes): `asked`, or for 0 the largest `count` of any sample
// (at least 1), which must fit memory_budget (check_derived_limit). Samples over it are counted
// in `over`, or, under OnError::kError, the first one is a DataError saying
// `too_many(sample, limit)`.
template <class Count, class Name, class TooMany>
int per_sample_limit(const ResolvedConfig& r, const DatasetView& view, int asked,
                     const SampleLimit& what, Count count, Name name, TooMany too_many,
                     std::int64_t& over) {
  std::uint32_t largest = 0;
  std::int64_t largest_sample = -1;
  for (std::int64_t i = 0; i < view.size(); ++i) {
    if (count(i) <= largest) continue;
    largest = count(i);
    largest_sample = i;
  }
  if (asked == 0 && largest_sample >= 0)
    check_derived_limit(r, what, largest, [&] { return name(largest_sample); });
  const int limit = asked > 0 ? asked : static_cast<int>(std::max(largest, 1u));
  for (std::int64_t i = 0; i < view.size(); ++i) {
    if (count(i) <= static_cast<std::uint32_t>(limit)) continue;
    if (r.options.on_error == OnError::kError) throw DataError(too_many(i, limit));
    over += 1;
  }
  return limit;
}

// A per-sample limit of a dataset-level index's shards, which are read only later: it must be
// given, and a sample over it keeps what fits (as on_error=skip does).
int lazy_limit(const ResolvedConfig& r, int asked, const char* option, const char* field,
               const char* unit) {
  const std::string data = redact_url(r.options.data);
  if (asked == 0)
    throw ConfigError(std::string(option) + " 0 takes the most " + unit + " of any sample, but " +
                      data + " is a dataset-level index whose shards are read only when their " +
                      "samples are: set " + option + " to the " + unit + " a sample needs");
  if (r.options.on_error == OnError::kError)
    throw ConfigError(std::string("on_error=error would stop at a sample with more ") + unit +
                      " than " + option + ", which " + data +
                      "'s shards say only when they are read; use on_error=skip with " + field +
                      " (a sample keeps its first " + option + ")");
  return asked;
}

// max_boxes: the dataset's most, or what was asked, checked against the data and the policy.
void resolve_boxes(ResolvedConfig& r, const DatasetIndex& index, const DatasetView& view) {
  const Options& o = r.options;
  if (!index.has_boxes) {
    if (o.max_boxes != 0)
      throw ConfigError("max_boxes is " + std::to_string(o.max_boxes) + ", but " +
                        redact_url(o.data) +
                        " has no boxes (boxes come from a COCO annotation file, or shards' "
                        "box_field members)");
    return;
  }
  if (view.lazy()) {
    r.max_boxes = lazy_limit(r, o.max_boxes, "max_boxes", "box_field", "boxes");
    return;
  }
  static constexpr SampleLimit kBoxes{"max_boxes", "has", "boxes", kSlotBytesPerBox,
                                      "keeps its first max_boxes"};
  const auto count = [&](std::int64_t i) { return std::uint32_t(view.boxes(i).size()); };
  r.max_boxes = per_sample_limit(
      r, view, o.max_boxes, kBoxes, count, [&](std::int64_t i) { return entry_path(view, i); },
      [&](std::int64_t i, int limit) {
        return entry_path(view, i) + " has " + std::to_string(count(i)) +
               " boxes, more than max_boxes " + std::to_string(limit) +
               " (raise max_boxes, set it to 0 for the dataset's most, or use on_error=skip to "
               "keep the first max_boxes)";
      },
      r.over_max_boxes);
}

// max_bytes: the longest member, or what was asked, checked against the data and the policy.
void resolve_bytes(ResolvedConfig& r, const DatasetIndex& index, const DatasetView& view) {
  const Options& o = r.options;
  if (!index.has_bytes) {
    if (o.max_bytes != 0)
      throw ConfigError("max_bytes is " + std::to_string(o.max_bytes) + ", but " +
                        redact_url(o.data) +
                        " has no pass-through bytes (set bytes_field to a shard member's "
                        "extension or a Parquet column)");
    return;
  }
  if (view.lazy()) {
    r.max_bytes = lazy_limit(r, o.max_bytes, "max_bytes", "bytes_field", "bytes");
    return;
  }
  // The bytes member: the sample's key (its image member's name, read back from the shard,
  // less the extension) and bytes_field; a Parquet row's place and its column.
  const auto member = [&](std::int64_t i) {
    if (view.parquet())
      return entry_path(view, i) + " (sample " + std::to_string(i) + ", " +
             view.parquet_row_place(i) + ")'s " + o.bytes_field;
    const std::string image = member_name(view, i);
    if (image.empty())
      return entry_path(view, i) + " (sample " + std::to_string(i) + ")'s ." + o.bytes_field +
             " member";
    return entry_path(view, i) + ":" + split_member_name(image).first + "." + o.bytes_field;
  };
  const auto count = [&](std::int64_t i) { return std::uint32_t(view.bytes_range(i).size); };
  static constexpr SampleLimit kBytes{"max_bytes", "carries", "bytes", kSlotBytesPerByte,
                                      "is cut to its first max_bytes"};
  r.max_bytes = per_sample_limit(
      r, view, o.max_bytes, kBytes, count, member,
      [&](std::int64_t i, int limit) {
        return member(i) + " carries " + std::to_string(count(i)) + " bytes, more than max_bytes " +
               std::to_string(limit) +
               " (raise max_bytes, set it to 0 for the longest, or use on_error=skip to cut them)";
      },
      r.over_max_bytes);
}

}  // namespace

RemoteConfig resolve_remote(const Options& o) {
  RemoteConfig r;
  r.policy = remote_policy_from_environment();
  r.cache_root = cache_root(o.cache_dir);
  r.cache_limit = o.cache_limit;
  return r;
}

ResolvedConfig resolve(Options o, const MappedIndex& mapped, RemoteConfig remote) {
  const DatasetIndex& index = mapped.info();
  const DatasetView view = mapped.view();
  o.devices = o.devices.resolve();  // "auto": the GPUs found now, or cpu:1
  Pipeline pipeline = choose_pipeline(o, index);
  ResolvedConfig r(std::move(o), std::move(pipeline));
  r.remote = std::move(remote);
  r.plan = plan_config(r.options, index.size);
  if (r.options.shuffle_window < 0)
    throw ConfigError("shuffle_window must be 0 (all shards) or a number of shards, got " +
                      std::to_string(r.options.shuffle_window));
  // The options that name shard members: set on other data, they would be ignored.
  const struct {
    const char* option;
    const std::string& value;
    bool set;
    const char* instead;
  } shard_fields[] = {
      {"label_field", r.options.label_field, r.options.label_field != "cls",
       " (its labels come from its class folders, list or IDX file)"},
      {"box_field", r.options.box_field, !r.options.box_field.empty(),
       " (a COCO annotation file has its own)"},
      {"bytes_field", r.options.bytes_field, !r.options.bytes_field.empty() && !index.parquet, ""},
      {"mask_field", r.options.mask_field, !r.options.mask_field.empty(),
       " (a list file names masks in a third column)"},
  };
  for (const auto& f : shard_fields) {
    if ((index.shard_starts.empty() || index.parquet) && f.set)
      throw ConfigError(std::string(f.option) + " '" + f.value + "' applies to tar shards only; " +
                        r.options.data + " is " + (index.parquet ? "Parquet" : "not shards") +
                        (index.parquet && f.option == std::string("label_field")
                             ? " (name its label column with label_column)"
                             : f.instead));
  }
  if (!index.parquet && (!r.options.image_column.empty() || !r.options.label_column.empty()))
    throw ConfigError(std::string(r.options.image_column.empty() ? "label_column" : "image_column") +
                      " applies to Parquet data only; " + r.options.data + " is not Parquet");
  r.plan.shard_starts = index.shard_starts;
  r.class_names = index.class_names;
  r.plan.shuffle_window = r.options.shuffle_window;
  const EpochPlan plan(r.plan);  // validates the plan
  r.batches_per_epoch = plan.batches_per_epoch();
  // A shuffled array order is kept once per machine, in the cache folder, when there is one.
  if (r.plan.shuffle && !plan.permuted()) r.plan.order_folder = order_folder(r.remote.cache_root);
  resolve_pool(r);
  if (index.kind == DatasetKind::kRaw)
    r.pipeline.validate(index.height, index.width);
  else
    r.pipeline.validate(0, 0);
  // Files the index left out: under OnError::kError the first one stops the loader.
  if (r.options.on_error == OnError::kError && !index.rejected.empty()) {
    const RejectedFile& f = index.rejected.front();
    throw DataError(f.path + ": " + bad_input_name(f.reason) + " (found while indexing)");
  }
  resolve_boxes(r, index, view);
  // The policies warp pixels in ways a box or a label map does not follow (torchvision refuses
  // them too).
  for (const Step& s : r.pipeline.steps())
    if (is_policy(s.kind) && (r.max_boxes > 0 || index.has_masks))
      throw ConfigError(std::string("the pipeline's augmentation policy would move the pixels "
                                    "but not the ") +
                        (index.has_masks ? "masks" : "boxes") +
                        "; policies are for classification data");
  resolve_bytes(r, index, view);
  resolve_normalization(r);
  resolve_erasing(r);
  resolve_decode(r);
  resolve_mixing(r, index, view);
  resolve_resume(r);
  return r;
}

}  // namespace stoke::detail
