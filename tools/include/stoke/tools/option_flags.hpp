#pragma once
// The tools' flags for stoke's options, made from the table of options (stoke/option_table.hpp)
// so that a flag's name, help, default and range are never written twice. Thread-safety: main
// thread, before anything else runs (as stoke/tools/cli.hpp).

#include <CLI/CLI.hpp>
#include <string_view>

#include "stoke/options.hpp"

namespace stoke::tools {

// --name-with-dashes for the option `name`, setting it in `o` when given: its help is the
// option's doc, its default what `o` holds when the flag is added, and a value outside the
// table's range for tools, or not one of the option's values, is a usage error naming the flag
// (stoke/tools/cli.hpp). Throws std::logic_error for a name the table lacks or an option
// without a text form (pipeline, log): a programming error of the tool.
CLI::Option* add_option_flag(CLI::App& app, Options& o, std::string_view name);

}  // namespace stoke::tools
