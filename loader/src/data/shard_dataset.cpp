// Indexing a dataset of WebDataset tar shards, local or on HTTP/S3: each shard's member table
// from its sidecar (<shard>.idx) when one matches the shard's size (for a remote shard, first
// from the local index cache), else by walking its headers; then its samples, each an image
// member and a label.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/text.hpp"
#include "data/dataset_index.hpp"
#include "data/file_reader.hpp"
#include "data/shallow_json.hpp"
#include "data/shard_cache.hpp"
#include "data/shard_list.hpp"
#include "data/tar_index.hpp"
#include "remote/remote.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;
namespace {

// The extensions (lowercased) a sample's image member may have.
bool is_image_extension(const std::string& ext) {
  static constexpr const char* kKnown[] = {"jpg", "jpeg", "png", "webp", "ppm", "pgm",
                                           "pbm", "pnm",  "bmp", "tif",  "tiff"};
  return std::any_of(std::begin(kKnown), std::end(kKnown), [&](const char* k) { return ext == k; });
}

// The member table of a shard of `bytes` bytes: from its sidecar text when that describes this
// shard, else walked through read_at.
ShardIndex member_table(const std::string& name, std::uint64_t bytes,
                        const std::optional<std::string>& sidecar, const ReadAt& read_at,
                        std::vector<std::string>& notes) {
  if (sidecar) {
    if (auto index = parse_sidecar(*sidecar, bytes, name + ".idx")) return std::move(*index);
    notes.push_back(name + ".idx does not describe " + name +
                    " (another size or format): read the shard's headers instead");
  }
  return walk_tar(read_at, bytes);
}

// The most of a sidecar index read into memory (a larger one is not read: the headers are): every
// line stands for a member whose header alone takes 512 bytes of the shard, and escaping at most
// quadruples a byte, so a real sidecar is under four times its shard's size; never more than 256
// MiB.
std::size_t sidecar_cap(std::uint64_t shard_bytes) {
  constexpr std::uint64_t kMaxSidecarBytes = std::uint64_t{256} << 20;
  constexpr std::uint64_t kSlack = 64 << 10;
  if (shard_bytes > (kMaxSidecarBytes - kSlack) / 4) return kMaxSidecarBytes;
  return static_cast<std::size_t>(4 * shard_bytes + kSlack);
}

// The cache file of a remote shard's index, in the index cache's `folder`: keyed by URL, size and
// ETag, so a shard replaced on the server is indexed afresh. "" without an ETag (nothing to tell
// versions apart by).
std::string index_cache_path(const std::string& folder, const std::string& url,
                             const RemoteObject& object) {
  if (folder.empty() || object.etag.empty()) return "";
  return folder + "/" + version_key(url, object.size, object.etag) + ".idx";
}

// The index cache's folder under `root`, made and checked (data/shard_cache.hpp) the first time
// a remote shard is indexed: "" when it cannot be made (a cache that cannot be written is only
// slower). Throws ConfigError when it is another user's or others may write it.
std::string index_cache_folder(const std::string& root) {
  if (root.empty()) return "";
  const std::string folder = root + "/index";
  return prepare_cache_folder(root, false) && prepare_cache_folder(folder, true) ? folder : "";
}

// Where a sample's label comes from: "cls" (the .cls member's integer), "json:KEY" (an integer
// field of the .json member) or "none" (every label 0).
struct LabelField {
  enum Kind { kCls, kJson, kNone } kind = kCls;
  std::string key;
};

LabelField parse_label_field(const std::string& spec) {
  if (spec == "cls" || spec.empty()) return {};
  if (spec == "none") return {LabelField::kNone, ""};
  if (spec.starts_with("json:") && spec.size() > 5) return {LabelField::kJson, spec.substr(5)};
  throw ConfigError("label_field '" + spec +
                    "': expected cls (a .cls member), json:KEY (an integer field of the .json "
                    "member) or none");
}

// A label's text: a non-negative integer (any size: the caller bounds it).
std::optional<std::uint64_t> parse_label_text(const std::string& text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// A label member's object nests no deeper than this; a boxes member ({"boxes": [[x1, y1, x2,
// y2], ...]}) three levels.
constexpr int kMaxLabelJsonDepth = 16;
constexpr int kMaxBoxJsonDepth = 3;
// Box corners and a stated image size are pixels of an image stoke can decode.
constexpr double kMaxBoxCoordinate = 1 << 24;
constexpr std::int64_t kMaxAnnotatedSide = 1 << 24;

// A JSON value as a label or class: a non-negative integer (any size: the caller bounds it).
std::optional<std::uint64_t> json_label(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  return std::nullopt;
}

// A member's bytes through read_at, or std::nullopt when it is larger than `limit` bytes or
// cannot be read.
std::optional<std::string> member_bytes(const TarMember& member, const ReadAt& read_at,
                                        std::uint64_t limit) {
  if (member.size > limit) return std::nullopt;
  std::string text(static_cast<std::size_t>(member.size), '\0');
  if (read_at(member.offset, text.data(), text.size()) != text.size()) return std::nullopt;
  return text;
}

// The sample's label, or std::nullopt when it has none (or one that is not a non-negative
// integer). Throws DataError for one that is not below max_classes, naming its member.
std::optional<std::int32_t> sample_label(const LabelField& field, const ShardIndex& table,
                                         const ShardSample& sample, const ReadAt& read_at,
                                         const std::string& path, int max_classes) {
  if (field.kind == LabelField::kNone) return 0;
  const char* wanted = field.kind == LabelField::kCls ? "cls" : "json";
  for (std::size_t m : sample.members) {
    const TarMember& member = table.members[m];
    if (!same_extension(split_member_view(member.name).second, wanted)) continue;
    std::string text = member.value;
    if (text.empty() || field.kind == LabelField::kJson) {
      std::optional<std::string> read = member_bytes(member, read_at, std::uint64_t{1} << 20);
      if (!read) return std::nullopt;
      text = std::move(*read);
    }
    std::optional<std::uint64_t> label;
    if (field.kind == LabelField::kCls) {
      label = parse_label_text(trim(std::move(text)));
    } else {
      const nlohmann::json j = parse_shallow_json(text, kMaxLabelJsonDepth);
      if (j.is_discarded() || !j.is_object() || !j.contains(field.key)) return std::nullopt;
      label = json_label(j[field.key]);
    }
    if (!label) return std::nullopt;
    if (*label >= static_cast<std::uint64_t>(max_classes))
      throw label_over_bound(path + ":" + member.name,
                             field.kind == LabelField::kCls ? "label" : "\"" + field.key + "\"",
                             *label, max_classes);
    return static_cast<std::int32_t>(*label);
  }
  return std::nullopt;
}

// A boxes member's JSON as SampleBoxes (appended to `out`), with its optional image size; the
// reason it cannot be read otherwise. Throws DataError for a class not below max_classes
// (`where` names the member).
std::optional<std::string> parse_box_member(const std::string& text, std::vector<SampleBox>& out,
                                            FileEntry& e, const std::string& where,
                                            int max_classes) {
  const nlohmann::json j = parse_shallow_json(text, kMaxBoxJsonDepth);
  if (j.is_discarded() || !j.is_object())
    return "not a JSON object (of at most " + std::to_string(kMaxBoxJsonDepth) +
           " levels of nesting)";
  const auto boxes = j.find("boxes");
  const auto classes = j.find("classes");
  if (boxes == j.end() || !boxes->is_array()) return "no \"boxes\" array";
  if (classes == j.end() || !classes->is_array() || classes->size() != boxes->size())
    return "no \"classes\" array as long as \"boxes\"";
  const std::size_t first = out.size();
  for (std::size_t i = 0; i < boxes->size(); ++i) {
    const nlohmann::json& b = (*boxes)[i];
    const nlohmann::json& c = (*classes)[i];
    if (!b.is_array() || b.size() != 4 ||
        !std::all_of(b.begin(), b.end(), [](const nlohmann::json& v) { return v.is_number(); }))
      return "boxes[" + std::to_string(i) + "]: expected 4 numbers [x1, y1, x2, y2]";
    const std::optional<std::uint64_t> label = json_label(c);
    if (!label) return "classes[" + std::to_string(i) + "]: expected a non-negative integer";
    if (*label >= static_cast<std::uint64_t>(max_classes))
      throw label_over_bound(where, "classes[" + std::to_string(i) + "]", *label, max_classes);
    float xy[4];
    for (int k = 0; k < 4; ++k) {
      const double v = b[k].get<double>();
      // A corner past float's range would be an infinite box after the cast.
      if (!(std::abs(v) <= kMaxBoxCoordinate))
        return "boxes[" + std::to_string(i) + "]: a coordinate beyond +-" +
               std::to_string(static_cast<long long>(kMaxBoxCoordinate)) + " pixels";
      xy[k] = static_cast<float>(v);
    }
    const SampleBox box{xy[0], xy[1], xy[2], xy[3], static_cast<std::int32_t>(*label)};
    if (!(box.x2 > box.x1 && box.y2 > box.y1))
      return "boxes[" + std::to_string(i) + "]: an empty box (x2 <= x1 or y2 <= y1)";
    out.push_back(box);
  }
  e.box_first = first;
  e.box_count = static_cast<std::uint32_t>(out.size() - first);
  const auto w = j.find("width"), h = j.find("height");
  if (w != j.end() && h != j.end() && w->is_number_integer() && h->is_number_integer()) {
    const std::int64_t width = w->get<std::int64_t>(), height = h->get<std::int64_t>();
    if (width < 1 || height < 1 || width > kMaxAnnotatedSide || height > kMaxAnnotatedSide)
      return "width and height: expected 1.." + std::to_string(kMaxAnnotatedSide) + ", got " +
             std::to_string(width) + " x " + std::to_string(height);
    e.annotated_width = static_cast<int>(width);
    e.annotated_height = static_cast<int>(height);
  }
  return std::nullopt;
}

// One shard, local or remote, as indexing reads it.
struct OpenShard {
  std::string path;   // as the workers open it: the URL, or the absolute path
  std::string shown;  // the name in messages: a URL without its user:password or signature
  std::string copy;   // a remote shard's local copy; "" when it can have none
  ShardIndex table;
  ReadAt read_at;
  std::optional<LocalFile> file;  // a local shard, open while it is indexed
};

// A sample's members that its fields come from (null: it has none).
struct SampleMembers {
  const TarMember* image = nullptr;
  const TarMember* mask = nullptr;
  const TarMember* bytes = nullptr;
  const TarMember* boxes = nullptr;
};

// Indexes shards one at a time into an index of its own: each step of it is a method.
class ShardIndexer {
 public:
  ShardIndexer(const ShardFields& fields, const IndexCaches& caches, const RemotePolicy& policy,
               int max_classes, const std::map<std::string, RemoteObject>* seen)
      : label_spec_(fields.label),
        field_(parse_label_field(fields.label)),
        mask_ext_(lowercase(fields.mask)),
        bytes_ext_(lowercase(fields.bytes)),
        boxes_ext_(lowercase(fields.boxes)),
        caches_(caches),
        policy_(policy),
        max_classes_(max_classes),
        seen_(seen) {
    index_.kind = DatasetKind::kFiles;
  }

  // The shard's member table, then each of its samples: an entry, or a rejected file.
  void add_shard(const std::string& name) {
    OpenShard shard;
    if (is_url(name))
      open_remote(name, shard);
    else
      open_local(name, shard);
    if (!shard.table.damage.empty())
      index_.rejected.push_back(
          {shard.shown + " (" + shard.table.damage + ")", BadInput::kCorrupt});
    index_.shard_starts.push_back(static_cast<std::int64_t>(index_.entries.size()));
    const std::uint64_t path_offset = index_.paths.size();
    index_.paths += shard.path;
    index_.paths += shard.copy;
    for (const ShardSample& sample : group_samples(shard.table))
      add_sample(shard, path_offset, sample);
  }

  // The index of every shard added. Throws ConfigError when they hold no sample.
  DatasetIndex finish(const std::vector<std::string>& shards) && {
    index_.shard_starts.push_back(static_cast<std::int64_t>(index_.entries.size()));
    index_.size = static_cast<std::int64_t>(index_.entries.size());
    index_.has_masks = !mask_ext_.empty();
    index_.has_bytes = !bytes_ext_.empty();
    index_.has_boxes = !boxes_ext_.empty();
    if (index_.size == 0)
      throw ConfigError("the " + std::to_string(shards.size()) + " shard(s) starting with " +
                        shards.front() + " hold no samples with an image and a label");
    return std::move(index_);
  }

 private:
  // A shard on HTTP or S3: its size and version from the server, its copy's name (when copies
  // are asked for and the server names versions), its member table through the index cache.
  void open_remote(const std::string& url, OpenShard& out) {
    out.path = url;
    out.shown = redact_url(url);
    const RemoteObject object = stat_once(url);
    out.read_at = [url, policy = policy_](std::uint64_t offset, void* dst, std::size_t n) {
      return remote_read(url, offset, dst, n, policy);
    };
    if (!index_folder_) index_folder_ = index_cache_folder(caches_.root);
    if (caches_.shard_copies && !caches_.root.empty() && !object.etag.empty())
      out.copy = shard_copy_path(caches_.root, url, object.size, object.etag);
    index_.remote_shards.push_back({index_.shard_starts.size(), url, object.size, out.copy});
    out.table = remote_member_table(url, out.shown, object, out.read_at);
  }

  // The shard's HEAD answer: the one the caller already had, else asked now.
  RemoteObject stat_once(const std::string& url) const {
    if (seen_ != nullptr)
      if (const auto known = seen_->find(url); known != seen_->end()) return known->second;
    return remote_stat(url, policy_);
  }

  // From the index cache when it has this version of the shard, else from its sidecar or its
  // headers (and then written to the cache, unless the shard is damaged).
  ShardIndex remote_member_table(const std::string& url, const std::string& shown,
                                 const RemoteObject& object, const ReadAt& read_at) {
    const std::string cached = index_cache_path(*index_folder_, url, object);
    const std::optional<std::string> entry =
        cached.empty() ? std::nullopt : read_cache_file(cached, kMaxFileBytes);
    if (std::optional<ShardIndex> hit =
            entry ? parse_sidecar(*entry, object.size, cached) : std::nullopt)
      return std::move(*hit);
    std::optional<std::string> sidecar;
    std::string text;
    if (remote_get_if_exists(url + ".idx", text, sidecar_cap(object.size), policy_))
      sidecar = std::move(text);
    ShardIndex table = member_table(shown, object.size, sidecar, read_at, index_.shard_notes);
    if (!cached.empty() && table.damage.empty())
      write_cache_file(cached, format_sidecar(table));  // only what the cache lacked
    return table;
  }

  // A local shard: its member table from its sidecar or its headers.
  void open_local(const std::string& name, OpenShard& out) {
    out.path = fs::absolute(name).lexically_normal().string();
    out.shown = out.path;
    out.file.emplace(out.path, "a shard must be a tar file");
    out.read_at = [&f = *out.file](std::uint64_t offset, void* dst, std::size_t n) {
      return f.read_at(offset, dst, n);
    };
    out.table = member_table(out.path, out.file->size(),
                             read_text_file(out.path + ".idx", sidecar_cap(out.file->size())),
                             out.read_at, index_.shard_notes);
  }

  // The sample's image (its first member with an image extension), mask, bytes and boxes.
  SampleMembers find_members(const ShardIndex& table, const ShardSample& sample) const {
    SampleMembers m;
    for (std::size_t k : sample.members) {
      const TarMember* member = &table.members[k];
      const std::string ext = lowercase(std::string(split_member_view(member->name).second));
      if (!boxes_ext_.empty() && ext == boxes_ext_) m.boxes = member;
      if (!mask_ext_.empty() && ext == mask_ext_)
        m.mask = member;
      else if (!bytes_ext_.empty() && ext == bytes_ext_)
        m.bytes = member;
      else if (m.image == nullptr && is_image_extension(ext))
        m.image = member;
    }
    return m;
  }

  // Why the sample is left out for its members alone (one missing, empty or too large), or
  // nullopt.
  std::optional<RejectedFile> member_problem(const std::string& shown, const ShardSample& sample,
                                             const SampleMembers& m) const {
    if (m.image != nullptr && !mask_ext_.empty() && m.mask == nullptr)
      return RejectedFile{shown + ":" + sample.key + " (no ." + mask_ext_ + " mask)",
                          BadInput::kMissing};
    if (m.image != nullptr && !bytes_ext_.empty() && m.bytes == nullptr)
      return RejectedFile{shown + ":" + sample.key + " (no ." + bytes_ext_ + " member)",
                          BadInput::kMissing};
    if (m.bytes != nullptr && m.bytes->size > kMaxSampleBytes)
      return RejectedFile{
          shown + ":" + m.bytes->name + " (over " + std::to_string(kMaxSampleBytes) + " bytes)",
          BadInput::kTooLarge};
    if (m.mask != nullptr && m.mask->size == 0)
      return RejectedFile{shown + ":" + m.mask->name, BadInput::kEmpty};
    if (m.image == nullptr)
      return RejectedFile{shown + ":" + sample.key + " (no image member)", BadInput::kMissing};
    if (m.image->size == 0) return RejectedFile{shown + ":" + m.image->name, BadInput::kEmpty};
    return std::nullopt;
  }

  // The sample's entry (with its label, boxes, mask and bytes), or the reason it is left out.
  void add_sample(const OpenShard& shard, std::uint64_t path_offset, const ShardSample& sample) {
    const SampleMembers m = find_members(shard.table, sample);
    if (std::optional<RejectedFile> problem = member_problem(shard.shown, sample, m)) {
      index_.rejected.push_back(std::move(*problem));
      return;
    }
    const std::optional<std::int32_t> label =
        sample_label(field_, shard.table, sample, shard.read_at, shard.path, max_classes_);
    if (!label) {
      index_.rejected.push_back(
          {shard.shown + ":" + sample.key + " (no " + label_spec_ + " label)", BadInput::kNoLabel});
      return;
    }
    FileEntry e;
    e.path_offset = path_offset;
    e.path_length = static_cast<std::uint32_t>(shard.path.size());
    e.copy_length = static_cast<std::uint32_t>(shard.copy.size());
    e.label = *label;
    e.offset = m.image->offset;
    e.size = m.image->size;
    if (m.bytes != nullptr) {
      e.bytes_offset = m.bytes->offset;
      e.bytes_size = static_cast<std::uint32_t>(m.bytes->size);
    }
    if (!boxes_ext_.empty() && !add_boxes(shard, sample, m.boxes, e)) return;
    if (m.mask != nullptr) {
      e.mask_kind = kMaskMember;
      e.mask_offset = m.mask->offset;
      e.mask_size = m.mask->size;
    }
    index_.entries.push_back(e);
  }

  // The sample's boxes from its boxes member, into the index and `e`; false (the sample left
  // out, nothing of it kept) when it has none or they cannot be read.
  bool add_boxes(const OpenShard& shard, const ShardSample& sample, const TarMember* boxes,
                 FileEntry& e) {
    const std::size_t before = index_.boxes.size();
    std::optional<std::string> bad = "no ." + boxes_ext_ + " member";
    if (boxes != nullptr) {
      const std::optional<std::string> text =
          member_bytes(*boxes, shard.read_at, std::uint64_t{16} << 20);
      bad = text ? parse_box_member(*text, index_.boxes, e, shard.path + ":" + boxes->name,
                                    max_classes_)
                 : std::optional<std::string>("cannot be read, or over 16 MiB");
    }
    if (!bad) return true;
    index_.rejected.push_back({shard.shown + ":" + sample.key + " (boxes: " + *bad + ")",
                               boxes == nullptr ? BadInput::kMissing : BadInput::kUndecodable});
    index_.boxes.resize(before);
    return false;
  }

  const std::string label_spec_;
  const LabelField field_;
  const std::string mask_ext_;  // the members' extensions, lowercased ("": none)
  const std::string bytes_ext_;
  const std::string boxes_ext_;
  const IndexCaches& caches_;
  const RemotePolicy& policy_;
  const int max_classes_;
  const std::map<std::string, RemoteObject>* seen_;
  std::optional<std::string> index_folder_;  // made when the first remote shard is indexed
  DatasetIndex index_;
};

}  // namespace

DatasetIndex index_shards(const std::vector<std::string>& shards, const ShardFields& fields,
                          const IndexCaches& caches, const RemotePolicy& policy, int max_classes,
                          const std::map<std::string, RemoteObject>* seen) {
  ShardIndexer indexer(fields, caches, policy, max_classes, seen);
  for (const std::string& name : shards) indexer.add_shard(name);
  return std::move(indexer).finish(shards);
}

}  // namespace stoke::detail
