// stoke-pack: writes an image dataset (an image folder, a list file or IDX files) as WebDataset
// tar shards that stoke, webdataset and any tar reader read: each sample is <key>.<ext> (the
// image) and <key>.cls (its label), keys numbered in the dataset's index order, with a sidecar
// <shard>.idx per shard so a reader needs no walk of the headers, and a dataset-level index
// (webdataset's wids JSON: every shard's name, samples and size) so a loader starts without
// opening any shard. Or, for names ending .parquet, as Parquet files in Hugging Face's layout
// (an Image column and a ClassLabel label column, data/parquet_facts.hpp's write), each image a
// page of its own, which stoke, pyarrow and `datasets` read. Its input may be Parquet too (a
// Hugging Face dataset's files, local, on a server or hf://): as tar shards, or re-laid out one
// image a page. Optionally re-encodes each image to a maximum side first, so a dataset of camera
// photographs is shrunk once instead of decoded at full size every epoch. Given shards (and
// --index without --out), it writes their dataset-level index only.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/text.hpp"
#include "data/dataset_index.hpp"
#include "data/file_reader.hpp"
#include "data/index_file.hpp"
#include "data/index_format.hpp"
#include "data/parquet_dataset.hpp"
#include "data/parquet_facts.hpp"
#include "data/parquet_reader.hpp"
#include "data/shard_counts.hpp"
#include "data/shard_list.hpp"
#include "data/tar_index.hpp"
#include "decode/decode.hpp"
#include "decode/jpeg_relayout.hpp"
#include "remote/remote.hpp"
#include "stoke/error.hpp"
#include "stoke/format.hpp"
#include "stoke/names.hpp"
#include "stoke/tools/cli.hpp"
#include "stoke/tools/format.hpp"
#include "stoke/tools/progress.hpp"

namespace fs = std::filesystem;
using stoke::detail::DatasetIndex;

namespace {

constexpr int kExitError = 1;
constexpr std::uint64_t kDefaultShardBytes = std::uint64_t{256} << 20;

struct Args {
  std::string data;
  std::string out;      // a printf pattern with one integer conversion: DIR/train-%06d.tar
  std::string pattern;  // `out` with that conversion taking a long long
  std::string shard_size = "256MiB";
  std::uint64_t shard_bytes = kDefaultShardBytes;
  std::int64_t shard_samples = 0;  // 0: by size
  int max_side = 0;                // 0: the images as they are
  int quality = 90;
  stoke::Split split = stoke::Split::kTrain;
  bool parquet = false;             // Parquet files instead of tar shards (--out ends .parquet)
  std::int64_t rows_per_group = 100;  // Parquet: rows per row group
  bool sidecar = true;
  bool relayout = true;  // JPEGs re-laid out losslessly (decode/jpeg_relayout.hpp)
  std::string index;  // the dataset-level index's path ("": beside the shards, named after them)
  bool write_index = true;
  bool progress = true;
};

// The shard pattern (shard_pattern's result) filled with `n`.
std::string shard_name(const std::string& pattern, std::int64_t n) {
  std::vector<char> buf(pattern.size() + 32);
  std::snprintf(buf.data(), buf.size(), pattern.c_str(), static_cast<long long>(n));
  return buf.data();
}

// The widest zero-padded field --out may ask for: 10^12 shards is past any dataset.
constexpr std::size_t kMaxPatternWidth = 12;

// `pattern` with its one integer conversion ("%d", or "%0Nd" with N in 1..kMaxPatternWidth)
// widened to long long, for names that end in .tar; or why the pattern cannot name shards.
// Other conversions, flags and space padding ("%6d", "%+d", "%ld") are refused: a shard's name
// must be a plain name that sorts in shard order. Only "%%" may appear besides.
struct ShardPattern {
  std::string pattern;  // when `error` is empty
  std::string error;
};

ShardPattern shard_pattern(const std::string& out) {
  const std::string use = ": use %d or %0Nd with N 1.." + std::to_string(kMaxPatternWidth);
  std::string pattern = out;
  int conversions = 0;
  std::size_t at = 0;  // where the conversion is in `out`
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (i + 1 < pattern.size() && pattern[i + 1] == '%') {
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    while (j < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[j]))) ++j;
    if (j >= pattern.size() || pattern[j] != 'd' || ++conversions > 1) return {"", ""};
    const std::string conversion = pattern.substr(i, j + 1 - i);
    const std::string digits = pattern.substr(i + 1, j - i - 1);  // "", "06", "40", ...
    if (!digits.empty() && digits[0] != '0')
      return {"", "'" + conversion + "' pads with spaces" + use + " (e.g. %06d)"};
    if (digits.size() == 1 || (digits.size() > 1 && digits[1] == '0'))
      return {"", "'" + conversion + "' has no width" + use};
    if (digits.size() > 3 || (digits.size() > 1 && std::stoul(digits.substr(1)) > kMaxPatternWidth))
      return {"", "'" + conversion + "' is wider than " + std::to_string(kMaxPatternWidth) +
                      " digits" + use};
    at = i;
    pattern.replace(j, 1, "lld");
    i = j + 2;
  }
  if (conversions != 1) return {"", ""};
  if (const std::size_t slash = out.rfind('/'); slash != std::string::npos && at < slash)
    return {"", "the integer conversion must be in the shards' file name, not in a folder"};
  if (!shard_name(pattern, 0).ends_with(".tar") && !shard_name(pattern, 0).ends_with(".parquet"))
    return {"", "the shards' names must end in .tar (e.g. train-%06d.tar), or .parquet for "
                "Parquet files"};
  return {pattern, ""};
}

std::optional<int> parse_args(int argc, char** argv, Args& args) {
  CLI::App app(
      "Writes an image dataset as WebDataset tar shards: <key>.<ext> and <key>.cls per sample, "
      "in the dataset's index order, with a sidecar index <shard>.idx per shard.",
      "stoke-pack");
  stoke::tools::configure(app);
  app.footer(
      "Shards are written under a temporary name and renamed when complete; a shard that "
      "exists already is an error. Exit status: 0 on success, 1 on an error, 2 on a usage "
      "error.");
  app.add_option("--data", args.data,
                 "an image folder, a list file, a folder of IDX files, or Parquet files (names, "
                 "patterns, a folder, URLs or hf://datasets/ORG/NAME, as stoke reads them)")
      ->type_name("SRC")
      ->required();
  app.add_option("--out", args.out,
                 "the shards' names: a pattern with one %d or %0Nd (N 1..12) in the file name, "
                 "ending .tar, e.g. out/train-%06d.tar, or .parquet for Parquet files in Hugging "
                 "Face's layout, e.g. out/train-%05d.parquet")
      ->type_name("PATTERN");
  app.add_option("--index", args.index,
                 "the dataset-level index to write (wids JSON; stoke reads it as --data): "
                 "default beside the shards, out/train-%06d.tar giving out/train.wids.json. "
                 "Without --out, --data names existing shards and only their index is written")
      ->type_name("PATH");
  app.add_option("--shard-size", args.shard_size,
                 "start a new shard before one would pass this size (e.g. 256MiB, 1GiB, 500MB)")
      ->type_name("BYTES")
      ->capture_default_str();
  app.add_option("--shard-samples", args.shard_samples,
                 "samples per shard instead (the last may hold fewer)")
      ->type_name("N")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  app.add_option("--max-side", args.max_side,
                 "LOSSY: re-encode each image as JPEG with its longer side at most N pixels "
                 "(smaller ones keep their size)")
      ->type_name("N")
      ->check(CLI::Range(16, 65536));
  app.add_option("--quality", args.quality, "JPEG quality of images --max-side re-encodes (lossy)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  stoke::tools::add_word(app, "--split", args.split, stoke::parse_split,
                         "IDX data, and a Parquet folder's files: train (default) or test")
      ->type_name("train|test");
  app.add_option("--rows-per-group", args.rows_per_group,
                 "Parquet: rows per row group (the unit stoke's shuffle_window counts)")
      ->type_name("N")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
      ->capture_default_str();
  app.add_flag("!--no-relayout", args.relayout,
               "keep each JPEG's bytes as they are (by default each is re-laid out losslessly: "
               "baseline, optimized Huffman tables, restart markers a crop decodes from)");
  app.add_flag("!--no-sidecar", args.sidecar, "do not write <shard>.idx files");
  app.add_flag("!--no-index", args.write_index, "do not write the dataset-level index");
  app.add_flag("!--no-progress", args.progress, "no progress line on stderr");
  if (const auto code = stoke::tools::parse(app, argc, argv)) return code;
  if (args.out.empty()) {
    if (args.index.empty())
      return stoke::tools::usage_error(app, "--out",
                                       "is required (or --index alone, to index existing shards)");
    return std::nullopt;
  }
  const ShardPattern pattern = shard_pattern(args.out);
  if (pattern.pattern.empty())
    return stoke::tools::usage_error(
        app, "--out",
        "'" + args.out + "' " +
            (pattern.error.empty()
                 ? "needs exactly one integer conversion such as %06d (and %% for a literal %)"
                 : "cannot name the shards: " + pattern.error));
  const auto bytes = stoke::parse_bytes(args.shard_size);
  if (!bytes || *bytes < 4096)
    return stoke::tools::usage_error(
        app, "--shard-size",
        "'" + args.shard_size + "' is not a size of at least 4096 bytes (e.g. 256MiB)");
  args.shard_bytes = *bytes;
  args.pattern = pattern.pattern;
  args.parquet = shard_name(pattern.pattern, 0).ends_with(".parquet");
  // (A Parquet file is written from memory, its images in one binary array of 32-bit offsets.)
  if (args.parquet && args.shard_bytes > (std::uint64_t{1} << 30))
    return stoke::tools::usage_error(app, "--shard-size",
                                     "'" + args.shard_size + "' is over 1GiB, the most a "
                                     "Parquet file stoke-pack writes holds");
  return std::nullopt;
}

// A sample's bytes as they go into the shard, and their extension.
struct Encoded {
  std::vector<std::uint8_t> bytes;
  std::string ext;
};

// A file's path in the index of a folder or list file.
std::string sample_path(const DatasetIndex& index, std::int64_t i) {
  const auto& entry = index.entries[static_cast<std::size_t>(i)];
  return index.paths.substr(entry.path_offset, entry.path_length);
}

// Rows of Parquet files, read as a worker reads them (their pages through the index a loader
// maps, an Image's file where its bytes are null), in order: each page is decoded once.
class ParquetInput {
 public:
  ParquetInput(const std::string& data, const std::vector<std::string>& files,
               stoke::detail::IndexOptions request)
      : files_(request.remote) {
    request.parquet_found = &files;
    index_ = stoke::detail::index_dataset(data, request);
    view_.emplace(index_->view());
  }
  const DatasetIndex& info() const { return index_->info(); }
  std::int64_t size() const { return view_->size(); }
  std::int32_t label(std::int64_t i) const { return view_->label(i); }
  // Row i's place, for messages: "FILE (row group G, row R)".
  std::string name(std::int64_t i) const {
    return stoke::detail::redact_url(view_->path(i)) + " (" + view_->parquet_row_place(i) + ")";
  }
  // Row i's image, and its extension (by what its bytes are).
  stoke::detail::BadInput read(std::int64_t i, Encoded& e) {
    const std::string path = view_->path(i);
    stoke::detail::ByteSpan value;
    std::string file;
    const stoke::detail::BadInput r = rows_.read_image(
        *view_, i,
        [&](const stoke::detail::ByteRange& range, std::vector<std::uint8_t>& into) {
          return files_.read(path, range, into);
        },
        files_, file_bytes_, file, value);
    if (r != stoke::detail::BadInput::kNone) return r;
    e.bytes.assign(value.data, value.data + value.size);
    // By what the bytes are, whatever a file's name says: the extension a shard is read with.
    e.ext = stoke::detail::shard_image_extension(e.bytes.data(), e.bytes.size());
    return e.ext.empty() ? stoke::detail::BadInput::kUndecodable : stoke::detail::BadInput::kNone;
  }

 private:
  std::shared_ptr<const stoke::detail::MappedIndex> index_;
  std::optional<stoke::detail::DatasetView> view_;
  stoke::detail::SampleFiles files_;
  stoke::detail::ParquetRows rows_{std::size_t{256} << 20};  // a few row groups' pages
  std::vector<std::uint8_t> file_bytes_;                     // a row's image file
};

// Shrinks to max_side and re-encodes as JPEG; images within max_side keep their own bytes.
std::optional<Encoded> shrink(Encoded in, int max_side, int quality) {
  const cv::Mat image = cv::imdecode(
      cv::Mat(1, static_cast<int>(in.bytes.size()), CV_8U, in.bytes.data()), cv::IMREAD_COLOR);
  if (image.empty()) return std::nullopt;
  const int side = std::max(image.cols, image.rows);
  if (side <= max_side) return in;
  const double scale = static_cast<double>(max_side) / side;
  cv::Mat small;
  cv::resize(image, small,
             cv::Size(std::max(1, static_cast<int>(image.cols * scale + 0.5)),
                      std::max(1, static_cast<int>(image.rows * scale + 0.5))),
             0, 0, cv::INTER_AREA);
  Encoded out;
  out.ext = "jpg";
  if (!cv::imencode(".jpg", small, out.bytes, {cv::IMWRITE_JPEG_QUALITY, quality}))
    return std::nullopt;
  return out;
}

// One shard (a tar file or a Parquet file) being written: under "<name>.partial" until close()
// renames it.
class OutputShard {
 public:
  virtual ~OutputShard() = default;
  // Sample `key`: its image (extension `ext`) and label.
  virtual void add_sample(const std::string& key, const Encoded& e, std::int64_t label) = 0;
  virtual std::uint64_t bytes() const = 0;  // its samples' so far
  virtual std::int64_t samples() const = 0;
  // Writes what is left and renames the file into place: its size on disk.
  virtual std::uint64_t close() = 0;
};

// A Parquet file: its rows kept until close() writes them (at most --shard-size of images).
class ParquetShard final : public OutputShard {
 public:
  ParquetShard(std::string name, const Args& args, std::vector<std::string> class_names)
      : name_(std::move(name)) {
    if (fs::exists(name_))
      throw stoke::Error(name_ + " exists already; remove it or choose another --out");
    fs::create_directories(fs::absolute(name_).parent_path());
    request_.path = name_ + ".partial";
    request_.rows_per_group = args.rows_per_group;
    request_.class_names = std::move(class_names);
  }
  ~ParquetShard() override {
    std::error_code ec;
    fs::remove(request_.path, ec);  // (renamed away when it was closed)
  }
  void add_sample(const std::string& key, const Encoded& e, std::int64_t label) override {
    request_.images.push_back(e.bytes);
    request_.names.push_back(key + "." + e.ext);
    request_.labels.push_back(label);
    bytes_ += e.bytes.size() + key.size() + 16;
  }
  std::uint64_t bytes() const override { return bytes_; }
  std::int64_t samples() const override {
    return static_cast<std::int64_t>(request_.images.size());
  }
  std::uint64_t close() override {
    stoke::detail::write_parquet_file(request_);
    const std::uint64_t size = fs::file_size(request_.path);
    fs::rename(request_.path, name_);
    return size;
  }

 private:
  std::string name_;
  stoke::detail::ParquetWriteRequest request_;
  std::uint64_t bytes_ = 0;
};

// A tar shard.
class ShardWriter final : public OutputShard {
 public:
  ShardWriter(std::string name, bool sidecar) : name_(std::move(name)), sidecar_(sidecar) {
    if (fs::exists(name_))
      throw stoke::Error(name_ + " exists already; remove it or choose another --out");
    fs::create_directories(fs::absolute(name_).parent_path());
    out_.open(partial(), std::ios::binary | std::ios::trunc);
    if (!out_) throw stoke::Error(partial() + ": cannot create");
  }
  ~ShardWriter() override {
    if (out_.is_open()) {  // not closed: an error ended the run
      out_.close();
      std::error_code ec;
      fs::remove(partial(), ec);
    }
  }

  void add(const std::string& member, const std::uint8_t* data, std::size_t size) {
    const std::string header = stoke::detail::tar_member_header(member, size);
    write(header.data(), header.size());
    index_.members.push_back({member, bytes_, size, {}});
    write(data, size);
    const std::string pad(stoke::detail::tar_padding(size), '\0');
    write(pad.data(), pad.size());
  }
  void add(const std::string& member, const std::string& text) {
    add(member, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
    index_.members.back().value = text;
  }
  void add_sample(const std::string& key, const Encoded& e, std::int64_t label) override {
    add(key + "." + e.ext, e.bytes.data(), e.bytes.size());
    add(key + ".cls", std::to_string(label));
    ++samples_;
  }
  std::uint64_t bytes() const override { return bytes_; }
  std::int64_t samples() const override { return samples_; }

  std::uint64_t close() override {
    const std::string end(stoke::detail::kTarEndBytes, '\0');
    write(end.data(), end.size());
    out_.close();
    if (!out_) throw stoke::Error(partial() + ": write failed (disk full?)");
    if (sidecar_) {
      index_.shard_bytes = bytes_;
      const std::string idx = name_ + ".idx";
      std::ofstream side(idx + ".partial", std::ios::binary | std::ios::trunc);
      side << stoke::detail::format_sidecar(index_);
      side.close();
      if (!side) throw stoke::Error(idx + ".partial: write failed (disk full?)");
      fs::rename(idx + ".partial", idx);
    }
    fs::rename(partial(), name_);  // after the sidecar: a complete shard always has its index
    return bytes_;
  }

 private:
  std::string partial() const { return name_ + ".partial"; }
  void write(const void* p, std::size_t n) {
    out_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
    if (!out_) throw stoke::Error(partial() + ": write failed (disk full?)");
    bytes_ += n;
  }

  std::string name_;
  bool sidecar_;
  std::ofstream out_;
  std::uint64_t bytes_ = 0;
  std::int64_t samples_ = 0;
  stoke::detail::ShardIndex index_;
};

// The default dataset-level index beside the shards: out/train-%06d.tar -> out/train.wids.json.
std::string default_index_path(const std::string& out) {
  const fs::path p(out);
  std::string stem = p.filename().string();
  stem.resize(std::min(stem.find('%'), stem.size()));
  while (!stem.empty() && (stem.back() == '-' || stem.back() == '_' || stem.back() == '.'))
    stem.pop_back();
  return (p.parent_path() / ((stem.empty() ? "shards" : stem) + ".wids.json")).string();
}

// Writes the wids index of `shards` (paths as written, samples, bytes) to `path`, each name
// relative to the index's folder when it lies under it. Under a temporary name, then renamed.
void write_index(const std::string& path, std::vector<stoke::detail::ShardCount> shards) {
  const fs::path folder = fs::absolute(path).parent_path();
  for (auto& s : shards) {
    if (stoke::detail::is_url(s.name)) continue;
    const fs::path relative = fs::absolute(s.name).lexically_normal().lexically_relative(folder);
    if (!relative.empty() && *relative.begin() != "..") s.name = relative.string();
  }
  std::string name = fs::path(path).filename().string();
  for (const char* suffix : {".wids.json", ".json"})
    if (name.ends_with(suffix)) {
      name.resize(name.size() - std::strlen(suffix));
      break;
    }
  fs::create_directories(folder);
  const std::string partial = path + ".partial";
  std::ofstream out(partial, std::ios::binary | std::ios::trunc);
  out << stoke::detail::format_wids_index(name, shards);
  out.close();
  if (!out) throw stoke::Error(partial + ": write failed (disk full?)");
  fs::rename(partial, path);
}

// --index without --out: the dataset-level index of existing shards.
int index_only(const Args& args) {
  const auto started = std::chrono::steady_clock::now();
  const auto names = stoke::detail::shard_list(args.data);
  if (!names)
    throw stoke::ConfigError(args.data + " names no tar shards: give --out to pack it first");
  stoke::detail::IndexOptions request;
  request.remote = stoke::detail::remote_policy_from_environment();
  const DatasetIndex index = stoke::detail::build_index(args.data, request);
  for (const std::string& note : index.shard_notes) std::cerr << "stoke-pack: " << note << "\n";
  std::vector<stoke::detail::ShardCount> shards;
  for (std::size_t i = 0; i < names->size(); ++i) {
    const std::string& name = (*names)[i];
    std::error_code ec;
    const std::uint64_t bytes = stoke::detail::is_url(name) ? 0 : fs::file_size(name, ec);
    shards.push_back({name,
                      static_cast<std::uint64_t>(index.shard_starts[i + 1] - index.shard_starts[i]),
                      ec ? 0 : bytes});
  }
  write_index(args.index, shards);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "indexed " << stoke::tools::with_commas(index.size) << " samples in "
            << shards.size() << " shard(s) into " << args.index << "; "
            << stoke::tools::fixed1(seconds) << " s\n";
  return 0;
}

int run(const Args& args) {
  if (args.out.empty()) return index_only(args);
  const auto started = std::chrono::steady_clock::now();
  stoke::detail::IndexOptions request;
  request.split = args.split;
  request.remote = stoke::detail::remote_policy_from_environment();  // this tool's own reading
  // Parquet: its rows as a worker reads them; other data: its index's entries.
  std::optional<ParquetInput> parquet;
  DatasetIndex index;
  if (const auto files = stoke::detail::parquet_files(args.data, args.split, request.remote))
    parquet.emplace(args.data, *files, request);
  else
    index = stoke::detail::build_index(args.data, request);
  if (!parquet && !index.shard_starts.empty())
    throw stoke::ConfigError(args.data + " is tar shards already; stoke reads them as they are");
  for (const auto& r : index.rejected)
    std::cerr << "stoke-pack: skipped " << stoke::detail::printable(r.path) << ": "
              << stoke::detail::bad_input_name(r.reason) << "\n";
  const std::int64_t n = parquet ? parquet->size() : index.size;
  const std::vector<std::string>& class_names =
      parquet ? parquet->info().class_names : index.class_names;
  const std::size_t width = std::max<std::size_t>(6, std::to_string(n - 1).size());
  const auto key = [&](std::int64_t i) {
    std::string digits = std::to_string(i);
    return std::string(width - digits.size(), '0') + digits;
  };
  stoke::detail::PosixFileReader files;
  stoke::tools::CountProgress progress(n, args.progress);
  std::unique_ptr<OutputShard> shard;
  std::vector<std::string> written;
  std::vector<stoke::detail::ShardCount> counts;  // for the dataset-level index
  std::uint64_t total_bytes = 0;
  std::int64_t packed = 0;
  std::int64_t skipped = 0;
  std::int64_t reencoded = 0;
  // Lossless re-layout: JPEGs re-laid out (of them progressive), kept as they were, and bytes.
  std::int64_t relaid = 0, relaid_progressive = 0, kept = 0;
  std::uint64_t jpeg_in = 0, jpeg_out = 0;
  const auto sample_name = [&](std::int64_t i) {
    return parquet ? parquet->name(i) : stoke::detail::printable(sample_path(index, i));
  };
  const auto finish_shard = [&] {
    if (!shard) return;
    const std::uint64_t size = shard->close();
    total_bytes += size;
    counts.push_back({written.back(), static_cast<std::uint64_t>(shard->samples()), size});
    shard.reset();
  };
  for (std::int64_t i = 0; i < n; ++i) {
    Encoded e;
    if (parquet) {
      if (const stoke::detail::BadInput r = parquet->read(i, e);
          r != stoke::detail::BadInput::kNone) {
        std::cerr << "stoke-pack: skipped " << parquet->name(i) << ": "
                  << stoke::detail::bad_input_name(r) << "\n";
        ++skipped;
        continue;
      }
    } else if (index.kind == stoke::detail::DatasetKind::kRaw) {
      const cv::Mat gray(index.height, index.width, CV_8UC(index.channels),
                         index.pixels.data() + static_cast<std::size_t>(i) * index.height *
                                                   index.width * index.channels);
      cv::imencode(".png", gray, e.bytes);
      e.ext = "png";
    } else {
      const std::string path = sample_path(index, i);
      const stoke::detail::BadInput r = files.read(path, {}, e.bytes);
      if (r != stoke::detail::BadInput::kNone) {
        std::cerr << "stoke-pack: skipped " << stoke::detail::printable(path) << ": "
                  << stoke::detail::bad_input_name(r) << "\n";
        ++skipped;
        continue;
      }
      // By what the bytes are: a shard's image member must have an extension stoke reads
      // shards with, whatever the file's name (a .hdr or .gif, or garbage named .jpg, is not).
      e.ext = stoke::detail::shard_image_extension(e.bytes.data(), e.bytes.size());
      if (e.ext.empty()) {
        std::cerr << "stoke-pack: skipped " << stoke::detail::printable(path)
                  << ": not an image shards carry (jpg, png, bmp, tiff, webp, pnm)\n";
        ++skipped;
        continue;
      }
    }
    if (args.max_side > 0 && (parquet || index.kind != stoke::detail::DatasetKind::kRaw)) {
      const std::size_t before = e.bytes.size();
      auto small = shrink(std::move(e), args.max_side, args.quality);
      if (!small) {
        std::cerr << "stoke-pack: skipped " << sample_name(i) << ": undecodable\n";
        ++skipped;
        continue;
      }
      if (small->ext == "jpg" && small->bytes.size() != before) ++reencoded;
      e = std::move(*small);
    }
    if (args.relayout && stoke::detail::is_jpeg(e.bytes)) {
      jpeg_in += e.bytes.size();
      stoke::detail::Relayout r = stoke::detail::relayout_jpeg(e.bytes.data(), e.bytes.size());
      if (r.why.empty()) {
        ++relaid;
        relaid_progressive += r.was_progressive;
        e.bytes = std::move(r.bytes);
        e.ext = "jpg";
      } else {
        ++kept;
        std::cerr << "stoke-pack: kept " << sample_name(i) << " as it is: " << r.why << "\n";
      }
      jpeg_out += e.bytes.size();
    }
    const std::int64_t label = parquet ? parquet->label(i)
                               : index.kind == stoke::detail::DatasetKind::kRaw
                                   ? index.labels[static_cast<std::size_t>(i)]
                                   : index.entries[static_cast<std::size_t>(i)].label;
    const std::uint64_t sample_bytes =
        2 * 512 + e.bytes.size() + 511 + std::to_string(label).size() + 511;
    const bool full =
        shard && (args.shard_samples > 0 ? shard->samples() >= args.shard_samples
                                         : shard->bytes() + sample_bytes > args.shard_bytes);
    if (full) finish_shard();
    if (!shard) {
      written.push_back(shard_name(args.pattern, static_cast<std::int64_t>(written.size())));
      if (args.parquet)
        shard = std::make_unique<ParquetShard>(written.back(), args, class_names);
      else
        shard = std::make_unique<ShardWriter>(written.back(), args.sidecar);
    }
    shard->add_sample(key(i), e, label);
    ++packed;
    progress.update(i + 1, "packing " + stoke::tools::meter(i + 1, n, 20) + " " +
                               std::to_string(i + 1) + "/" + std::to_string(n) + " samples, " +
                               std::to_string(written.size()) + " shard(s)");
  }
  finish_shard();
  const std::string index_path = args.index.empty() ? default_index_path(args.out) : args.index;
  // (A dataset-level index is a wids index of tar shards; Parquet files carry their own footers.)
  const bool index_written = args.write_index && !counts.empty() && !args.parquet;
  if (index_written) write_index(index_path, counts);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "packed " << stoke::tools::with_commas(packed) << " samples into " << written.size()
            << " shard(s), " << stoke::tools::fixed1(static_cast<double>(total_bytes) / (1 << 20))
            << " MiB"
            << (written.empty() ? "" : " (" + written.front() + " .. " + written.back() + ")");
  if (skipped > 0) std::cout << "; skipped " << skipped;
  if (args.max_side > 0)
    std::cout << "; re-encoded (lossy) " << reencoded << " to at most " << args.max_side;
  if (args.relayout && jpeg_in > 0)
    std::cout << "; re-laid out " << relaid << " JPEG(s) losslessly (" << relaid_progressive
              << " progressive), "
              << (kept > 0 ? std::to_string(kept) + " kept as they were, " : "")
              << (jpeg_out >= jpeg_in ? "+" : "-")
              << stoke::tools::fixed1(100.0 * std::abs(static_cast<double>(jpeg_out) - jpeg_in) /
                                      static_cast<double>(jpeg_in))
              << "% bytes";
  if (index_written) std::cout << "; index " << index_path;
  std::cout << "; " << stoke::tools::fixed1(seconds) << " s\n";
  return packed > 0 ? 0 : kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const auto code = parse_args(argc, argv, args)) return *code;
  try {
    return run(args);
  } catch (const std::exception& e) {
    // (printable() here too: not every exception is a stoke::Error, which escapes its own.)
    std::cerr << "stoke-pack: " << stoke::detail::printable(e.what()) << "\n";
  }
  return kExitError;
}
