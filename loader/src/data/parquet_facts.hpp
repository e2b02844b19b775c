#pragma once
// What indexing needs of a Parquet file: its image column's chunks (codec, levels, where their
// pages are), its labels and its class names. Read from the file's footer, page index and label
// column by Apache Arrow's Parquet reader, which lives in a library of its own
// (libstoke_parquet.so, data/parquet_arrow.cpp) loaded the first time a Parquet dataset is
// indexed: a process that reads no Parquet never loads Arrow, and stoke-worker never does (it
// reads pages itself, data/parquet_page.hpp).
//
// Thread-safety: read_parquet_facts is reentrant (the library is loaded once, under a
// std::call_once).

#include <cstdint>
#include <string>
#include <vector>

#include "data/parquet_page.hpp"
#include "data/tar_index.hpp"

namespace stoke::detail {

// A data page, as the file's offset index gives it.
struct ParquetPageLocation {
  std::uint64_t offset = 0;  // of its header, in the file
  std::uint32_t size = 0;    // header and body
  std::int64_t first_row = 0;  // within the row group
};

// One row group's chunk of the image column.
struct ParquetChunkFacts {
  std::int64_t rows = 0;
  std::uint64_t start = 0;  // its first page (the dictionary page, when it has one)
  std::uint64_t bytes = 0;  // its pages, headers included
  bool dictionary = false;  // whether its first page is a dictionary page
  ParquetCodec codec = ParquetCodec::kNone;
  // From the offset index, where the writer wrote one: its data pages. Empty: the pages are
  // found by walking their headers from `start`.
  std::vector<ParquetPageLocation> pages;
};

// Which columns to read: "" finds them (the Hugging Face metadata's Image and ClassLabel
// features first, then by name and type: see docs/USAGE.md); "none" for the label reads none.
struct ParquetColumns {
  std::string image;
  std::string label;
  std::string bytes;  // the pass-through bytes' (bytes_field), or "": none read
};

struct ParquetFileFacts {
  std::uint64_t file_size = 0;
  std::string image_column;  // the leaf read, dotted: "image.bytes"
  std::string label_column;  // "" when there is none
  std::uint8_t max_def = 0;  // the image leaf's
  std::vector<ParquetChunkFacts> row_groups;
  // Per row, where the labels are integers; -1 for a null one.
  std::vector<std::int64_t> labels;
  // Per row, where the labels are strings (classes then sort them, as folders' names do); a
  // null one is "" and gets label -1.
  std::vector<std::string> label_texts;
  bool text_labels = false;
  // From the Hugging Face metadata's ClassLabel feature of the label column: label i's name.
  std::vector<std::string> class_names;
  // The rows whose image bytes are null and whose Image struct holds a path (Hugging Face's
  // Image feature of files not embedded): the row, in the file, and the path as written.
  struct ImagePath {
    std::int64_t row = 0;
    std::string path;
  };
  std::vector<ImagePath> image_paths;
  // When ParquetColumns::bytes names one: the pass-through bytes' leaf, its chunk in each row
  // group, and each row's value's size (a null's: 0).
  std::string bytes_column;
  std::uint8_t bytes_max_def = 0;
  std::vector<ParquetChunkFacts> bytes_row_groups;
  std::vector<std::uint32_t> bytes_sizes;
};

// The longest image path a row may hold, and the most path bytes a file may hold in all: a
// file naming more is refused (a page of a few KB decompresses into gigabytes of them).
inline constexpr std::size_t kMaxImagePathBytes = 4096;
inline constexpr std::uint64_t kMaxImagePathTotal = std::uint64_t{1} << 31;

// A Parquet file as the reader sees it: its name for messages (a URL redacted), its size, and
// its bytes (a local file's pread, a remote one's ranged GETs; ReadAt may throw Error).
struct ParquetSource {
  std::string name;
  std::uint64_t size = 0;
  ReadAt read_at;
};

// Reads `source`. Throws ConfigError naming the file for one that is not Parquet, has no column
// to read images from (naming the columns it has), has an image column that is not a flat byte
// column or uses an encoding or codec the workers cannot read, cannot be read (the read's own
// error), or when libstoke_parquet cannot be loaded (saying why and what to install).
ParquetFileFacts read_parquet_facts(const ParquetSource& source, const ParquetColumns& columns);

// One Parquet file to write (stoke-pack): an image column as Hugging Face's Image struct
// {bytes, path} and an int64 label column, with the Hugging Face metadata that names them
// (ClassLabel with `class_names` when there are any), in row groups of `rows_per_group`, each
// image a page of its own, uncompressed and plain (a reader reads one image per read; JPEG does
// not compress), with an offset index.
struct ParquetWriteRequest {
  std::string path;
  std::vector<std::vector<std::uint8_t>> images;
  std::vector<std::string> names;  // each image's `path` field
  std::vector<std::int64_t> labels;
  std::vector<std::string> class_names;
  std::int64_t rows_per_group = 100;
};

// Writes the file (REQUIRES: as many names and labels as images). Throws Error saying why it
// cannot (ConfigError when libstoke_parquet cannot be loaded).
void write_parquet_file(const ParquetWriteRequest& request);

// The library's entry points (what data/parquet_arrow.cpp defines): 0 and `out` filled
// (the file written), or 1 and `error` set.
using ReadParquetFactsFn = int (*)(const ParquetSource& source, const ParquetColumns& columns,
                                   ParquetFileFacts& out, std::string& error);
using WriteParquetFileFn = int (*)(const ParquetWriteRequest& request, std::string& error);
inline constexpr const char* kParquetFactsSymbol = "stoke_read_parquet_facts_v2";
inline constexpr const char* kParquetWriteSymbol = "stoke_write_parquet_file_v1";
inline constexpr const char* kParquetLibrary = "libstoke_parquet.so";

}  // namespace stoke::detail
