#pragma once
// Loader configuration. Thread-safety: plain value types.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoke/dtype.hpp"
#include "stoke/pipeline.hpp"
#include "stoke/state.hpp"

namespace stoke {

enum class LastBatch { kPad, kDrop };
enum class OnError { kSkip, kError };
// How much of each JPEG is decoded to find damage (docs/USAGE.md, "How much of a JPEG is
// checked").
//   kWholeFile: the whole entropy-coded scan, through the end-of-image marker: a file damaged
//               anywhere is bad input, whatever part of it the crop uses.
//   kRegion:    the scan only through the crop's last row: damage below every crop a file is
//               asked for is never seen, and the file is delivered (correctly) and not counted.
//               Faster on large photographs. Progressive JPEGs are read whole in both modes.
enum class Verify { kWholeFile, kRegion };
enum class Split { kTrain, kTest };
// Which JPEGs of a local image folder the relayout cache copies (RemoteOptions::relayout_cache).
enum class Relayout { kOff, kProgressive, kAll };
// Where images are decoded (docs/USAGE.md, "Decoding on the GPU"):
//   kCpu:    the workers decode and augment every sample into its slot.
//   kGpu:    the workers read each JPEG's header, draw its crop and flips exactly as kCpu does,
//            and write its compressed bytes and that geometry into the slot; the stager decodes
//            the batch on each device (nvJPEG; host devices: the same region decoded by
//            libjpeg-turbo) and resizes it there. What the device cannot take (other formats,
//            CMYK, files over max_compressed_bytes) the workers decode as kCpu does.
//   kHybrid: a seeded share (gpu_share) of the samples as kGpu, the rest as kCpu.
enum class Decode { kCpu, kGpu, kHybrid };
// Built-in pipelines, used when Options::pipeline is unset.
//   kTraining:   photographs: random-resized-crop + horizontal flip;
//                small images (IDX): pad-(side/7) random crop + horizontal flip.
//   kEvaluation: resize the shorter side, then centre crop.
enum class Augment { kTraining, kEvaluation };
// MixUp/CutMix (Options::mixup_alpha ...): how a device's chunk is mixed.
//   kBatch: one draw for the whole chunk (torchvision's MixUp/CutMix, timm's mode="batch").
//   kPair:  one draw per pair of samples i and n-1-i (timm's mode="pair").
//   kElem:  one draw per sample (timm's mode="elem").
enum class MixMode { kBatch, kPair, kElem };
// Whose rule the mixing follows, draw for draw (docs/USAGE.md, "MixUp and CutMix"):
//   kTorchvision: torchvision.transforms.v2's MixUp and CutMix (picked by RandomChoice with
//                 mix_switch_prob): the partner of sample i is i - 1 (the chunk rolled by one),
//                 lambda a float32 Beta draw, CutMix's box centred uniformly with half-sides
//                 0.5 * sqrt(1 - lambda) of the image's. kBatch only.
//   kTimm:        timm.data.Mixup: the partner of sample i is n - 1 - i (the chunk flipped),
//                 lambda a float64 Beta draw (float32 in pair and elem modes), timm's rand_bbox;
//                 each device's chunk must be even, as timm's Mixup asserts.
enum class MixRule { kTorchvision, kTimm };

// The devices one rank feeds. Every batch is split into count() equal chunks, one per device.
struct DeviceSet {
  // kAuto: every visible GPU, or cpu:1 when there is none, decided by resolve().
  enum class Kind { kCpu, kCuda, kAuto };
  Kind kind = Kind::kCpu;
  int count = 1;         // 0 for kAuto: known once resolved
  std::vector<int> ids;  // CUDA ordinals, for kCuda

  // Parses "cpu:G" (G host devices), "cuda:0,1" (those GPUs) or "auto" (kAuto). Reads nothing
  // but `spec`. Throws ConfigError on anything else.
  static DeviceSet parse(std::string_view spec);
  // The devices meant: for kAuto, every GPU stoke::devices() finds (discovered once per
  // process), or cpu:1 when it finds none; any other set as it is. A Loader resolves its
  // Options::devices itself; call this to know beforehand what it will drive.
  DeviceSet resolve() const;
  std::string to_string() const;  // "auto" for kAuto
};

// Options::workers and Options::prefetch: size it automatically, live.
inline constexpr int kAuto = -1;

// Options::max_classes's default: labels 0..2^24 - 1.
inline constexpr int kDefaultMaxClasses = 1 << 24;

// Options, grouped by concern. Each group is a plain aggregate and Options derives from all of
// them, so a field is still `o.workers` and every group can be handed around on its own (a
// function that only reads the pool can take a `const PoolOptions&`). Each field is also described
// by one row of the table of options (stoke/option_table.hpp), from which the Python keywords,
// stoke-bench's flags and docs/USAGE.md's table of options are made; a default is written only
// here.

// Where the samples come from.
struct SourceOptions {
  // Dataset: an image-folder tree root/<class>/<image>, a list file (path<TAB>label per line,
  // paths relative to the list), a folder holding MNIST-style IDX files (plain or .gz), or
  // WebDataset tar shards: "train-000000.tar", brace ranges "train-{000000..000255}.tar",
  // several separated by commas, or a list file naming one shard per line; or a COCO-format
  // annotation file ("instances_train2017.json": its images, with their boxes); or Parquet files
  // (a .parquet file, names, brace ranges and globs of them, a folder holding them, as Hugging
  // Face's data/ layout does, or a list file naming them).
  std::string data;
  // COCO data: the folder its file_names are relative to; empty = the JSON file's folder.
  std::string image_root;
  // IDX data, and a folder of Parquet files whose names say their splits (train-*, test-*).
  Split split = Split::kTrain;
  // Shards: where a sample's label is: "cls" (its .cls member, an integer as text),
  // "json:KEY" (an integer field of its .json member) or "none" (all 0).
  std::string label_field = "cls";
  // Parquet: the column images are read from (a binary column, or a struct whose `bytes` field
  // holds them, as Hugging Face's Image does) and the column labels are read from (integers, or
  // strings that name classes; "none": no labels, -1). "" finds them: the Hugging Face
  // metadata's Image and ClassLabel features, else a column named image (img, jpg, png, ...) or
  // label (labels, cls, class), else the first binary column and no labels.
  std::string image_column;
  std::string label_column;
};

// One dataset of a mixture (Options::sources): where its samples come from, as SourceOptions says
// for a loader of one dataset, and how many of them an epoch holds: exactly one of weight,
// samples and repeat, or none of them (one pass an epoch). docs/USAGE.md, "Mixing datasets".
struct MixtureSource : SourceOptions {
  // A share of the epoch: of what the sources given samples or repeat leave of epoch_samples,
  // in proportion to the other sources' weights.
  double weight = 0;
  std::int64_t samples = 0;  // so many samples an epoch (a part of a large source; 0: not given)
  double repeat = 0;         // so many passes an epoch: 2 reads it twice, 0.5 half of it
  // Added to every label the source gives (-1, no label, stays -1), so that the sources' labels
  // can share one range; kAutoLabelOffset: after the classes of the sources before it (each of
  // which must name its classes: an image folder, COCO, Parquet with a ClassLabel feature).
  int label_offset = 0;
};
inline constexpr int kAutoLabelOffset = -1;

// Several datasets as one: every global batch holds each source's share of it to within one
// sample, each source's samples in its own seeded order (docs/USAGE.md, "Mixing datasets").
// Empty: the one dataset SourceOptions names. A source's SourceOptions are its own; every other
// option (the pipeline, the batch, the pool, the fields) is the loader's, for every source.
struct MixtureOptions {
  std::vector<MixtureSource> sources;
  std::int64_t epoch_samples = 0;  // samples an epoch: 0 is every source's size summed
};

// Shards on HTTP or S3: a thread of the loader fetches the shards the epoch plan needs next,
// whole, into a local cache folder ahead of the workers, who then read local bytes. The folder
// (default: STOKE_CACHE_DIR, else $XDG_CACHE_HOME/stoke, else ~/.cache/stoke; copies under
// its shards/) may be shared by every loader and rank of this user on the machine: the folder
// is kept under cache_limit bytes, every sharing loader's copies and downloads counted, least
// recently used copies evicted first (a batch that alone reads more shards than that is
// fetched past it, said once in the log); 0 keeps no copies (workers read byte ranges from the
// server). Its folders are 0700 and files 0600, unless STOKE_CACHE_SHARED=1 shares them with
// the folder's group (02770, 0640); a folder another user owns, or others may write, is a
// ConfigError. The limit must hold a shuffle window's shards (all shards when shuffle_window is
// 0), else the loader reads from the server and says why in its log. A dataset-level index's
// shards are sized only as the plan nears them (a HEAD each), so for them the cache needs a
// shuffle window smaller than all the shards.
//
// The relayout cache (docs/USAGE.md, "The relayout cache"), under the same folder (relayout/):
// re-laid-out copies of a local image folder's or list file's JPEGs, made by the workers the
// first time they read each one (stoke-pack's lossless re-layout: the same pixels, one baseline
// scan with restart markers), read instead of the file from then on. kProgressive (default)
// copies progressive JPEGs only: their first epoch costs about 3x, every later one runs about
// 4x faster; kAll every JPEG (a baseline file's copy pays only after some 30 epochs); kOff none.
// relayout_limit bounds its bytes (least recently used copies evicted first; 0: off).
struct RemoteOptions {
  std::string cache_dir;
  std::uint64_t cache_limit = std::uint64_t{16} << 30;
  Relayout relayout_cache = Relayout::kProgressive;
  std::uint64_t relayout_limit = std::uint64_t{16} << 30;
};

// What a sample carries besides its pixels and label: boxes, masks, pass-through bytes.
struct FieldOptions {
  // Boxes (COCO data): each sample's boxes follow its pixels through every geometric step, are
  // clipped to the output and kept when, clipped, both sides are at least min_box_size pixels,
  // the area at least min_box_area, and at least min_box_visible of the moved box's area lies
  // inside the output. A batch holds max_boxes per sample, padded (Batch::box_counts says how
  // many are real); 0 = the most boxes any image of the dataset has. A smaller max_boxes keeps
  // each sample's first max_boxes (in the file's order) of those the rules keep; under
  // OnError::kError an image with more annotated boxes than that is a DataError instead.
  int max_boxes = 0;
  // Shards: boxes from each sample's member with this extension ("json"), a JSON object
  // {"boxes": [[x1, y1, x2, y2], ...], "classes": [c, ...]} in the image's pixels (optionally
  // "width" and "height", checked against the decoded image); "" = no boxes.
  std::string box_field;
  // Masks (segmentation label maps, aligned with their images): from a list file's third
  // column (path<TAB>label<TAB>mask) or, in shards, each sample's member with the extension
  // mask_field ("seg.png"). Each mask follows its image through every geometric step by
  // nearest neighbour; output pixels from outside the image (padding) get mask_ignore. A mask
  // is delivered as mask_depth-bit labels (8 or 16); a 16-bit file whose labels exceed 255 is
  // bad input under 8.
  std::string mask_field;
  int mask_ignore = 255;
  int mask_depth = 8;
  // Pass-through bytes: each sample's member with the extension bytes_field ("txt", "json": a
  // caption, a record, token ids), or a Parquet row's value in the column bytes_field names,
  // delivered untouched, up to max_bytes per sample with its length (Batch::byte_counts); 0 =
  // the longest such member of the dataset. A longer
  // member is cut to max_bytes (the log says how many are) under OnError::kSkip, and is a
  // DataError naming it under kError.
  std::string bytes_field;
  int max_bytes = 0;
  float min_box_size = 1;
  float min_box_area = 0;
  float min_box_visible = 0;
};

// The epoch plan: which samples each batch of each rank and device gets, in what order.
struct PlanOptions {
  int batch = 256;  // per rank; must be a multiple of devices.count
  DeviceSet devices;
  std::uint64_t seed = 0;
  bool shuffle = true;
  // Shards: each epoch permutes the shards and shuffles the samples within runs of this many
  // consecutive shards of that order, so that reading follows a few shards at a time; 0 (all)
  // shuffles every sample with every other. Either way a function of (seed, epoch) alone.
  int shuffle_window = 0;
  LastBatch last_batch = LastBatch::kPad;
  // Rank and world size; -1 reads RANK/WORLD_SIZE (torchrun) or OMPI_COMM_WORLD_RANK/_SIZE
  // (mpirun) from the environment, else 0 and 1.
  int rank = -1;
  int world = -1;
  // Repeated augmentation (torchvision's --ra-reps, timm's --aug-repeats): each sample of the
  // epoch's order appears `repeats` times in a row, each copy augmented on its own, the copies
  // dealt to consecutive devices over all ranks as torchvision's RASampler deals them; an epoch
  // then covers floor(floor(N / 256) * 256 / D) * D positions (D: devices over all ranks), so
  // it has as many steps as a torchvision run with RASampler. 1: off.
  int repeats = 1;
  // Start at this position instead of epoch 0, batch 0; a state saved with other ranks, devices
  // or global batch continues its epoch from the saved sample (see LoaderState).
  std::optional<LoaderState> resume;
};

// The worker processes and the batch slots they fill.
struct PoolOptions {
  // Worker processes; 0 runs the pipeline in-process on the calling thread. kAuto starts one
  // and grows or shrinks the live pool toward the fewest workers that keep the consumer's wait
  // under stall_target, bounded by max_workers, the cores this process may use (affinity and
  // cgroup quota) and the memory available. Resizing never changes the delivered bytes.
  int workers = 2;
  int max_workers = 0;         // kAuto's upper bound; 0 = the cores available
  double stall_target = 0.02;  // kAuto: the data-stall fraction to stay under
  int monitor_window = 50;     // batches in the stall monitor's moving window (at least 4)
  // Batch slots prepared ahead; 0 = 2 * workers + 2 (and more as the pool grows). kAuto also
  // adds slots, within memory_budget, when the consumer waits while the workers sit idle (a
  // consumer that takes batches in bursts). Slots are page-locked for GPU copies as they are
  // first staged.
  int prefetch = 0;
  int chunk = 0;                  // samples per unit of work; 0 = batch / workers, at least 1
  std::size_t memory_budget = 0;  // bytes for batch slots, held ones included; 0 = 2 GiB
  std::string worker_path;  // stoke-worker to run; empty = the one installed beside the library
};

// What each device receives: the sample pipeline, then the dtype and layout it is delivered in.
struct OutputOptions {
  // The sample pipeline. Unset: the `augment` preset at height x width, which default to the
  // IDX images' own size (gray) or 224x224 (RGB) for image files.
  std::optional<Pipeline> pipeline;
  Augment augment = Augment::kTraining;
  int height = 0;
  int width = 0;
  // kUInt8: the pipeline's NHWC bytes (on host devices, the arena bytes themselves: no copy).
  // Float types: (x / 255 - mean[c]) / stddev[c], computed on the device (on host devices, by
  // the CPU kernel) in `layout`. mean and stddev are in 0..1 units, one value per channel or a
  // single value for all; empty = ImageNet's for 3 channels, else 0.5 and 0.5.
  DType dtype = DType::kUInt8;
  Layout layout = Layout::kNCHW;  // float dtypes only
  std::vector<float> mean;
  std::vector<float> stddev;
  // Where JPEGs are decoded (Decode above). kGpu and kHybrid take pipelines of geometric steps
  // (resizes, crops, flips) and random_erasing on a float output; other steps are refused.
  Decode decode = Decode::kCpu;
  // kHybrid: the share of samples decoded on the devices, each chosen from (seed, epoch,
  // position) alone.
  double gpu_share = 0.5;
  // kGpu, kHybrid: the compressed bytes a slot holds per sample; a larger file is decoded by
  // the workers (and counted: Stats::worker_decoded_too_large).
  std::size_t max_compressed_bytes = std::size_t{1} << 20;
};

// MixUp and CutMix (docs/USAGE.md, "MixUp and CutMix"): after normalize and random erasing,
// each device's chunk is mixed with itself (every sample with a partner of the same chunk, as
// each rank's own batch is in a DDP job), on the device (host devices: on the loader's stager
// thread), from (seed, epoch, the chunk's first position) alone. mixup_alpha and cutmix_alpha
// are the Beta distributions' parameters (0: that one is off); with both on, each draw picks
// CutMix with probability mix_switch_prob; mix_prob is the chance a draw mixes at all. A
// padding sample (valid 0) is never mixed into a real one, nor a real one into it. Needs a
// float dtype and num_classes; refused with boxes or masks (which the mixing would not
// follow).
struct MixingOptions {
  double mixup_alpha = 0;
  double cutmix_alpha = 0;
  double mix_prob = 1;
  double mix_switch_prob = 0.5;
  MixMode mix_mode = MixMode::kBatch;
  MixRule mix_rule = MixRule::kTorchvision;
  // Soft labels (Batch::soft_labels): with num_classes > 0 each sample also gets float32
  // targets over num_classes classes: its one-hot label smoothed by label_smoothing (timm's
  // rule: 1 - s + s / num_classes on its class, s / num_classes elsewhere), mixed with its
  // partner's by the mixing's lambda. Every label must be below num_classes.
  int num_classes = 0;
  double label_smoothing = 0;
};

// What bad input and slow workers may cost before the loader gives up on them.
struct LimitOptions {
  OnError on_error = OnError::kSkip;
  Verify verify = Verify::kRegion;
  // Images whose header claims more pixels than this are bad input ("too_large"), rejected
  // before their pixels are allocated.
  std::int64_t max_pixels = 100'000'000;
  // Every label the data states as a number (a shard's .cls member or json:KEY field, a shard's
  // box classes, a list file's labels, IDX label files) must be below this: one that is not is
  // a DataError naming its member (or line) and value, whatever on_error says, since a single
  // such number would claim that many classes. Image folders and COCO files number their
  // classes themselves (one per folder or category).
  int max_classes = kDefaultMaxClasses;
  // A worker busy on one chunk for longer than this is killed, replaced, and the chunk redone
  // (0 disables). A sample that kills three workers is skipped (kSkip) or an error (kError).
  double task_timeout_s = 60;
  // Worker start-up. The first pool must finish its handshake within this (the constructor
  // waits for it; a worker that crashes meanwhile is restarted). Every later worker (a
  // replacement, pool growth) has this long from its spawn; one that misses it is killed and
  // restarted. A worker record that dies or hangs before its handshake 5 times in a row stops
  // the loader with an error.
  double startup_timeout_s = 30;
};

struct LogOptions {
  // Receives one line per notable event (skipped file, worker restart, pool resize, autotune
  // decision). Called from the consumer's thread or the loader's supervisor thread (and, while
  // the constructor indexes or waits for another loader's index, from a thread that says so
  // every 10 s), one line at a time, never with a loader lock held. Default: stderr.
  std::function<void(std::string_view)> log;
};

// Everything a Loader is made from: `stoke::Options o; o.data = "..."; o.workers = 4;`.
struct Options : SourceOptions,
                 MixtureOptions,
                 RemoteOptions,
                 FieldOptions,
                 PlanOptions,
                 PoolOptions,
                 OutputOptions,
                 MixingOptions,
                 LimitOptions,
                 LogOptions {};

// Reads rank/world from the launcher's environment as described above.
struct RankInfo {
  int rank = 0;
  int world = 1;
};
RankInfo rank_from_environment();

}  // namespace stoke
