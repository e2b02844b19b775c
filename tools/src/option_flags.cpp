#include "stoke/tools/option_flags.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "stoke/error.hpp"
#include "stoke/option_table.hpp"
#include "stoke/tools/cli.hpp"

namespace stoke::tools {
namespace {

// What --help shows after the flag.
std::string value_name(const OptionInfo& option) {
  switch (option.kind) {
    case OptionKind::kWord: {
      std::string words;
      for (const std::string& w : option_words(option)) {
        if (!words.empty()) words += '|';
        words += w;
      }
      return words;
    }
    case OptionKind::kPath:
      return "PATH";
    case OptionKind::kInt:
    case OptionKind::kOptionalInt:
      return "INT";
    case OptionKind::kCount:
      return "N|auto";
    case OptionKind::kBytes:
      return "SIZE";
    case OptionKind::kReal:
      return "FLOAT";
    case OptionKind::kFlag:
      return "true|false";
    case OptionKind::kDevices:
      return "SPEC";
    case OptionKind::kSize:
      return "HxW|N";
    case OptionKind::kReals:
      return "X,...";
    case OptionKind::kState:
      return "STATE";
    case OptionKind::kSources:
      return "JSON";
    default:
      return "TEXT";
  }
}

// The table's range for tools, as CLI11 checks it: integers as integers, so that its message reads
// "Value 0 not in range 1 to 16777216".
CLI::Validator range_check(const OptionInfo& option) {
  const OptionRange& r = *option.range;
  if (option.kind == OptionKind::kReal) return CLI::Range(r.min, r.max);
  const int min = static_cast<int>(r.min), max = static_cast<int>(r.max);
  if (option.kind == OptionKind::kCount)
    return CLI::Validator(
        [min, max](std::string& word) {
          try {
            parse_count_or_auto(word, min, max);
          } catch (const ConfigError& e) {
            return std::string(e.what());
          }
          return std::string();
        },
        "");
  return CLI::Range(static_cast<std::int64_t>(min), static_cast<std::int64_t>(max));
}

}  // namespace

CLI::Option* add_option_flag(CLI::App& app, Options& o, std::string_view name) {
  const OptionInfo* option = find_option(name);
  if (option == nullptr || option->set == nullptr)
    throw std::logic_error("no option with a text form is named '" + std::string(name) + "'");
  const std::string flag = option_flag(*option);
  CLI::Option* added = app.add_option_function<std::string>(
      flag,
      [&o, option, flag](const std::string& text) {
        try {
          set_option(o, *option, text);
        } catch (const ConfigError& e) {
          throw CLI::ValidationError(flag, e.what());
        }
      },
      std::string(option->doc));
  added->type_name(value_name(*option));
  if (const std::string now = option_text(o, *option); !now.empty()) added->default_str(now);
  if (option->range) added->check(range_check(*option));
  return added;
}

}  // namespace stoke::tools
