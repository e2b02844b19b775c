#include "stoke/tools/cli.hpp"

#include <charconv>

#include "stoke/options.hpp"

namespace stoke::tools {

void configure(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(30);
}

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // exit() prints: help on stdout, an error (and "Run with --help") on stderr.
    return app.exit(e) == 0 ? 0 : kUsageError;
  }
  return std::nullopt;
}

CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& text) {
        double v = 0;
        if (CLI::detail::lexical_cast(text, v) && v > 0) return std::string();
        return "wants a positive number, got '" + text + "'";
      },
      "POSITIVE");
}

int usage_error(CLI::App& app, const std::string& flag, const std::string& what) {
  app.exit(CLI::ValidationError(flag, what));
  return kUsageError;
}

std::optional<int> parse_count(std::string_view text, int min, int max) {
  int n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size() || n < min || n > max)
    return std::nullopt;
  return n;
}

std::optional<CountRange> parse_count_range(std::string_view text, int min, int max) {
  const auto dots = text.find("..");
  if (dots == std::string_view::npos) {
    const std::optional<int> n = parse_count(text, min, max);
    if (!n) return std::nullopt;
    return CountRange{*n, *n, true};
  }
  const std::optional<int> lo = parse_count(text.substr(0, dots), min, max);
  const std::optional<int> hi = parse_count(text.substr(dots + 2), min, max);
  if (!lo || !hi) return std::nullopt;
  return CountRange{*lo, *hi, false};
}

int parse_count_or_auto(std::string_view word, int min, int max) {
  if (word == "auto") return kAuto;
  const std::optional<int> n = parse_count(word, min, max);
  if (!n)
    throw ConfigError("wants a count in " + std::to_string(min) + ".." + std::to_string(max) +
                      " or auto, got '" + std::string(word) + "'");
  return *n;
}

CLI::Option* add_count_or_auto(CLI::App& app, const std::string& flag, int& out, int min, int max,
                               const std::string& help) {
  return add_word(
             app, flag, out,
             [min, max](const std::string& word) { return parse_count_or_auto(word, min, max); },
             help)
      ->type_name("N|auto");
}

}  // namespace stoke::tools
