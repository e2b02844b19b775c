#pragma once
// The words for option values, one vocabulary for the C++ API, the tools' flags and Python.
// Thread-safety: pure functions.
//
// Each parse_* accepts the canonical word (what the matching *_name returns) and a few older
// spellings kept as aliases, and throws ConfigError listing them otherwise, e.g.
// "augment must be train or eval (aliases: default, none), got 'x'".
//
//   Augment    train, eval            (aliases: default = train, none = eval)
//   DType      uint8, float32, float16, bfloat16
//   Layout     nchw, nhwc
//   LastBatch  pad, drop
//   OnError    skip, error
//   Verify     whole-file, region
//   Split      train, test
//   Relayout   off, progressive, all
//   Decode     cpu, gpu, hybrid
//   MixMode    batch, pair, elem
//   MixRule    torchvision, timm
//   devices    cpu:G, cuda:0,1, auto  (DeviceSet::parse)
//   size       HxW or N (N x N), each side 1..65535

#include <string>
#include <string_view>
#include <vector>

#include "stoke/dtype.hpp"
#include "stoke/options.hpp"
#include "stoke/stats.hpp"

namespace stoke {

Augment parse_augment(std::string_view word);
const char* augment_name(Augment value);

DType parse_dtype(std::string_view word);
const char* dtype_name(DType value);

Layout parse_layout(std::string_view word);
const char* layout_name(Layout value);

LastBatch parse_last_batch(std::string_view word);
const char* last_batch_name(LastBatch value);

OnError parse_on_error(std::string_view word);
const char* on_error_name(OnError value);

Verify parse_verify(std::string_view word);
const char* verify_name(Verify value);
Relayout parse_relayout(std::string_view word);
const char* relayout_name(Relayout value);

Decode parse_decode(std::string_view word);
const char* decode_name(Decode value);

MixMode parse_mix_mode(std::string_view word);
const char* mix_mode_name(MixMode value);

MixRule parse_mix_rule(std::string_view word);
const char* mix_rule_name(MixRule value);

Split parse_split(std::string_view word);
const char* split_name(Split value);

// The canonical words of one of the enums above, in order: {"pad", "drop"} for LastBatch. What
// help texts and the table of options (stoke/option_table.hpp) list.
template <class T>
std::vector<std::string> canonical_words();

// Words for what Stats reports: "workers" / "prefetch"; "none", "host", "registered",
// "pinned-fallback".
const char* tune_target_name(TuneTarget value);
const char* staging_mode_name(StagingMode value);

// The same as DeviceSet::parse and DeviceSet::to_string.
DeviceSet parse_devices(std::string_view spec);
std::string devices_name(const DeviceSet& devices);

// An output size: Options::height and width.
struct ImageSize {
  int height = 0;
  int width = 0;
  bool operator==(const ImageSize&) const = default;
};
// "224x224" or "224" (224 x 224).
ImageSize parse_size(std::string_view text);
std::string size_name(ImageSize size);  // "HxW"

}  // namespace stoke
