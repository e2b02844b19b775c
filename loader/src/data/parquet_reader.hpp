#pragma once
// A worker's reads of a Parquet dataset's rows: the data page that holds a row (and its chunk's
// dictionary page, for a dictionary-encoded one) is read, decompressed and decoded once
// (data/parquet_page.hpp), then kept while the rows after it are read from it, within a budget
// the training process sets (data/parquet_dataset.hpp's page_cache_bytes: what a shuffle window's
// row groups take): the plan reads a few row groups at a time (shuffle_window), so most rows are
// found in a page already decoded. The image bytes a read gives point into the kept page:
// no copy beyond the decompression.
//
// Thread-safety: one ParquetRows per thread (a ChunkRunner's).

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "data/bad_input.hpp"
#include "data/dataset_view.hpp"
#include "data/file_reader.hpp"
#include "data/parquet_page.hpp"

namespace stoke::detail {

class ParquetRows {
 public:
  // Keeps at most `budget` bytes of decoded pages (a page being read is kept whatever its size).
  explicit ParquetRows(std::size_t budget) : budget_(budget) {}

  // Reads `range` of the sample's file (its local copy first, as any sample's bytes are read)
  // into the vector: kNone, or why it cannot.
  using ReadRange = std::function<BadInput(const ByteRange&, std::vector<std::uint8_t>&)>;

  // The value of sample i of `view` in `column` (REQUIRES: view.parquet(); kParquetImage: its
  // image's bytes, kParquetBytes: its pass-through bytes'), valid until the next read: kNone and
  // `out` set; kMissing for a null value; kCorrupt for a page that cannot be read as its header
  // and the index say; or the read's own verdict.
  BadInput read(const DatasetView& view, std::int64_t i, std::uint32_t column,
                const ReadRange& read_range, ByteSpan& out);

  // Sample i's image: its bytes in its page (read(), kParquetImage; `file_path` ""), or, where
  // the value is null and the row names an image file (an Image struct's path:
  // DatasetView::parquet_image_file), that file read whole through `files` into `file`, `out`
  // over it and `file_path` its path. kMissing for a null with no file; else the reads' verdicts.
  BadInput read_image(const DatasetView& view, std::int64_t i, const ReadRange& read_range,
                      FileReader& files, std::vector<std::uint8_t>& file, std::string& file_path,
                      ByteSpan& out);

  // Pages decoded so far (for tests: a row in a kept page decodes nothing).
  std::uint64_t pages_decoded() const { return decoded_; }

 private:
  struct Kept {
    std::uint64_t key = 0;  // a data page's number; a chunk's dictionary: kDictionary | its record
    std::shared_ptr<const PageValues> values;
    std::uint64_t last_use = 0;
  };
  static constexpr std::uint64_t kDictionary = std::uint64_t{1} << 63;

  // The kept page at `key` (marked used now), or null.
  std::shared_ptr<const PageValues> kept(std::uint64_t key);
  // The decoded page at `key`, from the kept ones or read now; null and `why` set on failure.
  std::shared_ptr<const PageValues> page(std::uint64_t key, const ByteRange& where,
                                         std::uint32_t rows, const ChunkLayout& layout,
                                         std::shared_ptr<const PageValues> dictionary,
                                         const ReadRange& read_range, BadInput& why);
  void keep(std::uint64_t key, std::shared_ptr<const PageValues> values);

  std::vector<Kept> kept_;  // a few pages: searched in order
  std::size_t budget_;
  std::size_t held_ = 0;
  std::uint64_t clock_ = 0;
  std::uint64_t decoded_ = 0;
  std::vector<std::uint8_t> bytes_;  // the page as read
};

}  // namespace stoke::detail
