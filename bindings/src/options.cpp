// The Python keywords of stoke.Loader: bindings/stoke/__init__.py builds the Loader's signature,
// defaults and docstring from options() (the table of options, stoke/option_table.hpp), turns
// each keyword's Python value into the option's text, and options_from() sets them through the
// same table, so that no option is restated here.

#include <string>
#include <utility>

#include "bindings.hpp"
#include "stoke/error.hpp"
#include "stoke/option_table.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::python {

Options options_from(const std::map<std::string, std::string>& texts,
                     const std::vector<StepArgs>& pipeline, int channels) {
  Options o;
  for (const auto& [name, text] : texts) {
    const OptionInfo* option = find_option(name);
    if (option == nullptr) throw ConfigError("there is no option named '" + name + "'");
    set_option(o, *option, text);
  }
  if (!pipeline.empty()) {
    if (o.height == 0) throw ConfigError("pipeline= needs size= (the output height and width)");
    if (channels != 1 && channels != 3)
      throw ConfigError("channels must be 1 (gray) or 3 (RGB), got " + std::to_string(channels));
    std::vector<StepSpec> steps;
    for (const auto& [name, numbers, words] : pipeline) steps.push_back({name, numbers, words});
    o.pipeline = make_pipeline(o.height, o.width, channels, steps);
  }
  return o;
}

void bind_options(nb::module_& m) {
  m.def(
      "options",
      [] {
        const Options defaults;
        nb::list rows;
        for (const OptionInfo& option : option_table()) {
          nb::dict row;
          row["name"] = std::string(option.name);
          row["python"] = std::string(option.python);
          row["group"] = option_group_name(option.group);
          row["kind"] = option_kind_name(option.kind);
          row["default"] = option_text(defaults, option);
          row["doc"] = std::string(option.doc);
          row["words"] = option_words(option);
          rows.append(row);
        }
        return rows;
      },
      "Every option of the C++ Options, as dicts: name, python (its keyword), group, kind, "
      "default (as text), doc and words (a word option's values).");
}

}  // namespace stoke::python
