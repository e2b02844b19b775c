// libFuzzer target: a Parquet column chunk's pages as a worker reads them (data/parquet_page.hpp)
// and as indexing walks them (data/parquet_dataset.hpp's chunk_pages). The input: one byte of
// layout (codec: bits 0-2, maximum definition level: bits 3-4, whether the chunk starts with a
// dictionary page: bit 5), then the chunk's bytes: page headers (Thrift) and bodies. The seeds are
// the image column chunks of files pyarrow, polars, DuckDB and datasets wrote
// (tests/fuzz/make_parser_seeds.py).
//
// Checks beyond the sanitizers:
//   * every header parse is kOk, kShort or kBad, and an accepted header's page fits its sizes;
//   * the walk accepts or names why not, never reading outside the chunk;
//   * a decoded page has the rows its header says, each row's bytes inside the page's body or
//     its dictionary's (the sanitizers see every byte touched).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "data/parquet_dataset.hpp"
#include "data/parquet_page.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace stoke::detail;

// Touches every byte of every row (an out-of-bounds span is the sanitizers' to find).
std::uint64_t touch(const PageValues& v) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < v.rows(); ++i) {
    const ByteSpan& s = v.row(i);
    for (std::uint32_t k = 0; k < s.size; ++k) sum += s.data[k];
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t layout_byte = data[0];
  ++data;
  --size;
  ChunkLayout layout;
  layout.codec = static_cast<ParquetCodec>(layout_byte & 7);
  layout.max_def = static_cast<std::uint8_t>((layout_byte >> 3) & 3);
  if (!codec_supported(layout.codec) || layout.max_def > 2) return 0;

  // The worker's side: page after page, each decoded (a dictionary page first keeps its values
  // for the data pages after it).
  std::shared_ptr<const PageValues> dictionary;
  std::size_t at = 0;
  volatile std::uint64_t sink = 0;
  while (at < size) {
    PageHeader h;
    const HeaderParse r = parse_page_header(data + at, size - at, h);
    STOKE_FUZZ_CHECK(r == HeaderParse::kOk || r == HeaderParse::kShort || r == HeaderParse::kBad);
    if (r != HeaderParse::kOk) break;
    STOKE_FUZZ_CHECK(h.header_size > 0 && h.header_size <= size - at);
    if (h.page_size() > size - at) break;
    std::vector<std::uint8_t> page(data + at, data + at + h.page_size());
    auto values = std::make_shared<PageValues>();
    const BadInput got = values->decode(h, std::move(page), h.header_size, layout, dictionary);
    if (got == BadInput::kNone) {
      STOKE_FUZZ_CHECK(values->rows() == h.values);
      sink = sink + touch(*values);
      if (h.type == PageType::kDictionary) dictionary = values;
    }
    at += h.page_size();
  }

  // The index's side: the walk over the same bytes as one chunk.
  ParquetChunkFacts chunk;
  chunk.start = 0;
  chunk.bytes = size;
  chunk.dictionary = (layout_byte & 0x20) != 0;
  chunk.rows = 0;
  chunk.codec = layout.codec;
  ChunkPages pages;
  const std::string why = chunk_pages(
      [&](std::uint64_t offset, void* dst, std::size_t n) {
        STOKE_FUZZ_CHECK(offset <= size && n <= size - offset, "a read outside the chunk");
        std::memcpy(dst, data + offset, n);
        return n;
      },
      chunk, pages);
  for (const ParquetPageLocation& p : pages.pages)
    STOKE_FUZZ_CHECK(p.offset <= size && p.size <= size - p.offset);
  (void)why;
  return 0;
}
