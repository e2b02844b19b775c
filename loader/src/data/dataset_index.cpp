#include "data/dataset_index.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/align.hpp"
#include "common/text.hpp"
#include "data/coco.hpp"
#include "data/folder_scan.hpp"
#include "data/parquet_dataset.hpp"
#include "data/shard_counts.hpp"
#include "data/shard_list.hpp"
#include "stoke/error.hpp"
#include "stoke/mnist.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;
namespace {

// Whether a file name's extension (std::filesystem's: from its last dot, unless that is its
// first character) is an image's. Allocates nothing (data/folder_scan.hpp calls it).
bool image_name(const char* name) {
  static constexpr const char* kKnown[] = {".jpg", ".jpeg", ".jpe",  ".png", ".bmp", ".dib",
                                           ".tif", ".tiff", ".webp", ".ppm", ".pgm", ".pbm",
                                           ".pnm", ".pxm",  ".sr",   ".ras", ".hdr", ".pic"};
  const char* dot = std::strrchr(name, '.');
  if (dot == nullptr || dot == name || std::strcmp(name, "..") == 0) return false;
  char ext[8] = {};
  const std::size_t n = std::strlen(dot);
  if (n >= sizeof ext) return false;
  for (std::size_t i = 0; i < n; ++i)
    ext[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(dot[i])));
  return std::any_of(std::begin(kKnown), std::end(kKnown),
                     [&](const char* k) { return std::strcmp(ext, k) == 0; });
}

DatasetIndex index_idx(const std::string& dir, Split split, int max_classes) {
  IdxImages idx = read_idx(dir, split);
  DatasetIndex index;
  index.kind = DatasetKind::kRaw;
  index.size = idx.count;
  index.height = idx.rows;
  index.width = idx.cols;
  index.channels = 1;
  index.pixels = std::move(idx.pixels);
  index.labels.assign(idx.labels.begin(), idx.labels.end());
  for (std::size_t i = 0; i < index.labels.size(); ++i) {
    if (index.labels[i] >= max_classes)
      throw label_over_bound(dir + " (" + (split == Split::kTrain ? "train" : "test") +
                                 " label of image " + std::to_string(i) + ")",
                             "label", static_cast<std::uint64_t>(index.labels[i]), max_classes);
  }
  return index;
}

// A COCO annotation file: one entry per image, in the file's order, with its boxes.
DatasetIndex index_coco(const std::string& json_path, const std::string& image_root,
                        OnError on_error) {
  std::error_code ec;
  if (!fs::is_regular_file(json_path, ec))
    throw ConfigError(json_path + ": No such file (a COCO annotation file was expected)");
  CocoDataset coco = read_coco(json_path, image_root, on_error);
  if (coco.images.empty()) throw ConfigError(json_path + ": the file lists no images");
  DatasetIndex index;
  index.kind = DatasetKind::kFiles;
  index.has_boxes = true;
  for (const CocoImage& img : coco.images) {
    FileEntry& e = index.add_file(img.path, -1);
    e.box_first = img.first_box;
    e.box_count = static_cast<std::uint32_t>(img.box_count);
    e.annotated_width = img.width;
    e.annotated_height = img.height;
  }
  index.boxes = std::move(coco.boxes);
  index.class_names = std::move(coco.class_names);
  index.size = static_cast<std::int64_t>(index.entries.size());
  if (coco.crowd > 0)
    index.box_notes.push_back(json_path + ": " + std::to_string(coco.crowd) +
                              " crowd annotation(s) (iscrowd 1) left out");
  for (std::string& d : coco.dropped) index.box_notes.push_back("left out " + std::move(d));
  return index;
}

}  // namespace

std::vector<fs::path> class_folders(const fs::path& root) {
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(root)) entries.push_back(entry.path().string());
  const std::vector<PathStat> stats = stat_paths(entries);  // (one round trip each: at once)
  std::vector<fs::path> classes;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (stats[i].error == ENOENT) continue;  // (gone, or a dangling link: not a folder)
    if (stats[i].error != 0)
      throw ConfigError(root.string() + ": cannot be indexed: " + entries[i] + ": " +
                        std::strerror(stats[i].error));
    if (S_ISDIR(stats[i].st.st_mode)) classes.emplace_back(entries[i]);
  }
  std::sort(classes.begin(), classes.end());
  return classes;
}

namespace {

DatasetIndex index_tree(const fs::path& root) {
  DatasetIndex index;
  index.kind = DatasetKind::kFiles;
  std::vector<fs::path> classes = class_folders(root);
  std::vector<std::string> folders;
  for (const fs::path& c : classes) folders.push_back(c.string());
  std::vector<ClassListing> listings = scan_class_folders(folders, image_name);
  for (std::size_t label = 0; label < classes.size(); ++label) {
    ClassListing& listing = listings[label];
    if (!listing.error.empty())
      throw ConfigError(root.string() + ": cannot be indexed: " + listing.error);
    index.class_names.push_back(classes[label].filename().string());
    const std::string base = fs::absolute(classes[label]).lexically_normal().string() + "/";
    for (std::size_t j = 0; j < listing.files.size(); ++j) {
      if (listing.empty[j])
        index.rejected.push_back({folders[label] + "/" + listing.files[j], BadInput::kEmpty});
      else
        index.add_file(base + listing.files[j], static_cast<std::int32_t>(label));
    }
    listing = ClassListing{};  // (in the index now)
  }
  index.size = static_cast<std::int64_t>(index.entries.size());
  if (index.size == 0)
    throw ConfigError(root.string() + ": no images found (expected " + root.string() +
                      "/<class>/<image>, or IDX files, or pass a list file)");
  return index;
}

DatasetIndex index_list(const fs::path& list, int max_classes) {
  std::ifstream in(list);
  if (!in) throw ConfigError(list.string() + ": " + std::strerror(errno));
  DatasetIndex index;
  index.kind = DatasetKind::kFiles;
  const fs::path base = fs::absolute(list).parent_path();
  const auto resolve = [&](const std::string& name) {  // relative to the list's folder
    fs::path p(name);
    if (p.is_relative()) p = base / p;
    return p.lexically_normal().string();
  };
  std::string line;
  int first_line = 0;  // the first sample's line, and whether it named a mask
  bool masks = false;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    // A third column, path<TAB>label<TAB>mask, names the sample's mask (a label map). Paths may
    // hold tabs, so it is a third column when the last one is not an integer.
    std::string mask;
    if (const auto last = line.rfind('\t'); last != std::string::npos && last > 0) {
      std::int32_t v = 0;
      const char* end = line.data() + line.size();
      const auto [p, e] = std::from_chars(line.data() + last + 1, end, v);
      if (!(e == std::errc() && p == end) && line.find('\t') < last) {
        mask = line.substr(last + 1);
        line.resize(last);
      }
    }
    if (first_line == 0) {
      first_line = line_no;
      masks = !mask.empty();
    } else if (masks != !mask.empty()) {
      throw ConfigError(list.string() + ":" + std::to_string(line_no) + ": " +
                        (masks ? "no mask column, but line " + std::to_string(first_line) +
                                     " has one (every line names a mask, or none)"
                               : "a mask column, but line " + std::to_string(first_line) +
                                     " has none (every line names a mask, or none)"));
    }
    const auto tab = line.rfind('\t');
    std::int32_t label = -1;
    const char* label_begin = line.data() + (tab == std::string::npos ? 0 : tab + 1);
    const char* label_end = line.data() + line.size();
    const auto [ptr, ec] = std::from_chars(label_begin, label_end, label);
    if (tab == std::string::npos || tab == 0 || ec != std::errc() || ptr != label_end || label < 0)
      throw ConfigError(list.string() + ":" + std::to_string(line_no) +
                        ": expected 'path<TAB>label' with a non-negative integer label, got '" +
                        line + "'");
    if (label >= max_classes)
      throw label_over_bound(list.string() + ":" + std::to_string(line_no), "label",
                             static_cast<std::uint64_t>(label), max_classes);
    FileEntry& e = index.add_file(resolve(line.substr(0, tab)), label);
    if (!mask.empty()) index.set_mask_file(e, resolve(mask));
  }
  index.size = static_cast<std::int64_t>(index.entries.size());
  index.has_masks = masks;
  if (index.size == 0) throw ConfigError(list.string() + ": the list names no files");
  return index;
}

}  // namespace

DataError label_over_bound(const std::string& where, const std::string& what, std::uint64_t value,
                           int max_classes) {
  return DataError(where + ": " + what + " " + std::to_string(value) +
                   " is not below max_classes " + std::to_string(max_classes) + " (labels are 0.." +
                   std::to_string(max_classes - 1) +
                   "; raise max_classes if the dataset has that many classes)");
}

namespace {

// Copies `value` into a NUL-terminated field of LazyShardOptions, or throws naming the option.
template <std::size_t N>
void set_field(char (&field)[N], const std::string& value, const char* option) {
  if (value.find('\0') != std::string::npos)
    throw ConfigError(std::string(option) + " holds a NUL byte");
  if (value.size() >= N)
    throw ConfigError(std::string(option) + " '" + value + "' is longer than a dataset-level " +
                      "index allows (" + std::to_string(N - 1) + " bytes)");
  std::memcpy(field, value.data(), value.size());
}

}  // namespace

LazyShardOptions lazy_shard_options(const IndexOptions& options) {
  LazyShardOptions o;
  set_field(o.label_field, options.label_field, "label_field");
  set_field(o.mask_field, options.mask_field, "mask_field");
  set_field(o.bytes_field, options.bytes_field, "bytes_field");
  set_field(o.box_field, options.box_field, "box_field");
  set_field(o.cache_root, options.caches.root, "the cache folder");
  o.on_error = static_cast<std::uint32_t>(options.on_error);
  o.max_classes = options.num_classes > 0 ? std::min(options.max_classes, options.num_classes)
                                          : options.max_classes;
  o.shard_copies = options.caches.shard_copies ? 1 : 0;
  return o;
}

namespace {

// A dataset-level index's shards: nothing is read from them now (data/shard_tables.hpp indexes
// each one when a sample of it is first read).
DatasetIndex index_counts(const ShardCounts& counts, const IndexOptions& options,
                          const std::string& path) {
  DatasetIndex index;
  index.kind = DatasetKind::kShards;
  index.lazy_options = lazy_shard_options(options);
  index.shard_starts.push_back(0);
  for (const ShardCount& c : counts.shards) {
    ShardRecord& r = index.shard_records.emplace_back();
    r.start = static_cast<std::uint64_t>(index.size);
    r.samples = c.samples;
    r.path_offset = index.paths.size();
    r.path_length = static_cast<std::uint32_t>(c.name.size());
    index.paths += c.name;
    index.size += static_cast<std::int64_t>(c.samples);
    index.shard_starts.push_back(index.size);
  }
  if (index.size == 0) throw ConfigError(path + ": its shards hold no samples");
  index.has_boxes = !options.box_field.empty();
  index.has_masks = !options.mask_field.empty();
  index.has_bytes = !options.bytes_field.empty();
  return index;
}

DatasetIndex index_path(const std::string& path, const IndexOptions& options) {
  // (Before shards: shard_list() would read a JSON file as a list of shard names.)
  if (lowercase(fs::path(path).extension().string()) == ".json") {
    if (is_url(path)) {
      if (const std::optional<ShardCounts> counts = fetch_shard_counts(path, options.remote))
        return index_counts(*counts, options, redact_url(path));
      throw ConfigError(redact_url(path) +
                        ": not a dataset-level index of shards (a wids index or a sizes.json); "
                        "a COCO annotation file is read from local disk");
    }
    if (const std::optional<ShardCounts> counts = read_shard_counts(path))
      return index_counts(*counts, options, path);
    return index_coco(path, options.image_root, options.on_error);
  }
  // (Before shards: a URL names a shard unless it names Parquet.)
  if (options.parquet_found != nullptr) return index_parquet(*options.parquet_found, options);
  if (const auto files = parquet_files(path, options.split, options.remote))
    return index_parquet(*files, options);
  if (const auto shards = shard_list(path))
    return index_shards(
        *shards, {options.label_field, options.mask_field, options.bytes_field, options.box_field},
        options.caches, options.remote, options.max_classes, options.remote_seen);
  const Split split = options.split;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    throw ConfigError(path +
                      ": No such file or directory (the data path must be an image "
                      "folder, a list file or a folder of IDX files)");
  if (fs::is_directory(status)) {
    if (is_idx_folder(path)) {
      try {
        return index_idx(path, split, options.max_classes);
      } catch (const ConfigError&) {
        throw;
      } catch (const DataError&) {
        throw;
      } catch (const Error& e) {
        throw ConfigError(e.what());
      }
    }
    return index_tree(path);
  }
  return index_list(path, options.max_classes);
}

}  // namespace

DatasetIndex build_index(const std::string& path, const IndexOptions& options) {
  if (path.empty())
    throw ConfigError(
        "no dataset given: set the data path (or sources, for a mixture of datasets)");
  try {
    return index_path(path, options);
  } catch (const fs::filesystem_error& e) {
    // A folder that cannot be walked (a symbolic link loop, a permission). As a ConfigError its
    // text, which holds the names as they are, is shown printable like every stoke error's.
    throw ConfigError(path + ": cannot be indexed: " + e.what());
  }
}

FileEntry& DatasetIndex::add_file(const std::string& path, std::int32_t label) {
  FileEntry& e = entries.emplace_back();
  e.path_offset = paths.size();
  e.path_length = static_cast<std::uint32_t>(path.size());
  e.label = label;
  paths += path;
  return e;
}

void DatasetIndex::set_mask_file(FileEntry& e, const std::string& path) {
  e.mask_kind = kMaskFile;
  e.mask_path_offset = paths.size();
  e.mask_path_length = static_cast<std::uint32_t>(path.size());
  paths += path;
}

void DatasetIndex::drop_shard_copies() {
  for (FileEntry& e : entries) e.copy_length = 0;  // (the copy's bytes stay unread in `paths`)
  for (RemoteShard& r : remote_shards) r.copy.clear();
}

}  // namespace stoke::detail
