#include "data/parquet_dataset.hpp"

#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <unordered_map>

#include "common/align.hpp"
#include "common/text.hpp"
#include "data/file_reader.hpp"
#include "data/hf_hub.hpp"
#include "data/shard_cache.hpp"
#include "data/shard_list.hpp"
#include "remote/remote.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;

namespace {

bool names_parquet(const std::string& name) {
  // (A URL's query, if any, is not part of its name.)
  const std::string path = is_url(name) ? name.substr(0, name.find('?')) : name;
  return lowercase(fs::path(path).extension().string()) == ".parquet";
}

bool has_glob(const std::string& name) {
  return !is_url(name) && name.find_first_of("*?[") != std::string::npos;
}

// The files a glob matches, sorted (glob(3) sorts them).
std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t g{};
  const int r = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> out;
  if (r == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      if (out.size() >= kMaxShards) {
        ::globfree(&g);
        throw ConfigError(pattern + ": matches more than " + std::to_string(kMaxShards) +
                          " files");
      }
      out.emplace_back(g.gl_pathv[i]);
    }
  }
  ::globfree(&g);
  if (out.empty()) throw ConfigError(pattern + ": no file matches");
  return out;
}

// The names that say a split, in a file's name or as a folder's.
constexpr const char* kSplits[] = {"train", "test", "validation", "valid", "val", "dev"};

// The split a file of a dataset folder belongs to by its name or folders ("train", "test",
// "validation", ...), or "".
std::string split_of(const fs::path& relative) {
  const std::string name = lowercase(relative.filename().string());
  for (const char* s : kSplits) {
    const std::size_t n = std::strlen(s);
    if (name.compare(0, n, s) == 0 && name.size() > n &&
        (name[n] == '-' || name[n] == '_' || name[n] == '.'))
      return s;
  }
  for (const fs::path& part : relative.parent_path()) {
    const std::string folder = lowercase(part.string());
    for (const char* s : kSplits)
      if (folder == s) return s;
  }
  return {};
}

// Of `files` (sorted) under `root`, those of `split` when any of them says a split by its name
// or folder, else all. Throws ConfigError naming `where` when they say other splits only.
std::vector<std::string> of_split(const std::vector<std::string>& files, const std::string& root,
                                  Split split, const std::string& where) {
  const std::string wanted = split == Split::kTrain ? "train" : "test";
  std::vector<std::string> kept;
  std::set<std::string> splits;
  for (const std::string& f : files) {
    const std::string s = split_of(fs::path(f).lexically_relative(root.empty() ? "." : root));
    if (!s.empty()) splits.insert(s);
    if (s == wanted) kept.push_back(f);
  }
  if (splits.empty()) return files;  // no file says a split: they are one
  if (kept.empty()) {
    std::string have;
    for (const std::string& s : splits) have += (have.empty() ? "" : ", ") + s;
    throw ConfigError(where + ": its Parquet files are of the splits " + have + ", none of " +
                      wanted + "; set split (train or test) or name the files");
  }
  return kept;
}

// Whether `folder` holds a .parquet file within `depth` levels (0: in it alone).
bool holds_parquet(const fs::path& folder, int depth) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
    if (names_parquet(e.path().string()) && e.is_regular_file(ec)) return true;
    if (depth > 0 && e.is_directory(ec) && holds_parquet(e.path(), depth - 1)) return true;
  }
  return false;
}

// Whether `root` is a folder of Parquet files: one in it, or under the folders a Hugging Face
// dataset keeps them in (data/, a split's folder, default/ of the Parquet conversion). An image
// folder's class folders are never walked for this: a tree of a million images costs one listing
// of its top folder.
bool parquet_folder(const fs::path& root) {
  if (holds_parquet(root, 0)) return true;
  std::error_code ec;
  const auto under = [&](const char* name) {
    return fs::is_directory(root / name, ec) && holds_parquet(root / name, 3);
  };
  return under("data") || under("default") ||
         std::any_of(std::begin(kSplits), std::end(kSplits), under);
}

std::optional<std::vector<std::string>> folder_files(const std::string& root, Split split) {
  if (!parquet_folder(root)) return std::nullopt;
  std::vector<std::string> all;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied,
                                           ec),
       end;
       it != end; it.increment(ec)) {
    if (ec) break;
    if (!names_parquet(it->path().string()) || !it->is_regular_file(ec)) continue;
    if (all.size() >= kMaxShards)
      throw ConfigError(root + ": holds more than " + std::to_string(kMaxShards) +
                        " Parquet files");
    all.push_back(it->path().string());
  }
  if (all.empty()) return std::nullopt;
  std::sort(all.begin(), all.end());
  return of_split(all, root, split, root);
}

// The files of a Hugging Face Hub path: one file, or those a glob matches, or a folder's (at any
// depth) of `split`; as download URLs.
std::vector<std::string> hub_files(const std::string& name, Split split,
                                   const RemotePolicy& policy) {
  const HubPath at = parse_hub_path(name);
  const std::string& pattern = at.path;
  const std::size_t glob = pattern.find_first_of("*?[");
  if (glob == std::string::npos && names_parquet(pattern)) return {hub_file_url(at, pattern)};
  std::string folder = glob == std::string::npos ? pattern : pattern.substr(0, glob);
  if (glob != std::string::npos) folder = folder.substr(0, folder.rfind('/') + 1);
  while (!folder.empty() && folder.back() == '/') folder.pop_back();
  std::vector<std::string> paths;
  for (std::string& p : hub_listing(at, folder, policy)) {
    if (!names_parquet(p)) continue;
    if (glob != std::string::npos ? ::fnmatch(pattern.c_str(), p.c_str(), FNM_PATHNAME) != 0
                                  : !(folder.empty() || p.starts_with(folder + "/")))
      continue;
    paths.push_back(std::move(p));
  }
  if (paths.empty()) throw ConfigError(name + ": names no Parquet file on the Hub");
  std::sort(paths.begin(), paths.end());
  if (glob == std::string::npos) paths = of_split(paths, folder, split, name);
  std::vector<std::string> urls;
  for (const std::string& p : paths) urls.push_back(hub_file_url(at, p));
  return urls;
}

// Whether the file at `path` may be a list of Parquet files: its first line that is not blank
// or a comment, within its first 4 KiB, names one (a tar shard, an image list or a JSON file
// is not read further).
bool lists_parquet(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  std::size_t at = 0;
  while (at < head.size()) {
    std::size_t end = head.find('\n', at);
    if (end == std::string::npos) return false;  // (no whole line in the first 4 KiB)
    std::string line = head.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    return line.find('\0') == std::string::npos && names_parquet(line);
  }
  return false;
}

}  // namespace

std::optional<std::vector<std::string>> parquet_files(const std::string& data, Split split,
                                                      const RemotePolicy& remote) {
  if (data.empty()) return std::nullopt;
  if (is_hub_name(data)) {
    std::vector<std::string> files;
    for (const std::string& name : expand_names(data)) {
      if (!is_hub_name(name))
        throw ConfigError(data + ": " + name + " is not an hf:// path like the others");
      for (std::string& f : hub_files(name, split, remote)) files.push_back(std::move(f));
      if (files.size() > kMaxShards)
        throw ConfigError(data + ": names more than " + std::to_string(kMaxShards) + " files");
    }
    return files;
  }
  std::error_code ec;
  const auto status = fs::status(data, ec);
  if (!ec && fs::is_directory(status)) return folder_files(data, split);
  if (!ec && fs::is_regular_file(status)) {
    if (names_parquet(data)) return std::vector<std::string>{data};
    if (!lists_parquet(data)) return std::nullopt;
    std::ifstream in(data);
    if (!in) return std::nullopt;
    return parse_name_list_file(in, fs::absolute(data).parent_path().string(), data,
                                names_parquet, "a Parquet file (a .parquet path or URL)");
  }
  const std::vector<std::string> names = expand_names(data);
  if (names.empty() || !std::all_of(names.begin(), names.end(), names_parquet))
    return std::nullopt;
  std::vector<std::string> files;
  for (const std::string& name : names) {
    if (!has_glob(name)) {
      files.push_back(name);
      continue;
    }
    for (std::string& f : glob_files(name)) files.push_back(std::move(f));
    if (files.size() > kMaxShards)
      throw ConfigError(data + ": names more than " + std::to_string(kMaxShards) + " files");
  }
  return files;
}

namespace {

std::string chunk_place(const ParquetChunkFacts& chunk, std::uint64_t at) {
  return "the page at byte " + std::to_string(at) + " (its column chunk: " +
         std::to_string(chunk.bytes) + " bytes from byte " + std::to_string(chunk.start) + ")";
}

// The header of the page at `at`, read in growing pieces up to kMaxPageHeaderBytes or the
// chunk's end: "" when it parses.
std::string read_header(const ReadAt& read_at, const ParquetChunkFacts& chunk, std::uint64_t at,
                        PageHeader& h) {
  const std::uint64_t left = chunk.start + chunk.bytes - at;
  if (left == 0) return chunk_place(chunk, at) + " is past its column chunk's end";
  std::vector<std::uint8_t> bytes;
  for (std::size_t want = 4096;; want *= 4) {
    const std::size_t n = static_cast<std::size_t>(
        std::min<std::uint64_t>({want, left, kMaxPageHeaderBytes}));
    bytes.resize(n);
    if (read_at(at, bytes.data(), n) != n) return chunk_place(chunk, at) + " is cut short";
    const HeaderParse r = parse_page_header(bytes.data(), n, h);
    if (r == HeaderParse::kOk) return {};
    if (r == HeaderParse::kBad || n == left || n == kMaxPageHeaderBytes)
      return chunk_place(chunk, at) + " has no page header that can be read";
  }
}

std::string page_fits(const ParquetChunkFacts& chunk, std::uint64_t at, const PageHeader& h) {
  if (!within(at - chunk.start, h.page_size(), chunk.bytes))
    return chunk_place(chunk, at) + " runs past its column chunk";
  if ((h.data() || h.type == PageType::kDictionary) && h.values > kMaxPageRows)
    return chunk_place(chunk, at) + " holds " + std::to_string(h.values) + " rows (at most " +
           std::to_string(kMaxPageRows) + " are read)";
  if (h.data() && !value_encoding_supported(h.encoding))
    return chunk_place(chunk, at) + " uses value encoding " + std::to_string(h.encoding) +
           ", which stoke does not read (PLAIN and dictionary encodings)";
  return {};
}

}  // namespace

std::string chunk_pages(const ReadAt& read_at, const ParquetChunkFacts& chunk, ChunkPages& out) {
  out = {};
  std::uint64_t at = chunk.start;
  const std::uint64_t end = chunk.start + chunk.bytes;  // (the facts checked it within the file)
  // The dictionary page at `at` (its header `h`, checked by page_fits): kept, and passed.
  const auto keep_dictionary = [&](const PageHeader& h) {
    out.dictionary_offset = at;
    out.dictionary_size = static_cast<std::uint32_t>(h.page_size());
    at += h.page_size();
  };
  // The chunk's first page when it is a dictionary page; `flagged`: the footer says it is. (A
  // dictionary page the footer does not flag: older Parquet Java writers leave its offset unset
  // and start the chunk with it.)
  const auto first_dictionary = [&](bool flagged) -> std::string {
    PageHeader h;
    if (std::string e = read_header(read_at, chunk, at, h); !e.empty()) return e;
    if (h.type != PageType::kDictionary)
      return flagged ? chunk_place(chunk, at) + " is not the dictionary page the footer says it is"
                     : std::string();
    if (std::string e = page_fits(chunk, at, h); !e.empty()) return e;
    keep_dictionary(h);
    return {};
  };
  if (chunk.dictionary || (!chunk.pages.empty() && chunk.pages.front().offset > chunk.start)) {
    if (std::string e = first_dictionary(chunk.dictionary); !e.empty()) return e;
  }
  std::int64_t rows = 0;
  if (!chunk.pages.empty()) {
    // From the offset index: in order, from row 0, each within the chunk.
    for (std::size_t i = 0; i < chunk.pages.size(); ++i) {
      const ParquetPageLocation& p = chunk.pages[i];
      const std::int64_t next = i + 1 < chunk.pages.size() ? chunk.pages[i + 1].first_row
                                                           : chunk.rows;
      if (p.first_row != rows || next <= p.first_row || next - p.first_row > kMaxPageRows ||
          p.offset < at || !within(p.offset - chunk.start, p.size, chunk.bytes) ||
          p.size > kMaxPageBytes)
        return "its offset index does not match its pages (page " + std::to_string(i) + " at byte " +
               std::to_string(p.offset) + ")";
      rows = next;
      at = p.offset + p.size;
    }
    out.pages = chunk.pages;
    return {};
  }
  while (at < end) {
    PageHeader h;
    if (std::string e = read_header(read_at, chunk, at, h); !e.empty()) return e;
    if (std::string e = page_fits(chunk, at, h); !e.empty()) return e;
    if (h.type == PageType::kDictionary) {
      if (at != chunk.start || chunk.dictionary)
        return chunk_place(chunk, at) + " is a dictionary page after the first page";
      keep_dictionary(h);
      continue;
    }
    if (h.data() && h.values > 0) {
      if (rows > std::int64_t{0xffffffff})
        return "its row group has more than 2^32 rows";
      out.pages.push_back({at, static_cast<std::uint32_t>(h.page_size()), rows});
      rows += h.values;
    }
    at += h.page_size();
  }
  if (rows != chunk.rows)
    return "its pages hold " + std::to_string(rows) + " rows, its row group " +
           std::to_string(chunk.rows) + ": the file is damaged";
  return {};
}

double rows_per_decoded_page(const DatasetView& view) {
  std::uint64_t units = 0;
  for (std::size_t s = 0; s < view.shard_total(); ++s) {
    const ParquetChunkRecord& chunk = view.parquet_chunk(s);
    const std::uint64_t pages = view.parquet_pages_end(s) - chunk.first_page;
    units += chunk.dictionary_size > 0 ? std::min<std::uint64_t>(pages, 1) : pages;
  }
  return units == 0 ? 0 : static_cast<double>(view.size()) / static_cast<double>(units);
}

std::size_t page_cache_bytes(const DatasetView& view, bool shuffle, int shuffle_window) {
  std::uint64_t largest = 0;  // a row group's pages, as stored (of every column read)
  for (std::size_t s = 0; s < view.shard_total(); ++s) {
    std::uint64_t bytes = 0;
    for (std::uint32_t c = 0; c < view.parquet_columns(); ++c) {
      const ParquetChunkRecord& chunk = view.parquet_chunk(s, c);
      bytes += chunk.dictionary_size;
      for (std::uint64_t p = chunk.first_page; p < view.parquet_pages_end(s, c); ++p)
        bytes += view.parquet_page(p).size;
    }
    largest = std::max(largest, bytes);
  }
  std::uint64_t want = largest;
  if (shuffle) {
    if (shuffle_window == 0) return kMinPageCacheBytes;
    const auto window = static_cast<std::uint64_t>(shuffle_window);
    want = largest > kMaxPageCacheBytes / window ? kMaxPageCacheBytes : window * largest / 4 * 5;
  }
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(want, kMinPageCacheBytes,
                                                            kMaxPageCacheBytes));
}

namespace {

// A URL's HEAD answer: the one the caller already had, else asked now.
RemoteObject remote_object(const std::string& url, const IndexOptions& options) {
  if (options.remote_seen != nullptr)
    if (const auto it = options.remote_seen->find(url); it != options.remote_seen->end())
      return it->second;
  return remote_stat(url, options.remote);
}

// A local file's bytes (through `file`, which must outlive the source) or a URL's (ranged GETs;
// `object` its HEAD answer).
ParquetSource source_of(const std::string& path, const LocalFile* file, const RemoteObject& object,
                        const IndexOptions& options) {
  ParquetSource s;
  if (is_url(path)) {
    s.name = redact_url(path);
    s.size = object.size;
    s.read_at = [path, policy = options.remote](std::uint64_t offset, void* dst, std::size_t n) {
      return remote_read(path, offset, dst, n, policy);
    };
    return s;
  }
  s.name = path;
  s.size = file->size();
  s.read_at = [file](std::uint64_t offset, void* dst, std::size_t n) {
    return file->read_at(offset, dst, n);
  };
  return s;
}

// A URL's folder: up to its last '/' before any query.
std::string url_folder(const std::string& url) {
  const std::string base = url.substr(0, url.find_first_of("?#"));
  return base.substr(0, base.rfind('/') + 1);
}

// The file a row's image path names, read from the Parquet file at `parquet`: for a local file,
// relative to its folder (an absolute path or a URL as it is); for a remote one, relative to its
// URL's folder, and only that (a file a server serves names no file of this machine and no other
// server). Throws ConfigError naming the file and row for a path that is not followed.
std::string image_file(const std::string& parquet, const std::string& written, std::int64_t row) {
  const auto refuse = [&](const std::string& why) {
    return ConfigError(redact_url(parquet) + " (row " + std::to_string(row) + "): its image is " +
                       "the path '" + printable(written) + "', " + why);
  };
  if (written.empty() || written.find('\0') != std::string::npos)
    throw refuse("which names no file");
  if (!is_url(parquet)) {
    if (is_url(written) || written.front() == '/') return written;
    return (fs::path(parquet).parent_path() / written).lexically_normal().string();
  }
  if (is_url(written) || written.front() == '/')
    throw refuse("which a remote Parquet file may not name (its images are read relative to it)");
  for (const fs::path& part : fs::path(written))
    if (part == "..")
      throw refuse("which leaves the remote Parquet file's folder (its images are read within it)");
  // (An S3 key is encoded by the remote layer as it signs it.)
  const bool s3 = parquet.starts_with("s3://");
  return url_folder(parquet) + (s3 ? written : percent_encoded_path(written));
}

}  // namespace

DatasetIndex index_parquet(const std::vector<std::string>& files, const IndexOptions& options) {
  DatasetIndex index;
  index.kind = DatasetKind::kFiles;
  index.parquet = true;
  index.shard_starts.push_back(0);
  const ParquetColumns columns{options.image_column, options.label_column, options.bytes_field};
  index.parquet_columns = options.bytes_field.empty() ? 1 : 2;
  index.has_bytes = !options.bytes_field.empty();
  bool text_labels = false;
  // Text labels: each string's number in the order first met (a row's label is that until the
  // strings are sorted, at the end).
  std::unordered_map<std::string, std::int32_t> met;
  std::vector<std::string> class_names;
  for (const std::string& path : files) {
    std::optional<LocalFile> file;
    if (!is_url(path)) file.emplace(path);
    ParquetSource source;
    ParquetFileFacts facts;
    RemoteObject object;
    try {
      if (is_url(path)) object = remote_object(path, options);
      source = source_of(path, file ? &*file : nullptr, object, options);
      facts = read_parquet_facts(source, columns);
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& e) {
      throw ConfigError(std::string(e.what()));
    }
    const ReadAt& read_at = source.read_at;
    // Rows a file can hold: every row takes a bit of its bytes at least (a definition level, a
    // value's length). A file claiming more (a few KB of pages of 2^20 rows each) is refused
    // before a record is made for each.
    std::uint64_t file_rows = 0;
    for (const ParquetChunkFacts& g : facts.row_groups) file_rows += static_cast<std::uint64_t>(g.rows);
    if (file_rows / 8 > facts.file_size)
      throw ConfigError(source.name + ": claims " + std::to_string(file_rows) + " rows in " +
                        std::to_string(facts.file_size) + " bytes: the file is damaged");
    const bool texts_here = facts.text_labels;
    if (&path != &files.front() && texts_here != text_labels)
      throw ConfigError(path + ": its labels are " + (texts_here ? "strings" : "integers") +
                        ", the files' before it " + (text_labels ? "strings" : "integers"));
    text_labels = texts_here;
    if (class_names.empty()) class_names = facts.class_names;
    // A remote file with a version (an ETag) can have a local copy in the shard cache, fetched
    // whole ahead of the plan as a shard is; its name follows the URL in the path bytes.
    std::string copy;
    if (is_url(path) && options.caches.shard_copies && !options.caches.root.empty() &&
        !object.etag.empty())
      copy = shard_copy_path(options.caches.root, path, object.size, object.etag);
    if (is_url(path) && !facts.row_groups.empty())
      index.remote_shards.push_back({index.shard_starts.size() - 1, path, object.size, copy,
                                     false, facts.row_groups.size()});
    const std::uint64_t path_offset = index.paths.size();
    index.paths += path + copy;
    for (const ParquetFileFacts::ImagePath& p : facts.image_paths)
      index.parquet_image_files.emplace_back(static_cast<std::uint64_t>(index.size + p.row),
                                             image_file(path, p.path, p.row));
    // A row group's chunk of a column read: its record, and its pages found and checked.
    const auto add_chunk = [&](const ParquetChunkFacts& chunk, std::uint8_t max_def, std::size_t g,
                               const std::string& column) {
      ChunkPages pages;
      std::string why;
      try {
        why = chunk_pages(read_at, chunk, pages);
      } catch (const Error& e) {
        why = e.what();
      }
      if (!why.empty())
        throw ConfigError(source.name + " (row group " + std::to_string(g) + ", column " + column +
                          "): " + why);
      ParquetChunkRecord& r = index.parquet_chunks.emplace_back();
      r.dictionary_offset = pages.dictionary_offset;
      r.dictionary_size = pages.dictionary_size;
      r.codec = static_cast<std::uint8_t>(chunk.codec);
      r.max_def = max_def;
      r.first_page = index.parquet_pages.size();
      r.row_group = static_cast<std::uint32_t>(g);
      for (const ParquetPageLocation& p : pages.pages)
        index.parquet_pages.push_back(
            {p.offset, p.size, static_cast<std::uint32_t>(p.first_row)});
    };
    const bool bytes = !options.bytes_field.empty();
    if (bytes && facts.bytes_row_groups.size() != facts.row_groups.size())
      throw ConfigError(source.name + ": column " + options.bytes_field + " was not read");
    index.parquet_bytes_sizes.insert(index.parquet_bytes_sizes.end(), facts.bytes_sizes.begin(),
                                     facts.bytes_sizes.end());
    std::int64_t row = 0;  // in the file
    for (std::size_t g = 0; g < facts.row_groups.size(); ++g) {
      const ParquetChunkFacts& chunk = facts.row_groups[g];
      add_chunk(chunk, facts.max_def, g, facts.image_column);
      if (bytes) add_chunk(facts.bytes_row_groups[g], facts.bytes_max_def, g, facts.bytes_column);
      // The row group's path and copy (a row keeps its label alone).
      FileEntry& e = index.entries.emplace_back();
      e.path_offset = path_offset;
      e.path_length = static_cast<std::uint32_t>(path.size());
      e.copy_length = static_cast<std::uint32_t>(copy.size());
      for (std::int64_t k = 0; k < chunk.rows; ++k, ++row) {
        std::int64_t label = -1;
        const auto at = static_cast<std::size_t>(row);
        if (!text_labels && at < facts.labels.size()) label = facts.labels[at];
        if (text_labels && at < facts.label_texts.size() && !facts.label_texts[at].empty()) {
          const auto [it, added] =
              met.try_emplace(facts.label_texts[at], static_cast<std::int32_t>(met.size()));
          if (added && met.size() > static_cast<std::size_t>(options.max_classes))
            throw ConfigError(source.name + ": its labels name more than max_classes (" +
                              std::to_string(options.max_classes) + ") classes");
          label = it->second;
        }
        if (label < -1 || label >= options.max_classes) {
          const std::string where =
              path + " (row group " + std::to_string(g) + ", row " + std::to_string(k) + ")";
          if (label < 0) throw DataError(where + ": label " + std::to_string(label) + " is negative");
          throw label_over_bound(where, "label", static_cast<std::uint64_t>(label),
                                 options.max_classes);
        }
        index.labels.push_back(static_cast<std::int32_t>(label));
      }
      index.size += chunk.rows;
      index.shard_starts.push_back(index.size);
    }
  }
  if (index.size == 0) throw ConfigError(files.front() + ": its row groups hold no rows");
  if (text_labels) {
    // Classes named by strings: sorted, as an image folder's class folders are.
    class_names.clear();
    for (const auto& [name, number] : met) class_names.push_back(name);
    std::sort(class_names.begin(), class_names.end());
    std::vector<std::int32_t> sorted(met.size());  // a first-met number's place in the sort
    for (std::size_t c = 0; c < class_names.size(); ++c)
      sorted[static_cast<std::size_t>(met[class_names[c]])] = static_cast<std::int32_t>(c);
    for (std::int32_t& label : index.labels)
      if (label >= 0) label = sorted[static_cast<std::size_t>(label)];
  }
  index.class_names = std::move(class_names);
  return index;
}

}  // namespace stoke::detail
