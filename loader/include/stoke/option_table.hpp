#pragma once
// Every field of Options described once: its name, group, kind, one line of doc, and how its
// value reads and writes as text. Thread-safety: an immutable table and pure functions.
//
// What presents options to people reads this table instead of restating them: the Python
// keywords (names, defaults, docstrings), stoke-bench's flags (--name-with-dashes, help from
// the doc, default from the struct) and docs/USAGE.md's table of options. A default is written
// only at its field (stoke/options.hpp); the table reads it from Options{}. Adding an option is
// its field and one row in api/option_table.cpp (docs/ARCHITECTURE.md, "Options: groups and
// one table").

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stoke/options.hpp"

namespace stoke {

// The groups of stoke/options.hpp: SourceOptions is kSource, MixtureOptions kSources, and so on.
enum class OptionGroup {
  kSource,
  kSources,
  kRemote,
  kFields,
  kPlan,
  kPool,
  kOutput,
  kMixing,
  kLimits,
  kLog
};

// How an option's value is written as text: a flag's value, the word a Python keyword takes.
enum class OptionKind {
  kText,         // any text
  kPath,         // a file or folder
  kWord,         // one of the option's words (stoke/names.hpp)
  kInt,          // a whole number
  kCount,        // a whole number 0 or more, or "auto" (kAuto)
  kOptionalInt,  // a whole number, or "" for none (-1)
  kBytes,        // a byte count, or a size such as "16GiB" (stoke/format.hpp's parse_bytes)
  kReal,         // a number
  kFlag,         // "true" or "false"
  kDevices,      // "cpu:G", "cuda:0,1" or "auto" (DeviceSet::parse)
  kSize,         // "HxW" or "N": height and width together; "" for the default
  kReals,        // numbers separated by commas; "" for none
  kState,        // a LoaderState::serialize() string; "" for none
  kSources,      // a JSON list of a mixture's sources (api/mixture_text.hpp); "" for none
  kPipeline,     // no text form: a Pipeline built in code, or from steps (Python, --pipeline)
  kCallback,     // no text form: a C++ function
};

// The values a tool's flag accepts, checked before the loader's own checks (api/config.cpp).
struct OptionRange {
  double min = 0;
  double max = 0;
};

struct OptionInfo {
  std::string_view name;    // a field's name; the tools' flag is --name-with-dashes
  std::string_view python;  // the Python keyword: `name`, or the name Python has always used
  std::string_view fields;  // the Options fields it stands for: `name`, or "height, width"
  OptionGroup group;
  OptionKind kind;
  std::string_view doc;  // one line: a flag's help, a keyword's docstring, a row of the docs
  std::optional<OptionRange> range;  // for a tool's flag; none: any value of its kind
  // Use option_text() and set_option() rather than these. `set` is null for the kinds without a
  // text form (kPipeline, kCallback); `words` is null but for kWord.
  std::string (*get)(const Options& o);
  void (*set)(Options& o, std::string_view name, std::string_view text);
  std::vector<std::string> (*words)();
};

// Every option, group by group, in the order the docs list them.
std::span<const OptionInfo> option_table();

// The row whose name or Python keyword is `name`; nullptr when there is none.
const OptionInfo* find_option(std::string_view name);

// The option's value in `o`, as set_option() takes it back: "0.02", "auto", "16GiB", "cpu:1";
// "" for an unset optional value. kPipeline: describe()'s lines joined by " | "; kCallback: "".
std::string option_text(const Options& o, const OptionInfo& option);

// Sets the option from text. Throws ConfigError naming the option when the text is not one of
// its values, or when the option has no text form.
void set_option(Options& o, const OptionInfo& option, std::string_view text);

// kWord: the canonical words, in order ("pad", "drop"); empty for the other kinds.
std::vector<std::string> option_words(const OptionInfo& option);

// "--stall-target" for stall_target.
std::string option_flag(const OptionInfo& option);

// "source", "remote", "fields", "plan", "pool", "output", "mixing", "limits", "log".
const char* option_group_name(OptionGroup group);
// "text", "path", "word", "int", "count", "optional_int", "bytes", "real", "flag", "devices",
// "size", "reals", "state", "pipeline", "callback".
const char* option_kind_name(OptionKind kind);

}  // namespace stoke
