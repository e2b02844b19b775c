#include "stoke/option_table.hpp"

#include <array>
#include <charconv>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "api/mixture_text.hpp"
#include "stoke/error.hpp"
#include "stoke/format.hpp"
#include "stoke/names.hpp"

namespace stoke {
namespace {

// ---- Text forms of the values, by kind ----------------------------------------------------------

[[noreturn]] void refuse(std::string_view option, std::string_view wants, std::string_view text) {
  throw ConfigError(std::string(option) + " must be " + std::string(wants) + ", got '" +
                    std::string(text) + "'");
}

template <std::integral T>
T whole_number(std::string_view option, std::string_view text) {
  T v{};
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size())
    refuse(option,
           "a whole number from " + std::to_string(std::numeric_limits<T>::min()) + " to " +
               std::to_string(std::numeric_limits<T>::max()),
           text);
  return v;
}

double real_number(std::string_view option, std::string_view text) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty())
    refuse(option, "a number", text);
  return v;
}

// The shortest text that reads back as the same value.
template <std::floating_point T>
std::string real_text(T v) {
  std::array<char, 64> buf{};
  const auto end = std::to_chars(buf.data(), buf.data() + buf.size(), v).ptr;
  return std::string(buf.data(), end);
}

// Binary units where they are exact ("16GiB"), else the byte count.
std::string bytes_text(std::uint64_t bytes) {
  static constexpr std::pair<const char*, int> kUnits[] = {
      {"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
  for (const auto& [unit, shift] : kUnits)
    if (bytes != 0 && bytes % (std::uint64_t{1} << shift) == 0)
      return std::to_string(bytes >> shift) + unit;
  return std::to_string(bytes);
}

// Each enum option's *_name and parse_* (stoke/names.hpp), found by the enum's type.
template <class T>
using WordFunctions = std::pair<const char* (*)(T), T (*)(std::string_view)>;
constexpr std::tuple kWordFunctions{WordFunctions<Augment>{&augment_name, &parse_augment},
                                    WordFunctions<DType>{&dtype_name, &parse_dtype},
                                    WordFunctions<Layout>{&layout_name, &parse_layout},
                                    WordFunctions<LastBatch>{&last_batch_name, &parse_last_batch},
                                    WordFunctions<OnError>{&on_error_name, &parse_on_error},
                                    WordFunctions<Verify>{&verify_name, &parse_verify},
                                    WordFunctions<MixMode>{&mix_mode_name, &parse_mix_mode},
                                    WordFunctions<MixRule>{&mix_rule_name, &parse_mix_rule},
                                    WordFunctions<Split>{&split_name, &parse_split},
                                    WordFunctions<Relayout>{&relayout_name, &parse_relayout},
                                    WordFunctions<Decode>{&decode_name, &parse_decode}};

// How a field of type T reads and writes as kind K: `get` and `set`, or no Text at all for a
// combination that makes no sense (which then fails to compile in the table below).
template <OptionKind K, class T>
struct Text;

template <>
struct Text<OptionKind::kText, std::string> {
  static std::string get(const std::string& v) { return v; }
  static void set(std::string_view, std::string_view t, std::string& v) { v = t; }
};
template <>
struct Text<OptionKind::kPath, std::string> : Text<OptionKind::kText, std::string> {};

template <class T>
requires std::is_enum_v<T>
struct Text<OptionKind::kWord, T> {
  static constexpr WordFunctions<T> kWords = std::get<WordFunctions<T>>(kWordFunctions);
  static std::string get(T v) { return kWords.first(v); }
  static void set(std::string_view, std::string_view t, T& v) { v = kWords.second(t); }
};

template <std::integral T>
struct Text<OptionKind::kInt, T> {
  static std::string get(T v) { return std::to_string(v); }
  static void set(std::string_view name, std::string_view t, T& v) { v = whole_number<T>(name, t); }
};

template <>
struct Text<OptionKind::kCount, int> {
  static std::string get(int v) { return v == kAuto ? "auto" : std::to_string(v); }
  static void set(std::string_view name, std::string_view t, int& v) {
    if (t == "auto") {
      v = kAuto;
      return;
    }
    int n = 0;
    const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
    if (ec != std::errc() || ptr != t.data() + t.size() || n < 0)
      refuse(name, "a whole number 0 or more, or auto", t);
    v = n;
  }
};

template <>
struct Text<OptionKind::kOptionalInt, int> {
  static std::string get(int v) { return v == -1 ? "" : std::to_string(v); }
  static void set(std::string_view name, std::string_view t, int& v) {
    v = t.empty() ? -1 : whole_number<int>(name, t);
  }
};

template <std::unsigned_integral T>
struct Text<OptionKind::kBytes, T> {
  static std::string get(T v) { return bytes_text(v); }
  static void set(std::string_view name, std::string_view t, T& v) {
    const std::optional<std::uint64_t> bytes = parse_bytes(t);
    if (!bytes || *bytes > std::numeric_limits<T>::max())
      throw ConfigError(std::string(name) + " '" + std::string(t) +
                        "' is not a size: give bytes or a size such as 16GiB or 500MB");
    v = static_cast<T>(*bytes);
  }
};

// float fields read as double first: a value from Python or a flag rounds once, to the double it
// names, then to float, as a double handed to a float field always has.
template <std::floating_point T>
struct Text<OptionKind::kReal, T> {
  static std::string get(T v) { return real_text(v); }
  static void set(std::string_view name, std::string_view t, T& v) {
    v = static_cast<T>(real_number(name, t));
  }
};

template <>
struct Text<OptionKind::kFlag, bool> {
  static std::string get(bool v) { return v ? "true" : "false"; }
  static void set(std::string_view name, std::string_view t, bool& v) {
    if (t != "true" && t != "false") refuse(name, "true or false", t);
    v = t == "true";
  }
};

template <>
struct Text<OptionKind::kDevices, DeviceSet> {
  static std::string get(const DeviceSet& v) { return v.to_string(); }
  static void set(std::string_view, std::string_view t, DeviceSet& v) { v = DeviceSet::parse(t); }
};

template <>
struct Text<OptionKind::kReals, std::vector<float>> {
  static std::string get(const std::vector<float>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) s += ',';
      s += real_text(v[i]);
    }
    return s;
  }
  static void set(std::string_view name, std::string_view t, std::vector<float>& v) {
    std::vector<float> values;
    const std::string_view all = t;
    while (!t.empty()) {
      const auto comma = t.find(',');
      const std::string_view one = t.substr(0, comma);
      double value = 0;
      const auto [ptr, ec] = std::from_chars(one.data(), one.data() + one.size(), value);
      if (ec != std::errc() || ptr != one.data() + one.size() || one.empty())
        refuse(name, "numbers separated by commas", all);
      values.push_back(static_cast<float>(value));
      t = comma == std::string_view::npos ? std::string_view{} : t.substr(comma + 1);
    }
    v = std::move(values);
  }
};

template <>
struct Text<OptionKind::kState, std::optional<LoaderState>> {
  static std::string get(const std::optional<LoaderState>& v) { return v ? v->serialize() : ""; }
  static void set(std::string_view, std::string_view t, std::optional<LoaderState>& v) {
    v = t.empty() ? std::nullopt : std::optional(LoaderState::parse(t));
  }
};

template <>
struct Text<OptionKind::kSources, std::vector<MixtureSource>> {
  static std::string get(const std::vector<MixtureSource>& v) { return detail::sources_text(v); }
  static void set(std::string_view name, std::string_view t, std::vector<MixtureSource>& v) {
    v = detail::parse_sources(t, std::string(name));
  }
};

template <>
struct Text<OptionKind::kPipeline, std::optional<Pipeline>> {
  static std::string get(const std::optional<Pipeline>& v) {
    if (!v) return "";
    std::string steps = v->describe();
    for (auto at = steps.find('\n'); at != std::string::npos; at = steps.find('\n', at))
      steps.replace(at, 1, " | ");
    return steps;
  }
};

template <>
struct Text<OptionKind::kCallback, std::function<void(std::string_view)>> {
  static std::string get(const std::function<void(std::string_view)>&) { return ""; }
};

// ---- Rows ---------------------------------------------------------------------------------------

// The groups of Options, in OptionGroup's order.
using Groups = std::tuple<SourceOptions, MixtureOptions, RemoteOptions, FieldOptions, PlanOptions,
                          PoolOptions, OutputOptions, MixingOptions, LimitOptions, LogOptions>;

template <class Group, std::size_t I = 0>
constexpr OptionGroup group_of() {
  static_assert(I < std::tuple_size_v<Groups>, "every group of Options is in Groups");
  if constexpr (std::is_same_v<Group, std::tuple_element_t<I, Groups>>)
    return static_cast<OptionGroup>(I);
  else
    return group_of<Group, I + 1>();
}

template <auto Member>
struct FieldOf;
template <class Group, class T, T Group::*Member>
struct FieldOf<Member> {
  using Type = T;
  static constexpr OptionGroup kGroup = group_of<Group>();
};

template <auto Member, OptionKind K>
std::string get_field(const Options& o) {
  return Text<K, typename FieldOf<Member>::Type>::get(o.*Member);
}

template <auto Member, OptionKind K>
void set_field(Options& o, std::string_view name, std::string_view text) {
  Text<K, typename FieldOf<Member>::Type>::set(name, text, o.*Member);
}

template <class T>
std::vector<std::string> words_of_field() {
  return canonical_words<T>();
}

// The row of one field. STOKE_OPTION takes its name from the field itself, so the two cannot
// differ; the group comes from the field's struct. Kinds without a text form get no setter.
template <auto Member, OptionKind K>
OptionInfo field_row(std::string_view name, std::string_view doc,
                     std::optional<OptionRange> range = std::nullopt) {
  using T = typename FieldOf<Member>::Type;
  OptionInfo row{name,    name,   name,  FieldOf<Member>::kGroup,
                 K,       doc,    range, &get_field<Member, K>,
                 nullptr, nullptr};
  if constexpr (requires { &Text<K, T>::set; }) row.set = &set_field<Member, K>;
  if constexpr (K == OptionKind::kWord) row.words = &words_of_field<T>;
  return row;
}

#define STOKE_OPTION(group, field, kind, ...) \
  field_row<&group::field, OptionKind::kind>(#field, __VA_ARGS__)

// Python's name for an option where it has always differed from the field's.
OptionInfo python_name(OptionInfo row, std::string_view python) {
  row.python = python;
  return row;
}

// size: height and width as one value, "HxW" ("" when both are 0, the default size).
std::string get_size(const Options& o) {
  return o.height == 0 && o.width == 0 ? "" : size_name({o.height, o.width});
}
void set_size(Options& o, std::string_view, std::string_view text) {
  const ImageSize s = text.empty() ? ImageSize{} : parse_size(text);
  o.height = s.height;
  o.width = s.width;
}

constexpr OptionRange kFraction{0, 1};

const std::vector<OptionInfo>& rows() {
  static const std::vector<OptionInfo> table = {
      // Source
      STOKE_OPTION(SourceOptions, data, kPath,
                   "the dataset: an image folder root/<class>/<image>, a list file "
                   "(path<TAB>label), an IDX folder, WebDataset tar shards "
                   "(train-{000000..000031}.tar, comma-separated, or a list file of shards), a "
                   "dataset-level index of shards (train.wids.json, sizes.json; local or a URL), "
                   "a COCO annotation file (instances.json), or Parquet files (x.parquet, "
                   "patterns or a folder of them, as Hugging Face lays them out)"),
      STOKE_OPTION(SourceOptions, image_root, kPath,
                   "COCO data: the folder its file_names are relative to (default: the JSON "
                   "file's folder)"),
      STOKE_OPTION(SourceOptions, split, kWord,
                   "IDX data, and a folder of Parquet files named by split: which files to read"),
      STOKE_OPTION(SourceOptions, label_field, kText,
                   "shards: where a sample's label is: cls (its .cls member), json:KEY (an "
                   "integer field of its .json member) or none"),
      STOKE_OPTION(SourceOptions, image_column, kText,
                   "Parquet: the column images are read from (default: the Image feature, a "
                   "column named image, or the first binary column)"),
      STOKE_OPTION(SourceOptions, label_column, kText,
                   "Parquet: the column labels are read from, integers or class names (default: "
                   "the ClassLabel feature or a column named label; none: no labels)"),
      // Sources
      STOKE_OPTION(MixtureOptions, sources, kSources,
                   "a mixture of datasets: a JSON list of sources, each {\"data\": ..., and one "
                   "of \"weight\", \"samples\", \"repeat\"; \"label_offset\": N or "
                   "\"auto\"; a source's own split, label_field, image_column, label_column, "
                   "image_root}; data may also name a mixture file {\"sources\": [...]}"),
      STOKE_OPTION(MixtureOptions, epoch_samples, kInt,
                   "a mixture's samples an epoch, shared by the weighted sources (0: every "
                   "source's size summed)",
                   OptionRange{0, 1099511627776.0}),
      // Remote
      STOKE_OPTION(RemoteOptions, cache_dir, kPath,
                   "shards on HTTP/S3: the local shard cache folder, shared by the machine's "
                   "loaders (default: STOKE_CACHE_DIR, else $XDG_CACHE_HOME/stoke, else "
                   "~/.cache/stoke)"),
      STOKE_OPTION(RemoteOptions, cache_limit, kBytes,
                   "shards on HTTP/S3: bytes the shard cache may hold, least recently used "
                   "copies evicted first (0: no local copies, workers read byte ranges from "
                   "the server)"),
      STOKE_OPTION(RemoteOptions, relayout_cache, kWord,
                   "local image folders: which JPEGs the workers copy, losslessly re-laid out, "
                   "into the cache folder's relayout/ the first time they read them, and read "
                   "from there after (progressive: their first epoch about 3x slower, every "
                   "later one about 4x faster; all; off)"),
      STOKE_OPTION(RemoteOptions, relayout_limit, kBytes,
                   "bytes the relayout cache may hold, least recently used copies evicted first "
                   "(0: no copies)"),
      // Fields
      STOKE_OPTION(FieldOptions, max_boxes, kInt,
                   "box rows per sample (0: the most any image has); a smaller value keeps each "
                   "sample's first boxes, and on_error=error refuses images with more",
                   OptionRange{0, 1 << 20}),
      STOKE_OPTION(FieldOptions, box_field, kText,
                   "shards: the extension of each sample's boxes member (json: {\"boxes\": [[x1, "
                   "y1, x2, y2], ...], \"classes\": [...]} in image pixels)"),
      STOKE_OPTION(FieldOptions, mask_field, kText,
                   "shards: the extension of each sample's mask member (seg.png); a list file "
                   "names masks in a third column"),
      STOKE_OPTION(FieldOptions, mask_ignore, kInt,
                   "the mask label of output pixels from outside the image (padding)"),
      STOKE_OPTION(FieldOptions, mask_depth, kInt, "bits per mask label: 8 or 16"),
      STOKE_OPTION(FieldOptions, bytes_field, kText,
                   "shards: the extension of each sample's member passed through untouched (txt: "
                   "a caption; json: a record); Parquet: a binary or string column"),
      STOKE_OPTION(FieldOptions, max_bytes, kInt,
                   "pass-through bytes per sample (0: the longest member); a longer member is cut "
                   "under on_error=skip and refused under error",
                   OptionRange{0, 16 << 20}),
      STOKE_OPTION(FieldOptions, min_box_size, kReal,
                   "a box, moved with its pixels and clipped to the output, is kept when both its "
                   "sides are at least this many pixels"),
      STOKE_OPTION(FieldOptions, min_box_area, kReal, "... and its area at least this"),
      STOKE_OPTION(FieldOptions, min_box_visible, kReal,
                   "... and at least this fraction of the moved box lies inside the output"),
      // Plan
      STOKE_OPTION(PlanOptions, batch, kInt,
                   "samples per batch on this rank; a multiple of the device count",
                   OptionRange{1, 1 << 24}),
      STOKE_OPTION(PlanOptions, devices, kDevices,
                   "the devices a batch is split over: cpu:G (G host devices), cuda:0,1 or auto "
                   "(every visible GPU, else cpu:1)"),
      STOKE_OPTION(PlanOptions, seed, kInt, "seeds the shuffle and every random augmentation"),
      STOKE_OPTION(PlanOptions, shuffle, kFlag, "shuffle the samples every epoch"),
      STOKE_OPTION(PlanOptions, shuffle_window, kInt,
                   "shards: each epoch permutes the shards and shuffles samples within runs of "
                   "this many shards (0: every sample with every other)",
                   OptionRange{0, 1 << 30}),
      STOKE_OPTION(PlanOptions, last_batch, kWord,
                   "an epoch's last, incomplete batch: pad (with repeats, marked valid 0) or drop"),
      STOKE_OPTION(PlanOptions, rank, kOptionalInt,
                   "this process's rank (default: RANK from torchrun or OMPI_COMM_WORLD_RANK from "
                   "mpirun, else 0)"),
      STOKE_OPTION(PlanOptions, world, kOptionalInt,
                   "how many ranks there are (default: WORLD_SIZE or OMPI_COMM_WORLD_SIZE, else "
                   "1)"),
      STOKE_OPTION(PlanOptions, repeats, kInt,
                   "repeated augmentation (torchvision's --ra-reps): copies of each sample per "
                   "epoch, each augmented on its own, dealt as RASampler deals them (1: off)",
                   OptionRange{1, 64}),
      python_name(STOKE_OPTION(PlanOptions, resume, kState,
                               "a saved state (a loader's state()) to continue from, with any "
                               "ranks, devices and batch"),
                  "state"),
      // Pool
      STOKE_OPTION(PoolOptions, workers, kCount,
                   "worker processes (0: the pipeline runs in-process), or auto: start with one "
                   "and resize the live pool to keep the consumer's wait under stall_target",
                   OptionRange{0, 512}),
      STOKE_OPTION(PoolOptions, max_workers, kInt,
                   "workers=auto's upper bound (0: the cores available)", OptionRange{0, 512}),
      STOKE_OPTION(PoolOptions, stall_target, kReal,
                   "workers=auto: the fraction of the consumer's time it may wait for data",
                   OptionRange{1e-6, 1}),
      STOKE_OPTION(PoolOptions, monitor_window, kInt,
                   "batches in the stall monitor's moving window (at least 4)"),
      STOKE_OPTION(PoolOptions, prefetch, kCount,
                   "batch slots (0: 2 x workers + 2), or auto: also add slots, within "
                   "memory_budget, when the consumer waits while the workers idle",
                   OptionRange{0, 1 << 16}),
      STOKE_OPTION(PoolOptions, chunk, kInt, "samples per unit of work (0: batch / workers)",
                   OptionRange{0, 1 << 24}),
      STOKE_OPTION(PoolOptions, memory_budget, kBytes,
                   "bytes for batch slots, held batches included (0: 2GiB)"),
      STOKE_OPTION(PoolOptions, worker_path, kPath,
                   "the stoke-worker executable (default: the one installed beside the library)"),
      // Output
      STOKE_OPTION(OutputOptions, pipeline, kPipeline,
                   "the sample pipeline's steps, in order, instead of the augment preset "
                   "(docs/USAGE.md, Pipelines); needs size"),
      STOKE_OPTION(OutputOptions, augment, kWord,
                   "the preset pipeline: train (random-resized crop and flip; pad-crop and flip "
                   "for small images) or eval (resize the shorter side, centre crop)"),
      OptionInfo{"size", "size", "height, width", OptionGroup::kOutput, OptionKind::kSize,
                 "the output's height and width, HxW or N for NxN (default: the IDX images' own "
                 "size, or 224x224 for image files)",
                 std::nullopt, &get_size, &set_size, nullptr},
      STOKE_OPTION(OutputOptions, dtype, kWord,
                   "what the devices receive: uint8 (the pipeline's NHWC bytes), or float32, "
                   "float16 or bfloat16: (x / 255 - mean) / std, computed on the devices"),
      STOKE_OPTION(OutputOptions, layout, kWord, "the layout of float output"),
      STOKE_OPTION(OutputOptions, mean, kReals,
                   "normalization means in 0..1 units, one per channel or one for all (default: "
                   "ImageNet's for RGB, 0.5 otherwise)"),
      python_name(STOKE_OPTION(OutputOptions, stddev, kReals,
                               "normalization standard deviations, given as mean is"),
                  "std"),
      STOKE_OPTION(OutputOptions, decode, kWord,
                   "where JPEGs are decoded: cpu (the workers), gpu (the workers draw each crop "
                   "and hand over the compressed bytes; the devices decode and resize), or "
                   "hybrid (gpu_share of the samples on the devices) (docs/USAGE.md, Decoding "
                   "on the GPU)"),
      STOKE_OPTION(OutputOptions, gpu_share, kReal,
                   "decode=hybrid: the share of samples decoded on the devices, 0..1, each "
                   "chosen from (seed, epoch, position)",
                   kFraction),
      STOKE_OPTION(OutputOptions, max_compressed_bytes, kBytes,
                   "decode=gpu/hybrid: compressed bytes a slot holds per sample; larger files "
                   "are decoded by the workers"),
      // Mixing
      STOKE_OPTION(MixingOptions, mixup_alpha, kReal,
                   "MixUp's Beta(alpha, alpha) on each device's chunk (0: off; needs a float "
                   "dtype and num_classes)",
                   OptionRange{0, 1e6}),
      STOKE_OPTION(MixingOptions, cutmix_alpha, kReal, "CutMix's Beta(alpha, alpha) (0: off)",
                   OptionRange{0, 1e6}),
      STOKE_OPTION(MixingOptions, mix_prob, kReal, "the chance a draw mixes at all", kFraction),
      STOKE_OPTION(MixingOptions, mix_switch_prob, kReal,
                   "with both alphas: the chance a draw is CutMix", kFraction),
      STOKE_OPTION(MixingOptions, mix_mode, kWord,
                   "one draw per chunk (batch), per pair of samples or per sample (timm's modes)"),
      STOKE_OPTION(MixingOptions, mix_rule, kWord,
                   "whose rule the mixing follows: torchvision's v2.MixUp/CutMix or "
                   "timm.data.Mixup"),
      STOKE_OPTION(MixingOptions, num_classes, kInt,
                   "soft labels over this many classes (0: none; mixing needs them)",
                   OptionRange{0, 1 << 20}),
      STOKE_OPTION(MixingOptions, label_smoothing, kReal,
                   "the soft labels' smoothing (timm's rule)", OptionRange{0, 0.999999}),
      // Limits
      STOKE_OPTION(LimitOptions, on_error, kWord,
                   "bad input: skip (replace it deterministically, count and log it) or error "
                   "(stop, naming the file)"),
      STOKE_OPTION(LimitOptions, verify, kWord,
                   "how much of each JPEG is checked for damage: the whole file, or only through "
                   "the crop's last row (region: faster on large photographs)"),
      STOKE_OPTION(LimitOptions, max_pixels, kInt,
                   "images whose header claims more pixels are bad input (too_large)"),
      STOKE_OPTION(LimitOptions, max_classes, kInt,
                   "every label the data states as a number (.cls, json:KEY, box classes, list "
                   "files, IDX) must be below this",
                   OptionRange{1, std::numeric_limits<int>::max()}),
      STOKE_OPTION(LimitOptions, task_timeout_s, kReal,
                   "seconds a worker may spend on one unit of work before it is replaced and the "
                   "work redone (0: no limit)"),
      STOKE_OPTION(LimitOptions, startup_timeout_s, kReal,
                   "seconds a worker may take to start; one that misses it is restarted"),
      // Log
      STOKE_OPTION(LogOptions, log, kCallback,
                   "receives one line per notable event: a skipped file, a worker restart, a pool "
                   "resize (default: stderr)"),
  };
  return table;
}

#undef STOKE_OPTION

}  // namespace

std::span<const OptionInfo> option_table() {
  return rows();
}

const OptionInfo* find_option(std::string_view name) {
  for (const OptionInfo& row : rows())
    if (row.name == name || row.python == name) return &row;
  return nullptr;
}

std::string option_text(const Options& o, const OptionInfo& option) {
  return option.get(o);
}

void set_option(Options& o, const OptionInfo& option, std::string_view text) {
  if (option.set == nullptr)
    throw ConfigError(std::string(option.name) + " has no text form: set it in code");
  option.set(o, option.name, text);
}

std::vector<std::string> option_words(const OptionInfo& option) {
  return option.words != nullptr ? option.words() : std::vector<std::string>{};
}

std::string option_flag(const OptionInfo& option) {
  std::string flag = "--";
  flag += option.name;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

const char* option_group_name(OptionGroup group) {
  static constexpr const char* kNames[] = {"source", "sources", "remote", "fields", "plan",
                                           "pool",   "output",  "mixing", "limits", "log"};
  return kNames[static_cast<int>(group)];
}

const char* option_kind_name(OptionKind kind) {
  static constexpr const char* kNames[] = {
      "text", "path",    "word", "int",   "count", "optional_int", "bytes",    "real",
      "flag", "devices", "size", "reals", "state", "sources",      "pipeline", "callback"};
  return kNames[static_cast<int>(kind)];
}

}  // namespace stoke
