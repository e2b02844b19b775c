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

CLI::Option* add_count_or_auto(CLI::App& app, const std::string& flag, int& out, int min, int max,
                               const std::string& help) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  return add_word(
             app, flag, out,
             [flag, min, max, range](const std::string& word) {
               if (word == "auto") return kAuto;
               int n = 0;
               const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), n);
               if (ec != std::errc() || ptr != word.data() + word.size() || n < min || n > max)
                 throw ConfigError("wants a count in " + range + " or auto, got '" + word + "'");
               return n;
             },
             help)
      ->type_name("N|auto");
}

}  // namespace stoke::tools
