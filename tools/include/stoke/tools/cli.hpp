#pragma once
// The tools' command lines, on CLI11. Thread-safety: main thread, before anything else runs.
//
// One contract for every tool: --help prints the generated help on stdout and exits 0; any usage
// error (unknown or misspelled flag, missing or malformed value, value out of range, unknown
// word) prints what is wrong, naming the flag, on stderr and exits 2. CLI11's own exit codes
// differ per error type (105 for a failed check, 109 for an unexpected argument, ...), which
// scripts cannot rely on; parse() maps them all to kUsageError.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "stoke/error.hpp"

namespace stoke::tools {

inline constexpr int kUsageError = 2;

// A CLI11 app set up the way every tool wants it: a flag given twice keeps its last value (as
// the hand-written parsers did), help lines wide enough for the flag names.
void configure(CLI::App& app);

// Parses the command line. nullopt: go on; otherwise the tool's exit code (0 after --help,
// kUsageError after a usage error, both already printed).
std::optional<int> parse(CLI::App& app, int argc, char** argv);

// A number > 0 (CLI::PositiveNumber's message prints DBL_MAX as the upper bound).
CLI::Validator positive();

// A usage error found after parsing (a flag's value checked against another's, say): prints
// "FLAG: WHAT" as parse() would and returns kUsageError.
int usage_error(CLI::App& app, const std::string& flag, const std::string& what);

// --flag taking one word that `parse_word` (one of stoke/names.hpp's parse_*, or any function
// throwing ConfigError) turns into `out`; its ConfigError becomes a usage error naming the flag.
template <class T, class Parse>
CLI::Option* add_word(CLI::App& app, const std::string& flag, T& out, Parse parse_word,
                      const std::string& help) {
  return app
      .add_option_function<std::string>(
          flag,
          [&out, parse_word, flag](const std::string& word) {
            try {
              out = parse_word(word);
            } catch (const ConfigError& e) {
              throw CLI::ValidationError(flag, e.what());
            }
          },
          help)
      ->type_name("WORD");
}

// A whole number in [min, max], written in full (no sign, space or trailing text); nullopt
// otherwise. Callers word their own message.
std::optional<int> parse_count(std::string_view text, int min, int max);

// "N" or "A..B", each part as parse_count takes it. A may exceed B: the caller judges that, and
// what a single N means (`single`).
struct CountRange {
  int lo = 0;
  int hi = 0;
  bool single = false;
};
std::optional<CountRange> parse_count_range(std::string_view text, int min, int max);

// A count in [min, max] or "auto" (stoke::kAuto); otherwise throws ConfigError "wants a count in
// MIN..MAX or auto, got 'WORD'".
int parse_count_or_auto(std::string_view word, int min, int max);

// --flag taking a count in [min, max] or "auto" (stored as stoke::kAuto).
CLI::Option* add_count_or_auto(CLI::App& app, const std::string& flag, int& out, int min, int max,
                               const std::string& help);

}  // namespace stoke::tools
