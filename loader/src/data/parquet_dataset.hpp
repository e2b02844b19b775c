#pragma once
// Parquet datasets: which files a data string names, and their index. A sample is a row; a
// source (the plan's unit of locality, as a tar shard is) is a row group; the index keeps per
// row group its image column chunk's record and its data pages (from the file's offset index,
// or by walking the page headers once), and per row only the label. Workers read the page that
// holds a row (data/parquet_reader.hpp).
//
// Thread-safety: functions are reentrant.

#include <optional>
#include <string>
#include <vector>

#include "data/dataset_index.hpp"
#include "data/parquet_facts.hpp"
#include "data/tar_index.hpp"
#include "remote/remote.hpp"
#include "stoke/options.hpp"

namespace stoke::detail {

// The Parquet files `data` names, sorted where a pattern or folder gives several: a .parquet
// file; names, brace ranges ("train-{00000..00041}-of-00042.parquet") and * ? [ ] globs,
// several separated by commas; a folder holding .parquet files (in it, or under data/, a split's
// folder or default/, as Hugging Face lays them out; then every one at any depth), of which
// those of `split` when their names say splits (a file named
// "train-...", "train_..." or "train.parquet", or in a folder named "train"); or a list file
// naming one per line. std::nullopt when `data` names no Parquet file (another kind of
// dataset). Also URLs (http://, https://, s3://) of .parquet files, and Hugging Face Hub paths
// (hf://datasets/ORG/NAME[@REVISION][/PATH], data/hf_hub.hpp: PATH a file, a glob, or a folder
// whose files of `split` are read; the Hub is asked under `remote`). Throws ConfigError for a
// pattern or folder that matches none (naming it), or a folder with files of other splits only;
// Error when the Hub cannot be asked.
std::optional<std::vector<std::string>> parquet_files(const std::string& data, Split split,
                                                      const RemotePolicy& remote = {});

// The data pages of one chunk and its dictionary page, as the workers read them.
struct ChunkPages {
  std::uint64_t dictionary_offset = 0;
  std::uint32_t dictionary_size = 0;  // 0: none
  std::vector<ParquetPageLocation> pages;
};

// Finds the pages of `chunk` (`chunk.pages` when the offset index gave them, else by walking the
// headers from chunk.start), reading through `read_at`, and checks them: every page within the
// chunk, at most kMaxPageBytes and kMaxPageRows, rows adding up to the row group's, value
// encodings the workers read. "" when they hold, else why not.
std::string chunk_pages(const ReadAt& read_at, const ParquetChunkFacts& chunk, ChunkPages& out);

// The rows a worker decodes at once, on average: a data page's, or a whole row group's where its
// images sit in a dictionary page (pyarrow's and polars' defaults put every image of a row group
// there). REQUIRES: view.parquet().
double rows_per_decoded_page(const DatasetView& view);

// The decoded pages each worker keeps of a Parquet dataset (REQUIRES: view.parquet()): enough for
// the row groups a shuffle window reads at once (a quarter more than shuffle_window times the
// largest row group's pages as stored), or one row group without shuffling; kMinPageCacheBytes
// under a full shuffle (shuffle_window 0: rows of a page are read far apart, and more memory
// would not make them nearer); within [kMinPageCacheBytes, kMaxPageCacheBytes].
std::size_t page_cache_bytes(const DatasetView& view, bool shuffle, int shuffle_window);
inline constexpr std::size_t kMinPageCacheBytes = std::size_t{32} << 20;
inline constexpr std::size_t kMaxPageCacheBytes = std::size_t{1} << 30;

// The index of `files` (data/parquet_facts.hpp reads each one's footer and labels). Throws
// ConfigError for a file that cannot be read as an image dataset (naming it and why), DataError
// for a label not below options.max_classes (naming the file, row group and row).
DatasetIndex index_parquet(const std::vector<std::string>& files, const IndexOptions& options);

}  // namespace stoke::detail
