// libstoke_parquet.so: data/parquet_facts.hpp's read, through Apache Arrow's Parquet reader (the
// footer, the schema and its Hugging Face metadata, the offset index, the label column), and its
// write (stoke-pack's Parquet files), through Arrow's writer. Loaded by the process the first
// time it indexes or writes Parquet; nothing else of stoke links Arrow.

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/column_reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/page_index.h>
#include <parquet/schema.h>
#include <parquet/statistics.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "data/parquet_facts.hpp"

namespace stoke::detail {
namespace {

struct Refused {
  std::string text;
};

// The Hugging Face features of the file's schema metadata ({"info": {"features": {...}}}), or
// an empty object.
nlohmann::json hf_features(const parquet::FileMetaData& meta) {
  const std::shared_ptr<const arrow::KeyValueMetadata> kv = meta.key_value_metadata();
  if (kv == nullptr) return nlohmann::json::object();
  const int at = kv->FindKey("huggingface");
  if (at < 0) return nlohmann::json::object();
  const nlohmann::json j = nlohmann::json::parse(kv->value(at), nullptr, false);
  if (!j.is_object()) return nlohmann::json::object();
  const auto info = j.find("info");
  if (info == j.end() || !info->is_object()) return nlohmann::json::object();
  const auto features = info->find("features");
  if (features == info->end() || !features->is_object()) return nlohmann::json::object();
  return *features;
}

// The first top-level feature of this Hugging Face type, or "".
std::string feature_of_type(const nlohmann::json& features, const char* type) {
  for (const auto& [name, f] : features.items()) {
    if (!f.is_object()) continue;
    const auto t = f.find("_type");
    if (t != f.end() && t->is_string() && *t == type) return name;
  }
  return {};
}

std::string column_list(const parquet::SchemaDescriptor& schema) {
  std::string out;
  for (int i = 0; i < schema.num_columns(); ++i) {
    const parquet::ColumnDescriptor* c = schema.Column(i);
    out += (out.empty() ? "" : ", ") + c->path()->ToDotString() + " (" +
           parquet::TypeToString(c->physical_type()) + ")";
  }
  return out;
}

bool byte_leaf(const parquet::ColumnDescriptor* c) {
  return c->physical_type() == parquet::Type::BYTE_ARRAY && c->max_repetition_level() == 0;
}

bool text_leaf(const parquet::ColumnDescriptor* c) {
  const auto& logical = c->logical_type();
  return (logical != nullptr && logical->is_string()) ||
         c->converted_type() == parquet::ConvertedType::UTF8;
}

// The leaf the images are read from.
int image_leaf(const parquet::SchemaDescriptor& schema, const std::string& wanted,
               const nlohmann::json& features, const std::string& path) {
  const auto leaf = [&](const std::string& name) {
    for (const std::string& n : {name, name + ".bytes"}) {
      const int i = schema.ColumnIndex(n);
      if (i >= 0) return i;
    }
    return -1;
  };
  int found = -1;
  if (!wanted.empty()) {
    found = leaf(wanted);
    if (found < 0)
      throw Refused{path + ": no column '" + wanted + "' to read images from; its columns are " +
                    column_list(schema)};
  } else if (const std::string hf = feature_of_type(features, "Image"); !hf.empty()) {
    found = leaf(hf);
  }
  if (found < 0) {
    for (const char* name : {"image", "img", "jpg", "jpeg", "png", "webp"}) {
      if ((found = leaf(name)) >= 0) break;
    }
  }
  if (found < 0) {
    // The first flat binary column that is not text, or the `bytes` of a struct.
    for (int i = 0; i < schema.num_columns() && found < 0; ++i) {
      const parquet::ColumnDescriptor* c = schema.Column(i);
      if (byte_leaf(c) && !text_leaf(c)) found = i;
    }
  }
  if (found < 0)
    throw Refused{path + ": no column to read images from (a binary column, or a struct with a " +
                  "binary 'bytes' field as Hugging Face's Image); its columns are " +
                  column_list(schema) + ". Name one with image_column"};
  const parquet::ColumnDescriptor* c = schema.Column(found);
  if (c->max_definition_level() > 2)
    throw Refused{path + ": column " + c->path()->ToDotString() + " is nested " +
                  std::to_string(c->max_definition_level()) +
                  " optional levels deep; images are read from a top-level binary column or "
                  "the bytes of a top-level struct"};
  if (!byte_leaf(c))
    throw Refused{path + ": column " + c->path()->ToDotString() + " is " +
                  parquet::TypeToString(c->physical_type()) +
                  (c->max_repetition_level() > 0 ? " in a list" : "") +
                  "; images are read from a flat binary column"};
  return found;
}

ParquetCodec codec_of(arrow::Compression::type t, const std::string& where) {
  switch (t) {
    case arrow::Compression::UNCOMPRESSED:
      return ParquetCodec::kNone;
    case arrow::Compression::SNAPPY:
      return ParquetCodec::kSnappy;
    case arrow::Compression::GZIP:
      return ParquetCodec::kGzip;
    case arrow::Compression::BROTLI:
      return ParquetCodec::kBrotli;
    case arrow::Compression::ZSTD:
      return ParquetCodec::kZstd;
    case arrow::Compression::LZ4:
      return ParquetCodec::kLz4Raw;
    case arrow::Compression::LZ4_HADOOP:
      return ParquetCodec::kLz4;
    default:
      break;
  }
  throw Refused{where + " is compressed with " + arrow::util::Codec::GetCodecAsString(t) +
                ", which stoke does not read (it reads uncompressed, snappy, gzip, brotli, lz4 "
                "and zstd pages)"};
}

const char* encoding_name(parquet::Encoding::type e) {
  switch (e) {
    case parquet::Encoding::BIT_PACKED:
      return "BIT_PACKED";
    case parquet::Encoding::DELTA_BINARY_PACKED:
      return "DELTA_BINARY_PACKED";
    case parquet::Encoding::DELTA_LENGTH_BYTE_ARRAY:
      return "DELTA_LENGTH_BYTE_ARRAY";
    case parquet::Encoding::DELTA_BYTE_ARRAY:
      return "DELTA_BYTE_ARRAY";
    case parquet::Encoding::BYTE_STREAM_SPLIT:
      return "BYTE_STREAM_SPLIT";
    default:
      return "an unknown encoding";
  }
}

ParquetChunkFacts chunk_facts(parquet::ParquetFileReader& reader, int group, int leaf,
                              const std::string& path, std::uint64_t file_size) {
  const auto meta = reader.metadata();
  const std::unique_ptr<parquet::RowGroupMetaData> rg = meta->RowGroup(group);
  const std::unique_ptr<parquet::ColumnChunkMetaData> c = rg->ColumnChunk(leaf);
  const std::string where = path + " (row group " + std::to_string(group) + ", column " +
                            meta->schema()->Column(leaf)->path()->ToDotString() + ")";
  if (!c->file_path().empty())
    throw Refused{where + ": its data is in another file (" + c->file_path() +
                  "), which stoke does not follow"};
  for (const parquet::Encoding::type e : c->encodings()) {
    // (BIT_PACKED and RLE are levels' encodings: Parquet Java lists BIT_PACKED for a flat
    // column's empty repetition levels. A page whose definition levels a worker cannot read is
    // found when it is read, and is corrupt.)
    if (e == parquet::Encoding::PLAIN || e == parquet::Encoding::PLAIN_DICTIONARY ||
        e == parquet::Encoding::RLE || e == parquet::Encoding::RLE_DICTIONARY ||
        e == parquet::Encoding::BIT_PACKED)
      continue;
    throw Refused{where + ": its pages use " + encoding_name(e) +
                  ", which stoke does not read (it reads PLAIN and dictionary-encoded pages); "
                  "rewrite the file with stoke-pack or a writer's defaults"};
  }
  ParquetChunkFacts f;
  f.rows = rg->num_rows();
  f.codec = codec_of(c->compression(), where);
  f.dictionary = c->has_dictionary_page();
  const std::int64_t start = f.dictionary && c->dictionary_page_offset() > 0
                                 ? std::min(c->dictionary_page_offset(), c->data_page_offset())
                                 : c->data_page_offset();
  const std::int64_t bytes = c->total_compressed_size();
  if (f.rows < 0 || start < 0 || bytes <= 0 || static_cast<std::uint64_t>(start) > file_size ||
      static_cast<std::uint64_t>(bytes) > file_size - static_cast<std::uint64_t>(start))
    throw Refused{where + ": its pages lie outside the file (" + std::to_string(bytes) +
                  " bytes at " + std::to_string(start) + " of " + std::to_string(file_size) +
                  "): the file is damaged"};
  // A dictionary page that the footer does not place first is read where data pages start.
  f.dictionary = f.dictionary && start < c->data_page_offset();
  f.start = static_cast<std::uint64_t>(start);
  f.bytes = static_cast<std::uint64_t>(bytes);
  if (const auto index = reader.GetPageIndexReader(); index != nullptr) {
    if (const auto group_index = index->RowGroup(group); group_index != nullptr) {
      if (const auto offsets = group_index->GetOffsetIndex(leaf); offsets != nullptr) {
        for (const parquet::PageLocation& p : offsets->page_locations()) {
          if (p.offset < 0 || p.compressed_page_size <= 0 || p.first_row_index < 0) {
            f.pages.clear();  // (then walked: the walk checks every header)
            break;
          }
          f.pages.push_back({static_cast<std::uint64_t>(p.offset),
                             static_cast<std::uint32_t>(p.compressed_page_size),
                             p.first_row_index});
        }
      }
    }
  }
  return f;
}

// The `path` beside an Image struct's `bytes` leaf (a flat text or binary leaf), or -1.
int path_leaf(const parquet::SchemaDescriptor& schema, int leaf) {
  const std::string bytes = schema.Column(leaf)->path()->ToDotString();
  if (!bytes.ends_with(".bytes")) return -1;
  const int i = schema.ColumnIndex(bytes.substr(0, bytes.size() - 5) + "path");
  if (i < 0 || !byte_leaf(schema.Column(i)) || schema.Column(i)->max_definition_level() > 2)
    return -1;
  return i;
}

// Adds to `facts` the rows of row group `group` (its first row `first_row` in the file) whose
// image bytes are null and whose path is not. A row group whose statistics say its bytes hold no
// null is not read; another's bytes and paths are read through Arrow's column readers (a row
// group of paths holds few bytes).
void add_image_paths(parquet::ParquetFileReader& reader, int group, int leaf, int paths_leaf,
                     std::int64_t first_row, ParquetFileFacts& facts, std::uint64_t& total,
                     const std::string& path) {
  const auto meta = reader.metadata();
  const std::unique_ptr<parquet::ColumnChunkMetaData> c = meta->RowGroup(group)->ColumnChunk(leaf);
  if (const auto stats = c->statistics();
      stats != nullptr && stats->HasNullCount() && stats->null_count() == 0)
    return;
  const std::string where = path + " (row group " + std::to_string(group) + ", column " +
                            meta->schema()->Column(paths_leaf)->path()->ToDotString() + ")";
  const std::shared_ptr<parquet::RowGroupReader> rows = reader.RowGroup(group);
  const auto bytes = std::static_pointer_cast<parquet::ByteArrayReader>(rows->Column(leaf));
  const auto paths = std::static_pointer_cast<parquet::ByteArrayReader>(rows->Column(paths_leaf));
  const auto bytes_def =
      static_cast<std::int16_t>(meta->schema()->Column(leaf)->max_definition_level());
  const auto path_def =
      static_cast<std::int16_t>(meta->schema()->Column(paths_leaf)->max_definition_level());
  constexpr std::int64_t kBatch = 1024;
  std::vector<std::int16_t> bytes_levels(kBatch), path_levels(kBatch);
  std::vector<parquet::ByteArray> bytes_values(kBatch), path_values(kBatch);
  std::int64_t row = first_row;
  while (bytes->HasNext()) {
    std::int64_t values = 0;
    const std::int64_t n =
        bytes->ReadBatch(kBatch, bytes_levels.data(), nullptr, bytes_values.data(), &values);
    if (n <= 0) break;
    const std::int64_t m =
        paths->ReadBatch(n, path_levels.data(), nullptr, path_values.data(), &values);
    if (m != n)
      throw Refused{where + ": holds fewer rows than its image bytes: the file is damaged"};
    std::int64_t value = 0;  // path_values' next
    for (std::int64_t k = 0; k < n; ++k, ++row) {
      if (path_levels[k] != path_def) continue;
      const parquet::ByteArray& p = path_values[value++];
      if (bytes_levels[k] == bytes_def) continue;  // (its bytes are read)
      if (p.len > kMaxImagePathBytes)
        throw Refused{where + ": row " + std::to_string(row) + "'s image path is " +
                      std::to_string(p.len) + " bytes long (at most " +
                      std::to_string(kMaxImagePathBytes) + " are read)"};
      total += p.len;
      if (total > kMaxImagePathTotal)
        throw Refused{where + ": its image paths hold more than " +
                      std::to_string(kMaxImagePathTotal >> 30) + " GiB"};
      facts.image_paths.push_back({row, std::string(reinterpret_cast<const char*>(p.ptr), p.len)});
    }
  }
}

// The leaf the pass-through bytes are read from: `wanted`, or its struct's `bytes`.
int bytes_leaf(const parquet::SchemaDescriptor& schema, const std::string& wanted,
               const std::string& path) {
  int found = schema.ColumnIndex(wanted);
  if (found < 0) found = schema.ColumnIndex(wanted + ".bytes");
  if (found < 0)
    throw Refused{path + ": no column '" + wanted + "' to read bytes_field from; its columns are " +
                  column_list(schema)};
  const parquet::ColumnDescriptor* c = schema.Column(found);
  if (!byte_leaf(c) || c->max_definition_level() > 2)
    throw Refused{path + ": column " + c->path()->ToDotString() + " is " +
                  parquet::TypeToString(c->physical_type()) +
                  (c->max_repetition_level() > 0 ? " in a list" : "") +
                  "; bytes_field reads a top-level binary or string column"};
  return found;
}

// Appends to `sizes` the size of each row's value of `leaf` in row group `group` (a null's: 0).
void add_value_sizes(parquet::ParquetFileReader& reader, int group, int leaf,
                     std::vector<std::uint32_t>& sizes) {
  const auto column =
      std::static_pointer_cast<parquet::ByteArrayReader>(reader.RowGroup(group)->Column(leaf));
  const auto max_def =
      static_cast<std::int16_t>(reader.metadata()->schema()->Column(leaf)->max_definition_level());
  constexpr std::int64_t kBatch = 1024;
  std::vector<std::int16_t> levels(kBatch);
  std::vector<parquet::ByteArray> values(kBatch);
  while (column->HasNext()) {
    std::int64_t got = 0;
    const std::int64_t n = column->ReadBatch(kBatch, levels.data(), nullptr, values.data(), &got);
    if (n <= 0) break;
    std::int64_t value = 0;
    for (std::int64_t k = 0; k < n; ++k)
      sizes.push_back(levels[k] == max_def ? values[value++].len : 0);
  }
}

// Appends the values of `array` (integers, strings, or a dictionary of either) to `facts`.
void add_labels(const arrow::Array& array, ParquetFileFacts& facts, const std::string& where) {
  const std::int64_t n = array.length();
  switch (array.type_id()) {
#define STOKE_INTEGER_LABELS(TYPE)                                          \
  case arrow::TYPE::type_id: {                                              \
    const auto& a = static_cast<const arrow::NumericArray<arrow::TYPE>&>(array); \
    for (std::int64_t i = 0; i < n; ++i)                                    \
      facts.labels.push_back(a.IsNull(i) ? -1 : static_cast<std::int64_t>(a.Value(i))); \
    return;                                                                 \
  }
    STOKE_INTEGER_LABELS(Int8Type)
    STOKE_INTEGER_LABELS(Int16Type)
    STOKE_INTEGER_LABELS(Int32Type)
    STOKE_INTEGER_LABELS(Int64Type)
    STOKE_INTEGER_LABELS(UInt8Type)
    STOKE_INTEGER_LABELS(UInt16Type)
    STOKE_INTEGER_LABELS(UInt32Type)
#undef STOKE_INTEGER_LABELS
    case arrow::Type::UINT64: {
      const auto& a = static_cast<const arrow::UInt64Array&>(array);
      for (std::int64_t i = 0; i < n; ++i) {
        const std::uint64_t v = a.Value(i);
        facts.labels.push_back(a.IsNull(i) ? -1
                               : v > static_cast<std::uint64_t>(INT64_MAX)
                                   ? INT64_MAX
                                   : static_cast<std::int64_t>(v));
      }
      return;
    }
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::STRING_VIEW: {
      facts.text_labels = true;
      for (std::int64_t i = 0; i < n; ++i) {
        if (array.IsNull(i)) {
          facts.label_texts.emplace_back();
          continue;
        }
        if (array.type_id() == arrow::Type::STRING)
          facts.label_texts.emplace_back(static_cast<const arrow::StringArray&>(array).GetView(i));
        else if (array.type_id() == arrow::Type::LARGE_STRING)
          facts.label_texts.emplace_back(
              static_cast<const arrow::LargeStringArray&>(array).GetView(i));
        else
          facts.label_texts.emplace_back(
              static_cast<const arrow::StringViewArray&>(array).GetView(i));
      }
      return;
    }
    case arrow::Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryArray&>(array);
      ParquetFileFacts values;
      add_labels(*d.dictionary(), values, where);
      const arrow::Array& indices = *d.indices();
      ParquetFileFacts at;
      add_labels(indices, at, where);
      facts.text_labels = values.text_labels;
      const auto entries = static_cast<std::int64_t>(values.text_labels ? values.label_texts.size()
                                                                        : values.labels.size());
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t k = at.labels[static_cast<std::size_t>(i)];
        const bool null = k < 0 || array.IsNull(i);
        // (Arrow does not check a dictionary's indices against it as it reads them.)
        if (!null && k >= entries)
          throw Refused{where + ": row " + std::to_string(i) + "'s dictionary index " +
                        std::to_string(k) + " is past its " + std::to_string(entries) +
                        " entries: the file is damaged"};
        if (values.text_labels)
          facts.label_texts.push_back(null ? std::string()
                                           : values.label_texts[static_cast<std::size_t>(k)]);
        else
          facts.labels.push_back(null ? -1 : values.labels[static_cast<std::size_t>(k)]);
      }
      return;
    }
    default:
      break;
  }
  throw Refused{where + " holds " + array.type()->ToString() +
                " values; labels are read from an integer or a string column"};
}

// The top-level field the labels come from, or -1.
int label_field(const arrow::Schema& schema, const std::string& wanted,
                const nlohmann::json& features, const std::string& path,
                std::vector<std::string>& class_names) {
  if (wanted == "none") return -1;
  int field = -1;
  std::string name = wanted;
  if (name.empty()) name = feature_of_type(features, "ClassLabel");
  if (!name.empty()) {
    field = schema.GetFieldIndex(name);
    if (field < 0 && !wanted.empty())
      throw Refused{path + ": no column '" + wanted + "' to read labels from; its columns are " +
                    schema.ToString()};
  }
  if (field < 0) {
    for (const char* n : {"label", "labels", "cls", "class"}) {
      if ((field = schema.GetFieldIndex(n)) >= 0) {
        name = n;
        break;
      }
    }
  }
  if (field < 0) return -1;
  if (const auto f = features.find(name); f != features.end() && f->is_object()) {
    const auto names = f->find("names");
    const auto type = f->find("_type");
    if (type != f->end() && *type == "ClassLabel" && names != f->end() && names->is_array()) {
      for (const auto& v : *names) class_names.push_back(v.is_string() ? v.get<std::string>() : "");
    }
  }
  return field;
}

// The source's bytes as Arrow reads a file: every read through its ReadAt (a failed one, an
// Error, is an IOError with its text).
class SourceFile final : public arrow::io::RandomAccessFile {
 public:
  explicit SourceFile(const ParquetSource& source) : source_(source) {}
  arrow::Status Close() override {
    closed_ = true;
    return arrow::Status::OK();
  }
  bool closed() const override { return closed_; }
  arrow::Result<std::int64_t> Tell() const override { return position_; }
  arrow::Status Seek(std::int64_t position) override {
    if (position < 0) return arrow::Status::Invalid("negative position");
    position_ = position;
    return arrow::Status::OK();
  }
  arrow::Result<std::int64_t> GetSize() override {
    return static_cast<std::int64_t>(source_.size);
  }
  arrow::Result<std::int64_t> Read(std::int64_t n, void* out) override {
    ARROW_ASSIGN_OR_RAISE(const std::int64_t got, ReadAt(position_, n, out));
    position_ += got;
    return got;
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(std::int64_t n) override {
    ARROW_ASSIGN_OR_RAISE(auto buffer, ReadAt(position_, n));
    position_ += buffer->size();
    return buffer;
  }
  arrow::Result<std::int64_t> ReadAt(std::int64_t position, std::int64_t n, void* out) override {
    if (position < 0 || n < 0) return arrow::Status::Invalid("negative read");
    const auto size = static_cast<std::int64_t>(source_.size);
    n = std::min(n, std::max<std::int64_t>(0, size - position));
    if (n == 0) return 0;
    try {
      return static_cast<std::int64_t>(source_.read_at(static_cast<std::uint64_t>(position), out,
                                                       static_cast<std::size_t>(n)));
    } catch (const std::exception& e) {
      return arrow::Status::IOError(e.what());
    }
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(std::int64_t position,
                                                       std::int64_t n) override {
    ARROW_ASSIGN_OR_RAISE(auto buffer, arrow::AllocateResizableBuffer(std::max<std::int64_t>(n, 0)));
    ARROW_ASSIGN_OR_RAISE(const std::int64_t got, ReadAt(position, n, buffer->mutable_data()));
    ARROW_RETURN_NOT_OK(buffer->Resize(got));
    return std::shared_ptr<arrow::Buffer>(std::move(buffer));
  }

 private:
  const ParquetSource& source_;
  std::int64_t position_ = 0;
  bool closed_ = false;
};

ParquetFileFacts read_facts(const ParquetSource& source, const ParquetColumns& columns) {
  const std::string& path = source.name;
  const auto file = std::make_shared<SourceFile>(source);
  const std::int64_t size = static_cast<std::int64_t>(source.size);
  std::unique_ptr<parquet::ParquetFileReader> parquet_reader;
  try {
    parquet_reader = parquet::ParquetFileReader::Open(file);
  } catch (const parquet::ParquetException& e) {
    throw Refused{path + ": not a Parquet file that can be read (" + e.what() + ")"};
  }
  parquet::ParquetFileReader& reader = *parquet_reader;
  const auto meta = reader.metadata();
  const parquet::SchemaDescriptor& schema = *meta->schema();
  const nlohmann::json features = hf_features(*meta);
  ParquetFileFacts facts;
  facts.file_size = static_cast<std::uint64_t>(size);
  const int leaf = image_leaf(schema, columns.image, features, path);
  facts.image_column = schema.Column(leaf)->path()->ToDotString();
  facts.max_def = static_cast<std::uint8_t>(
      std::min<int>(schema.Column(leaf)->max_definition_level(), 255));
  for (int g = 0; g < meta->num_row_groups(); ++g)
    facts.row_groups.push_back(chunk_facts(reader, g, leaf, path, facts.file_size));
  if (!columns.bytes.empty()) {
    const int bytes = bytes_leaf(schema, columns.bytes, path);
    facts.bytes_column = schema.Column(bytes)->path()->ToDotString();
    facts.bytes_max_def = static_cast<std::uint8_t>(schema.Column(bytes)->max_definition_level());
    std::uint64_t rows = 0;
    for (int g = 0; g < meta->num_row_groups(); ++g) {
      facts.bytes_row_groups.push_back(chunk_facts(reader, g, bytes, path, facts.file_size));
      add_value_sizes(reader, g, bytes, facts.bytes_sizes);
      rows += static_cast<std::uint64_t>(facts.bytes_row_groups.back().rows);
      if (facts.bytes_sizes.size() != rows)
        throw Refused{path + " (row group " + std::to_string(g) + "): column " +
                      facts.bytes_column +
                      " holds another count of values than its rows: the "
                      "file is damaged"};
    }
  }
  if (const int paths_leaf = path_leaf(schema, leaf); paths_leaf >= 0) {
    std::int64_t first_row = 0;
    std::uint64_t total = 0;
    for (int g = 0; g < meta->num_row_groups(); ++g) {
      add_image_paths(reader, g, leaf, paths_leaf, first_row, facts, total, path);
      first_row += facts.row_groups[static_cast<std::size_t>(g)].rows;
    }
  }
  // The labels: the one column, through Arrow's own reading of it.
  auto made = parquet::arrow::FileReader::Make(arrow::default_memory_pool(),
                                               std::move(parquet_reader));
  if (!made.ok()) throw Refused{path + ": " + made.status().message()};
  std::shared_ptr<arrow::Schema> arrow_schema;
  if (const auto s = (*made)->GetSchema(&arrow_schema); !s.ok())
    throw Refused{path + ": " + s.message()};
  const int field = label_field(*arrow_schema, columns.label, features, path, facts.class_names);
  if (field >= 0) {
    facts.label_column = arrow_schema->field(field)->name();
    std::shared_ptr<arrow::ChunkedArray> values;
    if (const auto s = (*made)->ReadColumn(field, &values); !s.ok())
      throw Refused{path + ": its label column " + facts.label_column +
                    " cannot be read: " + s.message()};
    const std::string where = path + ": label column " + facts.label_column;
    for (const auto& chunk : values->chunks()) add_labels(*chunk, facts, where);
  } else {
    facts.class_names.clear();
  }
  return facts;
}

// The Hugging Face metadata that makes `datasets` read the file's columns as its features.
std::string hf_metadata(const ParquetWriteRequest& r) {
  nlohmann::json label = {{"dtype", "int64"}, {"_type", "Value"}};
  if (!r.class_names.empty()) label = {{"names", r.class_names}, {"_type", "ClassLabel"}};
  const nlohmann::json features = {{"image", {{"_type", "Image"}}}, {"label", label}};
  return nlohmann::json({{"info", {{"features", features}}}}).dump();
}

void write_file(const ParquetWriteRequest& r) {
  const auto fail = [&](const arrow::Status& s) {
    if (!s.ok()) throw Refused{r.path + ": " + s.ToString()};
  };
  const auto image_type = arrow::struct_(
      {arrow::field("bytes", arrow::binary()), arrow::field("path", arrow::utf8())});
  arrow::BinaryBuilder bytes;
  arrow::StringBuilder names;
  arrow::Int64Builder labels;
  for (std::size_t i = 0; i < r.images.size(); ++i) {
    fail(bytes.Append(r.images[i].data(), static_cast<std::int32_t>(r.images[i].size())));
    fail(names.Append(r.names[i]));
    fail(labels.Append(r.labels[i]));
  }
  std::shared_ptr<arrow::Array> byte_array, name_array, label_array;
  fail(bytes.Finish(&byte_array));
  fail(names.Finish(&name_array));
  fail(labels.Finish(&label_array));
  auto images = arrow::StructArray::Make({byte_array, name_array},
                                         {image_type->field(0), image_type->field(1)});
  if (!images.ok()) fail(images.status());
  const auto schema = arrow::schema({arrow::field("image", image_type), arrow::field("label",
                                                                                     arrow::int64())},
                                    arrow::key_value_metadata({"huggingface"}, {hf_metadata(r)}));
  const auto table = arrow::Table::Make(schema, {*images, label_array});
  // One image a page, stored as it is: a reader reads one image per read.
  const auto properties = parquet::WriterProperties::Builder()
                              .compression(arrow::Compression::UNCOMPRESSED)
                              ->disable_dictionary()
                              ->data_pagesize(1)
                              ->write_batch_size(1)
                              ->enable_write_page_index()
                              ->build();
  const auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  auto out = arrow::io::FileOutputStream::Open(r.path);
  if (!out.ok()) fail(out.status());
  fail(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), *out, r.rows_per_group,
                                  properties, arrow_properties));
  fail((*out)->Close());
}

}  // namespace
}  // namespace stoke::detail

extern "C" __attribute__((visibility("default"))) int stoke_write_parquet_file_v1(
    const stoke::detail::ParquetWriteRequest& request, std::string& error) {
  try {
    stoke::detail::write_file(request);
    return 0;
  } catch (const stoke::detail::Refused& r) {
    error = r.text;
  } catch (const std::exception& e) {
    error = request.path + ": cannot be written as Parquet (" + e.what() + ")";
  } catch (...) {
    error = request.path + ": cannot be written as Parquet";
  }
  return 1;
}

extern "C" __attribute__((visibility("default"))) int stoke_read_parquet_facts_v2(
    const stoke::detail::ParquetSource& source, const stoke::detail::ParquetColumns& columns,
    stoke::detail::ParquetFileFacts& out, std::string& error) {
  const std::string& path = source.name;
  try {
    out = stoke::detail::read_facts(source, columns);
    return 0;
  } catch (const stoke::detail::Refused& r) {
    error = r.text;
  } catch (const parquet::ParquetException& e) {
    error = path + ": not a Parquet file that can be read (" + e.what() + ")";
  } catch (const std::exception& e) {
    error = path + ": cannot be read as Parquet (" + e.what() + ")";
  } catch (...) {
    error = path + ": cannot be read as Parquet";
  }
  return 1;
}
