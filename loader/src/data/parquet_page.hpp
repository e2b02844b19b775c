#pragma once
// One page of a Parquet column chunk, read: its header (Thrift, data/parquet_thrift.hpp), its
// body decompressed (snappy, gzip, brotli, lz4, zstd or none), its definition levels, and its
// values (PLAIN, or dictionary indices) as byte spans, one per row. What a worker needs to hand
// a Parquet dataset's image bytes to the decoders: the footer and everything else is read once,
// at indexing, by Arrow (data/parquet_facts.hpp).
//
// Only flat byte columns are read: a binary column, or the `bytes` field of a struct (Hugging
// Face's Image), optional or required, never repeated (max repetition level 0).
//
// Bounds: a header's sizes are checked against the bytes it came with and kMaxPageBytes before
// anything is allocated; a body decompresses to exactly the size its header says or is corrupt;
// levels, indices and lengths are checked against the page's row count, the dictionary's size
// and the bytes left. A damaged page is BadInput::kCorrupt (never a crash, never a read outside
// the page).
//
// Thread-safety: functions are reentrant; a PageValues is used by one thread at a time.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "data/bad_input.hpp"

namespace stoke::detail {

enum class PageType : std::int32_t { kData = 0, kIndex = 1, kDictionary = 2, kDataV2 = 3 };

// parquet.thrift's CompressionCodec.
enum class ParquetCodec : std::uint8_t {
  kNone = 0,
  kSnappy = 1,
  kGzip = 2,
  kLzo = 3,
  kBrotli = 4,
  kLz4 = 5,  // Hadoop's framing (deprecated): read as LZ4_RAW when it is not framed
  kZstd = 6,
  kLz4Raw = 7,
};
// Whether pages of this codec can be read (every codec but LZO).
bool codec_supported(ParquetCodec codec);
const char* codec_name(ParquetCodec codec);

// parquet.thrift's Encoding, as far as a byte column's pages use it.
inline constexpr std::int32_t kPlainEncoding = 0, kPlainDictionaryEncoding = 2, kRleEncoding = 3,
                              kRleDictionaryEncoding = 8;
// Whether a data page of this value encoding can be read.
bool value_encoding_supported(std::int32_t encoding);

// A page and its decompressed body are at most this large (as a file is: file_reader.hpp).
inline constexpr std::uint32_t kMaxPageBytes = std::uint32_t{1} << 30;
// A page header is at most this large (statistics can make one long; Arrow's own bound on the
// footer's strings is 100 MB, on a page header's 16 MiB).
inline constexpr std::size_t kMaxPageHeaderBytes = std::size_t{16} << 20;
// A page holds at most this many rows (Arrow writes at most 20,000; a page claiming more is not
// given the memory to hold them).
inline constexpr std::uint32_t kMaxPageRows = std::uint32_t{1} << 20;

struct PageHeader {
  PageType type = PageType::kData;
  std::uint32_t header_size = 0;        // the Thrift header's own bytes
  std::uint32_t compressed_size = 0;    // the body's, after the header
  std::uint32_t uncompressed_size = 0;  // the body's, decompressed (V2: levels included)
  std::uint32_t values = 0;             // a data page's rows (nulls included); a dictionary's entries
  std::int32_t encoding = kPlainEncoding;
  std::int32_t def_encoding = kRleEncoding;  // V1 pages
  std::uint32_t def_length = 0;  // V2 pages: the level bytes before the values, never compressed
  std::uint32_t rep_length = 0;
  bool compressed = true;  // V2 pages: whether the values are compressed

  std::uint64_t page_size() const { return std::uint64_t{header_size} + compressed_size; }
  bool data() const { return type == PageType::kData || type == PageType::kDataV2; }
};

enum class HeaderParse { kOk, kShort, kBad };
// Parses the page header at data[0, size). kShort: it may be a header that runs past `size`
// (read more, up to kMaxPageHeaderBytes); kBad: it is not one, or its sizes are negative or
// past kMaxPageBytes.
HeaderParse parse_page_header(const std::uint8_t* data, std::size_t size, PageHeader& out);

// How a column chunk's values lie.
struct ChunkLayout {
  ParquetCodec codec = ParquetCodec::kNone;
  std::uint8_t max_def = 0;  // 0: required (no definition levels)
};

struct ByteSpan {
  const std::uint8_t* data = nullptr;  // null: the row's value is null
  std::uint32_t size = 0;
};

// A decoded page: a dictionary page's entries, or a data page's rows (each row's span points into
// this page's body, or into its dictionary's, which the caller keeps alive).
class PageValues {
 public:
  // Decodes the page whose header is `h` and whose body is page[body_at, body_at +
  // h.compressed_size) (kCorrupt when `page` is shorter). An uncompressed page's values are
  // read where they are: `page` is moved from then. `dictionary`: the chunk's decoded dictionary
  // page, for a dictionary-encoded data page (kept while this page is: its rows point into it).
  BadInput decode(const PageHeader& h, std::vector<std::uint8_t>&& page, std::size_t body_at,
                  const ChunkLayout& layout, std::shared_ptr<const PageValues> dictionary);
  std::size_t rows() const { return rows_.size(); }
  const ByteSpan& row(std::size_t i) const { return rows_[i]; }
  // Bytes held (the body and the spans), for a cache's budget.
  std::size_t held_bytes() const {
    return body_.capacity() + rows_.capacity() * sizeof(ByteSpan);
  }

 private:
  std::vector<std::uint8_t> body_;  // decompressed (or the page as read)
  std::shared_ptr<const PageValues> dictionary_;
  std::vector<ByteSpan> rows_;
  std::vector<std::uint8_t> defined_;  // scratch: per row, whether its value is there
  std::vector<std::uint32_t> indices_;  // scratch: dictionary indices
};

// A page's body decompresses to at most this many times its compressed bytes, plus 1 MiB
// (gzip's own bound is 1,032x, LZ4's 255x; images do not come near either).
inline constexpr std::size_t kMaxExpansion = 4096;
// Whether src[0, n) of `codec` can decompress to `size` bytes: snappy's stated length, a zstd
// frame's stated size, else within kMaxExpansion. Checked before a buffer of `size` is made.
bool plausible_size(ParquetCodec codec, const std::uint8_t* src, std::size_t n, std::size_t size);

// Decompresses src[0, n) (codec `codec`) into exactly `size` bytes at dst: false when the bytes
// are not that codec's or do not decompress to exactly that size.
bool decompress_page(ParquetCodec codec, const std::uint8_t* src, std::size_t n, std::uint8_t* dst,
                     std::size_t size);

// Decodes `count` values of Parquet's RLE / bit-packed hybrid (levels, dictionary indices) of
// `bit_width` bits from data[0, n) into out (resized to count): false when they run past n or
// bit_width is over 32. Values past `count` in a last bit-packed group are ignored.
bool decode_hybrid(const std::uint8_t* data, std::size_t n, int bit_width, std::size_t count,
                   std::uint32_t* out);

}  // namespace stoke::detail
