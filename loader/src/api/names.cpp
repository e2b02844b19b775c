#include "stoke/names.hpp"

#include <array>
#include <charconv>
#include <span>
#include <type_traits>

#include "stoke/error.hpp"
#include "stoke/kernels/normalize.hpp"

namespace stoke {
namespace {

template <class T>
struct Word {
  std::string_view word;
  T value;
  bool alias = false;  // accepted, never printed by *_name
};

// "a, b or c", then " (aliases: x, y)" when there are any.
template <class T>
std::string accepted(std::span<const Word<T>> words) {
  std::string canonical, aliases;
  std::size_t count = 0, seen = 0;
  for (const Word<T>& w : words) count += w.alias ? 0 : 1;
  for (const Word<T>& w : words) {
    if (w.alias) {
      aliases += (aliases.empty() ? "" : ", ") + std::string(w.word);
      continue;
    }
    ++seen;
    if (seen > 1) canonical += seen == count ? " or " : ", ";
    canonical += w.word;
  }
  return aliases.empty() ? canonical : canonical + " (aliases: " + aliases + ")";
}

template <class T>
T parse_word(const char* what, std::string_view text, std::span<const Word<T>> words) {
  for (const Word<T>& w : words)
    if (w.word == text) return w.value;
  throw ConfigError(std::string(what) + " must be " + accepted(words) + ", got '" +
                    std::string(text) + "'");
}

template <class T>
const char* name_of(T value, std::span<const Word<T>> words) {
  for (const Word<T>& w : words)
    if (!w.alias && w.value == value) return w.word.data();  // the literals end in '\0'
  return "?";
}

constexpr Word<Augment> kAugment[] = {{"train", Augment::kTraining},
                                      {"eval", Augment::kEvaluation},
                                      {"default", Augment::kTraining, true},  // stoke-bench's
                                      {"none", Augment::kEvaluation, true}};
constexpr Word<Layout> kLayout[] = {{"nchw", Layout::kNCHW}, {"nhwc", Layout::kNHWC}};
constexpr Word<LastBatch> kLastBatch[] = {{"pad", LastBatch::kPad}, {"drop", LastBatch::kDrop}};
constexpr Word<OnError> kOnError[] = {{"skip", OnError::kSkip}, {"error", OnError::kError}};
constexpr Word<Verify> kVerify[] = {{"whole-file", Verify::kWholeFile},
                                    {"region", Verify::kRegion}};
constexpr Word<MixMode> kMixMode[] = {
    {"batch", MixMode::kBatch}, {"pair", MixMode::kPair}, {"elem", MixMode::kElem}};
constexpr Word<MixRule> kMixRule[] = {{"torchvision", MixRule::kTorchvision},
                                      {"timm", MixRule::kTimm}};
constexpr Word<Relayout> kRelayout[] = {
    {"off", Relayout::kOff}, {"progressive", Relayout::kProgressive}, {"all", Relayout::kAll}};
constexpr Word<Decode> kDecode[] = {
    {"cpu", Decode::kCpu}, {"gpu", Decode::kGpu}, {"hybrid", Decode::kHybrid}};
constexpr Word<Split> kSplit[] = {{"train", Split::kTrain}, {"test", Split::kTest}};
constexpr Word<TuneTarget> kTuneTarget[] = {{"workers", TuneTarget::kWorkers},
                                            {"prefetch", TuneTarget::kPrefetch}};
constexpr Word<StagingMode> kStagingMode[] = {{"none", StagingMode::kNone},
                                              {"host", StagingMode::kHost},
                                              {"registered", StagingMode::kRegistered},
                                              {"pinned-fallback", StagingMode::kPinnedFallback}};

// The kernels name the dtypes (their CPU reference and tests print them); reuse their words.
const std::array<Word<DType>, 4>& dtype_words() {
  static const std::array<Word<DType>, 4> words = [] {
    std::array<Word<DType>, 4> w{};
    const DType all[] = {DType::kUInt8, DType::kFloat32, DType::kFloat16, DType::kBFloat16};
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = {kernels::dtype_name(all[i]), all[i]};
    return w;
  }();
  return words;
}

bool parse_side(std::string_view text, int& side) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), side);
  return ec == std::errc() && ptr == text.data() + text.size() && side >= 1 && side <= 65535;
}

}  // namespace

template <class T>
std::vector<std::string> canonical_words() {
  std::span<const Word<T>> words;
  if constexpr (std::is_same_v<T, Augment>) words = kAugment;
  if constexpr (std::is_same_v<T, DType>) words = dtype_words();
  if constexpr (std::is_same_v<T, Layout>) words = kLayout;
  if constexpr (std::is_same_v<T, LastBatch>) words = kLastBatch;
  if constexpr (std::is_same_v<T, OnError>) words = kOnError;
  if constexpr (std::is_same_v<T, Verify>) words = kVerify;
  if constexpr (std::is_same_v<T, MixMode>) words = kMixMode;
  if constexpr (std::is_same_v<T, MixRule>) words = kMixRule;
  if constexpr (std::is_same_v<T, Split>) words = kSplit;
  if constexpr (std::is_same_v<T, Relayout>) words = kRelayout;
  if constexpr (std::is_same_v<T, Decode>) words = kDecode;
  std::vector<std::string> out;
  for (const Word<T>& w : words)
    if (!w.alias) out.emplace_back(w.word);
  return out;
}
template std::vector<std::string> canonical_words<Augment>();
template std::vector<std::string> canonical_words<DType>();
template std::vector<std::string> canonical_words<Layout>();
template std::vector<std::string> canonical_words<LastBatch>();
template std::vector<std::string> canonical_words<OnError>();
template std::vector<std::string> canonical_words<Verify>();
template std::vector<std::string> canonical_words<MixMode>();
template std::vector<std::string> canonical_words<MixRule>();
template std::vector<std::string> canonical_words<Split>();
template std::vector<std::string> canonical_words<Relayout>();
template std::vector<std::string> canonical_words<Decode>();

Augment parse_augment(std::string_view w) {
  return parse_word<Augment>("augment", w, kAugment);
}
const char* augment_name(Augment v) {
  return name_of<Augment>(v, kAugment);
}

DType parse_dtype(std::string_view w) {
  return parse_word<DType>("dtype", w, dtype_words());
}
const char* dtype_name(DType v) {
  return name_of<DType>(v, dtype_words());
}

Layout parse_layout(std::string_view w) {
  return parse_word<Layout>("layout", w, kLayout);
}
const char* layout_name(Layout v) {
  return name_of<Layout>(v, kLayout);
}

LastBatch parse_last_batch(std::string_view w) {
  return parse_word<LastBatch>("last_batch", w, kLastBatch);
}
const char* last_batch_name(LastBatch v) {
  return name_of<LastBatch>(v, kLastBatch);
}

Verify parse_verify(std::string_view w) {
  return parse_word<Verify>("verify", w, kVerify);
}
const char* verify_name(Verify v) {
  return name_of<Verify>(v, kVerify);
}

Relayout parse_relayout(std::string_view w) {
  return parse_word<Relayout>("relayout_cache", w, kRelayout);
}
const char* relayout_name(Relayout v) {
  return name_of<Relayout>(v, kRelayout);
}

Decode parse_decode(std::string_view w) {
  return parse_word<Decode>("decode", w, kDecode);
}
const char* decode_name(Decode v) {
  return name_of<Decode>(v, kDecode);
}

MixMode parse_mix_mode(std::string_view w) {
  return parse_word<MixMode>("mix_mode", w, kMixMode);
}
const char* mix_mode_name(MixMode v) {
  return name_of<MixMode>(v, kMixMode);
}

MixRule parse_mix_rule(std::string_view w) {
  return parse_word<MixRule>("mix_rule", w, kMixRule);
}
const char* mix_rule_name(MixRule v) {
  return name_of<MixRule>(v, kMixRule);
}

OnError parse_on_error(std::string_view w) {
  return parse_word<OnError>("on_error", w, kOnError);
}
const char* on_error_name(OnError v) {
  return name_of<OnError>(v, kOnError);
}

Split parse_split(std::string_view w) {
  return parse_word<Split>("split", w, kSplit);
}
const char* split_name(Split v) {
  return name_of<Split>(v, kSplit);
}
const char* tune_target_name(TuneTarget v) {
  return name_of<TuneTarget>(v, kTuneTarget);
}
const char* staging_mode_name(StagingMode v) {
  return name_of<StagingMode>(v, kStagingMode);
}

ImageSize parse_size(std::string_view text) {
  const auto x = text.find('x');
  ImageSize s;
  const bool ok =
      x == std::string_view::npos
          ? parse_side(text, s.height) && parse_side(text, s.width)
          : parse_side(text.substr(0, x), s.height) && parse_side(text.substr(x + 1), s.width);
  if (!ok)
    throw ConfigError(
        "size must be HxW or N (N x N), each side 1..65535, e.g. 224x224 or 224; "
        "got '" +
        std::string(text) + "'");
  return s;
}

std::string size_name(ImageSize s) {
  return std::to_string(s.height) + "x" + std::to_string(s.width);
}

}  // namespace stoke
