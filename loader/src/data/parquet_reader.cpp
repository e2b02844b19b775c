#include "data/parquet_reader.hpp"

#include <algorithm>

namespace stoke::detail {

BadInput ParquetRows::read(const DatasetView& view, std::int64_t i, std::uint32_t column,
                           const ReadRange& read_range, ByteSpan& out) {
  const DatasetView::ParquetPlace at = view.parquet_place(i, column);
  const ParquetChunkRecord& chunk = view.parquet_chunk(at.source, column);
  const ChunkLayout layout{static_cast<ParquetCodec>(chunk.codec), chunk.max_def};
  const auto row_of = [&](const PageValues& values) {
    out = values.row(at.row);
    return out.data == nullptr ? BadInput::kMissing : BadInput::kNone;
  };
  // A kept data page keeps its dictionary: no look at the dictionary first.
  if (const std::shared_ptr<const PageValues> values = kept(at.page)) return row_of(*values);
  BadInput why = BadInput::kNone;
  std::shared_ptr<const PageValues> dictionary;
  if (chunk.dictionary_size > 0) {
    const std::uint64_t record = at.source * view.parquet_columns() + column;
    dictionary = page(kDictionary | record, {chunk.dictionary_offset, chunk.dictionary_size}, 0,
                      layout, nullptr, read_range, why);
    if (dictionary == nullptr) return why;
  }
  const ParquetPageRecord& p = view.parquet_page(at.page);
  const std::shared_ptr<const PageValues> values =
      page(at.page, {p.offset, p.size}, at.rows, layout, dictionary, read_range, why);
  if (values == nullptr) return why;
  return row_of(*values);
}

BadInput ParquetRows::read_image(const DatasetView& view, std::int64_t i,
                                 const ReadRange& read_range, FileReader& files,
                                 std::vector<std::uint8_t>& file, std::string& file_path,
                                 ByteSpan& out) {
  const BadInput r = read(view, i, kParquetImage, read_range, out);
  file_path.clear();  // (after the read: read_range may use the same string)
  if (r != BadInput::kMissing) return r;
  file_path = view.parquet_image_file(i);
  if (file_path.empty()) return r;
  if (const BadInput f = files.read(file_path, {}, file); f != BadInput::kNone) return f;
  out = {file.data(), static_cast<std::uint32_t>(file.size())};  // (at most kMaxFileBytes)
  return BadInput::kNone;
}

std::shared_ptr<const PageValues> ParquetRows::kept(std::uint64_t key) {
  ++clock_;
  for (Kept& k : kept_) {
    if (k.key != key) continue;
    k.last_use = clock_;
    return k.values;
  }
  return nullptr;
}

std::shared_ptr<const PageValues> ParquetRows::page(std::uint64_t key, const ByteRange& where,
                                                    std::uint32_t rows, const ChunkLayout& layout,
                                                    std::shared_ptr<const PageValues> dictionary,
                                                    const ReadRange& read_range, BadInput& why) {
  if (std::shared_ptr<const PageValues> values = kept(key)) return values;
  why = read_range(where, bytes_);
  if (why != BadInput::kNone) return nullptr;
  PageHeader h;
  // (The index holds the page's size, header and body: a header that does not parse within it,
  // or a body that does not fill it, is not the page the index was built from.)
  if (parse_page_header(bytes_.data(), bytes_.size(), h) != HeaderParse::kOk ||
      h.page_size() != bytes_.size() ||
      ((key & kDictionary) != 0 ? h.type != PageType::kDictionary : !h.data())) {
    why = BadInput::kCorrupt;
    return nullptr;
  }
  auto values = std::make_shared<PageValues>();
  why = values->decode(h, std::move(bytes_), h.header_size, layout, std::move(dictionary));
  bytes_.clear();
  ++decoded_;
  if (why == BadInput::kNone && rows > 0 && values->rows() != rows) why = BadInput::kCorrupt;
  if (why != BadInput::kNone) return nullptr;
  keep(key, values);
  return values;
}

void ParquetRows::keep(std::uint64_t key, std::shared_ptr<const PageValues> values) {
  held_ += values->held_bytes();
  kept_.push_back({key, std::move(values), clock_});
  // The least recently used go first; the page just read stays whatever its size.
  while (held_ > budget_ && kept_.size() > 1) {
    const auto oldest = std::min_element(
        kept_.begin(), kept_.end() - 1,
        [](const Kept& a, const Kept& b) { return a.last_use < b.last_use; });
    held_ -= oldest->values->held_bytes();
    kept_.erase(oldest);
  }
}

}  // namespace stoke::detail
