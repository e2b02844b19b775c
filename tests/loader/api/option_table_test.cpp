// The table of options (stoke/option_table.hpp): it describes every field of every group of
// Options, each option's text reads back as itself and sets only its own fields, and
// docs/USAGE.md's table of options is the one the table renders.
#include "stoke/option_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "stoke/error.hpp"
#include "stoke/names.hpp"

namespace stoke {
namespace {

// How many fields an aggregate has: the most initializers T{...} takes. Each AnyField converts to
// any field's type, so no brace elision splits a field, and an aggregate with bases (Options)
// counts each base as one.
struct AnyField {
  template <class T>
  operator T&() const&&;  // NOLINT(google-explicit-constructor): only ever unevaluated
};
template <class T, class... Fields>
constexpr int count_fields() {
  if constexpr (requires { T{Fields{}..., AnyField{}}; })
    return count_fields<T, Fields..., AnyField>();
  else
    return static_cast<int>(sizeof...(Fields));
}

// The number of Options fields the rows of `group` stand for ("height, width" is two).
int described_fields(OptionGroup group) {
  int n = 0;
  for (const OptionInfo& row : option_table())
    if (row.group == group)
      n += 1 + static_cast<int>(std::count(row.fields.begin(), row.fields.end(), ','));
  return n;
}

TEST(OptionsTable, DescribesEveryFieldOfEveryGroup) {
  // Options is its groups and nothing else: a field added to it directly would count here.
  EXPECT_EQ(count_fields<Options>(), 10);
  EXPECT_EQ(described_fields(OptionGroup::kSource), count_fields<SourceOptions>());
  EXPECT_EQ(described_fields(OptionGroup::kSources), count_fields<MixtureOptions>());
  EXPECT_EQ(described_fields(OptionGroup::kRemote), count_fields<RemoteOptions>());
  EXPECT_EQ(described_fields(OptionGroup::kFields), count_fields<FieldOptions>());
  EXPECT_EQ(described_fields(OptionGroup::kPlan), count_fields<PlanOptions>());
  EXPECT_EQ(described_fields(OptionGroup::kPool), count_fields<PoolOptions>());
  EXPECT_EQ(described_fields(OptionGroup::kOutput), count_fields<OutputOptions>());
  EXPECT_EQ(described_fields(OptionGroup::kMixing), count_fields<MixingOptions>());
  EXPECT_EQ(described_fields(OptionGroup::kLimits), count_fields<LimitOptions>());
  EXPECT_EQ(described_fields(OptionGroup::kLog), count_fields<LogOptions>());
  // And no field twice: the names (each the field's own, or "size" for height and width) and
  // the fields they stand for are unique.
  std::set<std::string_view> names, fields;
  for (const OptionInfo& row : option_table()) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_TRUE(fields.insert(row.fields).second) << row.fields;
  }
}

TEST(OptionsTable, NamesKeywordsAndFlagsAreUniqueAndFound) {
  std::set<std::string> seen;
  for (const OptionInfo& row : option_table()) {
    EXPECT_TRUE(seen.insert(std::string(row.python)).second) << row.python;
    EXPECT_TRUE(seen.insert(option_flag(row)).second) << option_flag(row);
    EXPECT_EQ(find_option(row.name), &row);
    EXPECT_EQ(find_option(row.python), &row);
    EXPECT_FALSE(row.doc.empty()) << row.name;
    EXPECT_EQ(row.doc.find('\n'), std::string_view::npos) << row.name << ": one line";
    EXPECT_EQ(row.words != nullptr, row.kind == OptionKind::kWord) << row.name;
    if (row.range) {
      EXPECT_LT(row.range->min, row.range->max) << row.name;
    }
  }
  EXPECT_EQ(find_option("no_such_option"), nullptr);
  EXPECT_EQ(option_flag(*find_option("stall_target")), "--stall-target");
  // Python's names from before the table, kept.
  EXPECT_EQ(find_option("std")->name, "stddev");
  EXPECT_EQ(find_option("state")->name, "resume");
}

// Only a pipeline (built in code, or from steps and channels by Python and --pipeline) and the
// log callback have no text form.
TEST(OptionsTable, EveryOptionButThePipelineAndTheLogHasATextForm) {
  std::vector<std::string_view> without;
  for (const OptionInfo& row : option_table())
    if (row.set == nullptr) without.push_back(row.name);
  EXPECT_EQ(without, (std::vector<std::string_view>{"pipeline", "log"}));
  Options o;
  EXPECT_THROW(set_option(o, *find_option("log"), ""), ConfigError);
}

// A text other than the default that the option takes, made from its kind alone, so that a new
// option is tested without a line here.
std::string another_value(const OptionInfo& row, const std::string& default_text) {
  switch (row.kind) {
    case OptionKind::kText:
    case OptionKind::kPath:
      return "sample-" + std::string(row.name);
    case OptionKind::kWord:
      for (const std::string& w : option_words(row))
        if (w != default_text) return w;
      return "";
    case OptionKind::kInt:
      return std::to_string(std::stoll(default_text) + 3);
    case OptionKind::kCount:
      return default_text == "auto" ? "3" : "auto";
    case OptionKind::kOptionalInt:
      return default_text == "5" ? "" : "5";
    case OptionKind::kBytes:
      return default_text == "3MiB" ? "0" : "3MiB";
    case OptionKind::kReal: {
      std::ostringstream s;
      s << std::stod(default_text) + 0.25;  // exact in float and double alike
      return s.str();
    }
    case OptionKind::kFlag:
      return default_text == "true" ? "false" : "true";
    case OptionKind::kDevices:
      return "cpu:3";
    case OptionKind::kSize:
      return "32x48";
    case OptionKind::kReals:
      return "0.25,0.5,2";
    case OptionKind::kState:
      return LoaderState{7, 2, 384, 3, 1000, 128, 1}.serialize();
    case OptionKind::kSources:
      return R"([{"data":"/data/a","weight":0.75},{"data":"/data/b","samples":40,)"
             R"("label_offset":"auto","split":"test"},{"data":"s3://b/{0..3}.tar","repeat":2.5,)"
             R"("label_offset":7}])";
    case OptionKind::kPipeline:
    case OptionKind::kCallback:
      break;
  }
  return "";
}

std::vector<std::string> texts_of(const Options& o) {
  std::vector<std::string> texts;
  for (const OptionInfo& row : option_table()) texts.push_back(option_text(o, row));
  return texts;
}

TEST(OptionsTable, EveryDefaultReadsBackAsItself) {
  const std::vector<std::string> defaults = texts_of(Options{});
  for (const OptionInfo& row : option_table()) {
    if (row.set == nullptr) continue;
    Options o;
    set_option(o, row, option_text(o, row));
    EXPECT_EQ(texts_of(o), defaults) << row.name;
  }
}

// Set through the table, read back from the struct: a value changes its option's text to itself
// and leaves every other option's as it was.
TEST(OptionsTable, EveryOptionRoundTripsAndSetsOnlyItsOwnFields) {
  const std::vector<std::string> defaults = texts_of(Options{});
  const auto rows = option_table();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].set == nullptr) continue;
    const std::string value = another_value(rows[i], defaults[i]);
    ASSERT_NE(value, defaults[i]) << rows[i].name;
    Options o;
    set_option(o, rows[i], value);
    std::vector<std::string> want = defaults;
    want[i] = value;
    EXPECT_EQ(texts_of(o), want) << rows[i].name << " = " << value;
  }
}

TEST(OptionsTable, SetsTheFieldsItNames) {
  Options o;
  const auto set = [&o](const char* name, const char* text) {
    set_option(o, *find_option(name), text);
  };
  set("workers", "auto");
  set("prefetch", "7");
  set("cache_limit", "1GiB");
  set("memory_budget", "3000");
  set("size", "32x48");
  set("std", "0.25,0.5");
  set("state", LoaderState{7, 2, 384, 3, 1000, 128, 1}.serialize().c_str());
  set("verify", "whole-file");
  set("min_box_visible", "0.1");
  set("stall_target", "0.1");
  set("seed", "18446744073709551615");
  set("devices", "cuda:1,0");
  set("shuffle", "false");
  EXPECT_EQ(o.workers, kAuto);
  EXPECT_EQ(o.prefetch, 7);
  EXPECT_EQ(o.cache_limit, std::uint64_t{1} << 30);
  EXPECT_EQ(o.memory_budget, 3000u);
  EXPECT_EQ(o.height, 32);
  EXPECT_EQ(o.width, 48);
  EXPECT_EQ(o.stddev, (std::vector<float>{0.25f, 0.5f}));
  ASSERT_TRUE(o.resume.has_value());
  EXPECT_EQ(*o.resume, (LoaderState{7, 2, 384, 3, 1000, 128, 1}));
  EXPECT_EQ(o.verify, Verify::kWholeFile);
  // A float field gets the double the text names, rounded once to float, as a double given in
  // code would be.
  EXPECT_EQ(o.min_box_visible, static_cast<float>(0.1));
  EXPECT_EQ(o.stall_target, 0.1);
  EXPECT_EQ(o.seed, std::uint64_t{18446744073709551615u});
  EXPECT_EQ(o.devices.ids, (std::vector<int>{1, 0}));
  EXPECT_FALSE(o.shuffle);
  set("rank", "3");
  EXPECT_EQ(o.rank, 3);
  set("rank", "");
  EXPECT_EQ(o.rank, -1);
  set("size", "");
  EXPECT_EQ(o.height, 0);
  EXPECT_EQ(o.width, 0);
}

template <class F>
std::string config_error(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(OptionsTable, RefusesTextThatIsNoValueNamingTheOption) {
  Options o;
  const auto error = [&o](const char* name, const char* text) {
    return config_error([&] { set_option(o, *find_option(name), text); });
  };
  EXPECT_EQ(error("batch", "12x"),
            "batch must be a whole number from -2147483648 to 2147483647, got '12x'");
  EXPECT_EQ(error("batch", "99999999999"),
            "batch must be a whole number from -2147483648 to 2147483647, got '99999999999'");
  EXPECT_EQ(error("seed", "-1"),
            "seed must be a whole number from 0 to 18446744073709551615, got '-1'");
  EXPECT_EQ(error("workers", "many"),
            "workers must be a whole number 0 or more, or auto, got 'many'");
  EXPECT_EQ(error("prefetch", "-2"),
            "prefetch must be a whole number 0 or more, or auto, got '-2'");
  EXPECT_EQ(error("cache_limit", "12 parsecs"),
            "cache_limit '12 parsecs' is not a size: give bytes or a size such as 16GiB or 500MB");
  EXPECT_EQ(error("stall_target", "fast"), "stall_target must be a number, got 'fast'");
  EXPECT_EQ(error("shuffle", "yes"), "shuffle must be true or false, got 'yes'");
  EXPECT_EQ(error("mean", "0.5,,0.5"), "mean must be numbers separated by commas, got '0.5,,0.5'");
  EXPECT_EQ(error("last_batch", "keep"), "last_batch must be pad or drop, got 'keep'");
  EXPECT_EQ(error("size", "224x"),
            "size must be HxW or N (N x N), each side 1..65535, e.g. 224x224 or 224; got '224x'");
  EXPECT_EQ(error("pipeline", "resize 32 32"), "pipeline has no text form: set it in code");
  // A refused text leaves the option as it was.
  EXPECT_EQ(o.batch, Options{}.batch);
  EXPECT_EQ(o.prefetch, Options{}.prefetch);
  EXPECT_EQ(o.cache_limit, Options{}.cache_limit);
  EXPECT_EQ(o.mean, Options{}.mean);
}

TEST(OptionsTable, DefaultsReadAsTheDocsAndPythonShowThem) {
  const Options o;
  const auto text = [&o](const char* name) { return option_text(o, *find_option(name)); };
  EXPECT_EQ(text("stall_target"), "0.02");
  EXPECT_EQ(text("cache_limit"), "16GiB");
  EXPECT_EQ(text("max_classes"), "16777216");
  EXPECT_EQ(text("devices"), "cpu:1");
  EXPECT_EQ(text("verify"), "region");
  EXPECT_EQ(text("rank"), "");
  EXPECT_EQ(text("size"), "");
  EXPECT_EQ(text("min_box_size"), "1");
  EXPECT_EQ(text("max_pixels"), "100000000");
}

// docs/USAGE.md's "All options" table, as the table renders it.
std::string markdown(const Options& defaults) {
  std::string out = "| option | group | takes | default | |\n|---|---|---|---|---|\n";
  for (const OptionInfo& row : option_table()) {
    std::string name = "`" + std::string(row.name) + "`";
    if (row.python != row.name) name += " (Python `" + std::string(row.python) + "`)";
    if (row.fields != row.name) name += " (C++ `" + std::string(row.fields) + "`)";
    std::string takes = option_kind_name(row.kind);
    if (row.kind == OptionKind::kWord) {
      takes.clear();
      for (const std::string& w : option_words(row)) {
        if (!takes.empty()) takes += ", ";
        takes += "`" + w + "`";
      }
    }
    const std::string value = option_text(defaults, row);
    const std::string shown = value.empty() ? "" : "`" + value + "`";
    std::string doc;  // a table cell: '|' ends it, '<' would start HTML
    for (char c : row.doc) {
      if (c == '|')
        doc += "\\|";
      else if (c == '<')
        doc += "&lt;";
      else
        doc += c;
    }
    out += "| " + name + " | " + option_group_name(row.group) + " | " + takes + " | " + shown +
           " | " + doc + " |\n";
  }
  return out;
}

TEST(OptionsTable, TheUsageGuidesTableIsTheTables) {
  const std::string path = std::string(STOKE_SOURCE_DIR) + "/docs/USAGE.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string begin = "<!-- options table: begin -->\n";
  const std::string end = "<!-- options table: end -->";
  const auto from = doc.find(begin);
  const auto to = doc.find(end);
  ASSERT_NE(from, std::string::npos) << path << " lacks " << begin;
  ASSERT_NE(to, std::string::npos) << path << " lacks " << end;
  const std::string want = markdown(Options{});
  const std::string have = doc.substr(from + begin.size(), to - from - begin.size());
  if (have != want && std::getenv("STOKE_UPDATE_DOCS") != nullptr) {
    doc.replace(from + begin.size(), have.size(), want);
    std::ofstream(path) << doc;
    return;
  }
  EXPECT_EQ(have, want) << "run this test with STOKE_UPDATE_DOCS=1 to rewrite " << path;
}

}  // namespace
}  // namespace stoke
