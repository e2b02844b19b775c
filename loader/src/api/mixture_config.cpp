// resolve_mixture(): a mixture's sources, each resolved as a loader of it alone, combined.

#include <algorithm>
#include <string>

#include "api/config.hpp"
#include "common/text.hpp"
#include "ipc/arena_layout.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

// "source 1 (/data/coco.json)", as errors name a source.
std::string source_name(const std::vector<MixtureSource>& sources, std::size_t s) {
  return "source " + std::to_string(s) + " (" + redact_url(sources[s].data) + ")";
}

// The sources that have and have not `field`, when they disagree: a ConfigError naming them.
void fields_agree(const std::vector<MixtureSource>& sources, const std::vector<bool>& has,
                  const char* field) {
  if (std::all_of(has.begin(), has.end(), [&](bool h) { return h == has.front(); })) return;
  std::string with, without;
  for (std::size_t s = 0; s < has.size(); ++s) {
    std::string& list = has[s] ? with : without;
    list += (list.empty() ? "" : ", ") + source_name(sources, s);
  }
  throw ConfigError(
      std::string("a mixture's sources must all carry ") + field + " or none: " + with + " carr" +
      (with.find(", ") == std::string::npos ? "ies" : "y") + " them, " + without + " not");
}

// Each source's label offset: its own, or (kAutoLabelOffset) after the classes of the sources
// before it.
std::vector<std::int32_t> label_offsets(const std::vector<MixtureSource>& sources,
                                        const std::vector<std::vector<std::string>>& names) {
  std::vector<std::int32_t> out;
  LabelOffsets offsets;
  for (std::size_t s = 0; s < sources.size(); ++s) {
    const std::int64_t offset = offsets.of(sources[s]);
    if (sources[s].label_offset == kAutoLabelOffset && s > 0) {
      for (std::size_t t = 0; t < s; ++t) {
        if (names[t].empty())
          throw ConfigError(source_name(sources, s) +
                            ": label_offset auto counts the classes of the sources before it, "
                            "but " +
                            source_name(sources, t) +
                            " names none (an image folder, COCO or Parquet with a ClassLabel "
                            "feature names them); give label_offset as a number");
      }
    }
    out.push_back(static_cast<std::int32_t>(offset));
    offsets.add(offset, names[s].size());
  }
  return out;
}

// The loader's class names: each source's at its offset, when they do not contradict each other
// (else none: the user maps the labels).
std::vector<std::string> class_names(const std::vector<std::vector<std::string>>& names,
                                     const std::vector<std::int32_t>& offsets) {
  std::vector<std::string> out;
  for (std::size_t s = 0; s < names.size(); ++s) {
    for (std::size_t i = 0; i < names[s].size(); ++i) {
      const std::size_t at = static_cast<std::size_t>(offsets[s]) + i;
      if (out.size() <= at) out.resize(at + 1);
      if (!out[at].empty() && out[at] != names[s][i]) return {};
      out[at] = names[s][i];
    }
  }
  if (std::any_of(out.begin(), out.end(), [](const std::string& n) { return n.empty(); }))
    return {};
  return out;
}

// A mixture's resume: each source's samples of the saved epoch consumed.
void resolve_mixture_resume(ResolvedConfig& r, MixtureConfig& m) {
  if (!r.options.resume) return;
  const LoaderState& s = *r.options.resume;
  const auto refuse = [&s](const std::string& why) {
    return ConfigError("cannot resume from '" + s.serialize() + "': " + why);
  };
  if (s.dataset_size != r.plan.samples || s.seed != r.options.seed)
    throw refuse("it was saved with another dataset size or seed (now dataset_size=" +
                 std::to_string(r.plan.samples) + " seed=" + std::to_string(r.options.seed) +
                 ": the sources' samples in all)");
  if (s.sources.size() != m.sources.size())
    throw refuse(s.sources.empty()
                     ? "it was saved by a loader of one dataset; this one mixes " +
                           std::to_string(m.sources.size()) + " sources"
                     : "it was saved by a mixture of " + std::to_string(s.sources.size()) +
                           " sources; this one mixes " + std::to_string(m.sources.size()));
  if (s.epoch < 0 || s.epoch > kMaxEpoch)
    throw refuse("epoch must be in 0.." + std::to_string(kMaxEpoch));
  if (s.global_batch <= 0) throw refuse("global_batch must be positive");
  if (s.repeats != m.repeats)
    throw refuse("it was saved with repeats " + std::to_string(s.repeats) + " (now " +
                 std::to_string(m.repeats) +
                 "): its counts are of another stream; resume with the same repeats");
  m.resume_epoch = s.epoch;
  m.resume_consumed = s.sources;
  validate_mixture(m);  // each source's consumed count within its budget
  r.start_epoch = s.epoch;
  r.start_batch = MixturePlan(m).resume_first();
}

}  // namespace

void check_mixture_options(const Options& o) {
  if (o.sources.size() > kMaxDatasets)
    throw ConfigError("a mixture reads at most " + std::to_string(kMaxDatasets) + " sources, got " +
                      std::to_string(o.sources.size()));
  // The loader's own source options would be ignored: each source has its own.
  const SourceOptions defaults;
  const struct {
    const char* name;
    bool set;
  } own[] = {{"split", o.split != defaults.split},
             {"label_field", o.label_field != defaults.label_field},
             {"image_root", o.image_root != defaults.image_root},
             {"image_column", o.image_column != defaults.image_column},
             {"label_column", o.label_column != defaults.label_column}};
  for (const auto& f : own) {
    if (f.set)
      throw ConfigError(std::string(f.name) +
                        " is each source's own in a mixture: set it on the sources that need it "
                        "(sources[i]." +
                        f.name + "), not on the loader");
  }
  for (std::size_t s = 0; s < o.sources.size(); ++s) {
    const int offset = o.sources[s].label_offset;
    if (offset != kAutoLabelOffset && (offset < 0 || offset > kDefaultMaxClasses))
      throw ConfigError(source_name(o.sources, s) + ": label_offset must be kAutoLabelOffset or " +
                        "0.." + std::to_string(kDefaultMaxClasses) + ", got " +
                        std::to_string(offset));
  }
}

ResolvedConfig resolve_mixture(Options o,
                               const std::vector<std::shared_ptr<const MappedIndex>>& indexes,
                               RemoteConfig remote) {
  check_mixture_options(o);
  const std::vector<MixtureSource> sources = o.sources;
  std::vector<std::vector<std::string>> names;
  for (const auto& index : indexes) names.push_back(index->info().class_names);
  const std::vector<std::int32_t> offsets = label_offsets(sources, names);
  std::vector<ResolvedConfig> each;
  for (std::size_t s = 0; s < sources.size(); ++s) {
    Options one = o;
    static_cast<SourceOptions&>(one) = sources[s];
    one.sources.clear();
    one.epoch_samples = 0;
    one.resume.reset();
    // Its labels against num_classes after its offset (soft labels and mixing are checked with
    // them).
    std::string offset_note;
    if (o.num_classes > 0) {
      one.num_classes = o.num_classes - offsets[s];
      if (one.num_classes <= 0)
        throw ConfigError(source_name(sources, s) + ": its label_offset " +
                          std::to_string(offsets[s]) + " is not below num_classes " +
                          std::to_string(o.num_classes));
      offset_note = " (label_offset " + std::to_string(offsets[s]) + ")";
    }
    one.repeats = 1;  // (the mixture repeats its sources' streams: MixtureConfig::repeats)
    // A source smaller than a global batch is no error in a mixture: the mixture's epoch is
    // checked as a whole (validate_mixture).
    one.last_batch = LastBatch::kPad;
    try {
      each.push_back(resolve(std::move(one), *indexes[s], remote));
    } catch (const ConfigError& e) {
      throw ConfigError(source_name(sources, s) + offset_note + ": " + e.what());
    }
  }
  // One pipeline, one slot layout for every source.
  for (std::size_t s = 1; s < sources.size(); ++s) {
    const Pipeline& a = each[0].pipeline;
    const Pipeline& b = each[s].pipeline;
    if (a.describe() != b.describe())
      throw ConfigError(
          "a mixture's sources share one pipeline, but " + source_name(sources, 0) + " gets " +
          std::to_string(a.output_height()) + "x" + std::to_string(a.output_width()) + "x" +
          std::to_string(a.output_channels()) + " from it and " + source_name(sources, s) + " " +
          std::to_string(b.output_height()) + "x" + std::to_string(b.output_width()) + "x" +
          std::to_string(b.output_channels()) +
          " (a pipeline per source is not supported yet: give the loader an explicit pipeline "
          "whose output every source reaches, or mix sources of one kind)");
  }
  std::vector<bool> boxes, masks, bytes;
  for (const auto& index : indexes) {
    boxes.push_back(index->info().has_boxes);
    masks.push_back(index->info().has_masks);
    bytes.push_back(index->info().has_bytes);
  }
  fields_agree(sources, boxes, "boxes");
  fields_agree(sources, masks, "masks");
  fields_agree(sources, bytes, "bytes");

  std::vector<std::vector<std::int64_t>> shard_starts;  // (each[0] is moved from below)
  std::string order_folder;  // where shared orders live, if any source's order is an array
  for (const ResolvedConfig& one : each) {
    shard_starts.push_back(one.plan.shard_starts);
    if (order_folder.empty()) order_folder = one.plan.order_folder;
  }
  ResolvedConfig r = std::move(each[0]);
  o.devices = r.options.devices;  // as resolved
  r.options = std::move(o);
  r.plan.last_batch = r.options.last_batch;  // (each source was resolved padded)
  r.plan.repeats = r.options.repeats;        // (and without repeats)
  r.label_offsets = offsets;
  r.class_names = class_names(names, r.label_offsets);
  for (std::size_t s = 0; s < sources.size(); ++s) {
    r.source_data.push_back(sources[s].data);
    if (s == 0) continue;
    r.max_boxes = std::max(r.max_boxes, each[s].max_boxes);
    r.max_bytes = std::max(r.max_bytes, each[s].max_bytes);
    r.over_max_boxes += each[s].over_max_boxes;
    r.over_max_bytes += each[s].over_max_bytes;
  }
  // The plan.
  std::vector<BudgetRule> rules;
  std::int64_t total = 0;
  for (std::size_t s = 0; s < sources.size(); ++s) {
    const std::int64_t n = indexes[s]->info().size;
    rules.push_back({n, sources[s].weight, sources[s].samples, sources[s].repeat});
    total += n;
  }
  std::vector<std::int64_t> budgets;
  try {
    budgets = mixture_budgets(rules, r.options.epoch_samples);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("sources: ") + e.what());
  }
  MixtureConfig m;
  std::int64_t first = 0;
  for (std::size_t s = 0; s < sources.size(); ++s) {
    const std::int64_t n = indexes[s]->info().size;
    m.sources.push_back({first, n, budgets[s], shard_starts[s], r.plan.shuffle_window});
    first += n;
  }
  m.batch = r.plan.batch;
  m.devices = r.plan.devices;
  m.rank = r.plan.rank;
  m.world = r.plan.world;
  m.seed = r.plan.seed;
  m.shuffle = r.plan.shuffle;
  m.last_batch = r.plan.last_batch;
  m.repeats = r.options.repeats;
  m.permuted_from = r.plan.permuted_from;
  m.order_folder = order_folder;
  validate_mixture(m);
  r.plan.samples = total;
  r.plan.shard_starts.clear();
  r.batches_per_epoch = MixturePlan(m).batches_per_epoch();
  r.start_epoch = r.start_batch = 0;
  resolve_mixture_resume(r, m);
  r.mixture = std::move(m);
  return r;
}

}  // namespace stoke::detail
