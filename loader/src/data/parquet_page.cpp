#include "data/parquet_page.hpp"

#include <brotli/decode.h>
#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "common/align.hpp"
#include "data/parquet_thrift.hpp"

namespace stoke::detail {

bool codec_supported(ParquetCodec codec) {
  return codec <= ParquetCodec::kLz4Raw && codec != ParquetCodec::kLzo;
}

const char* codec_name(ParquetCodec codec) {
  static const char* const kNames[] = {"uncompressed", "snappy", "gzip", "lzo",
                                       "brotli",       "lz4",    "zstd", "lz4_raw"};
  return codec <= ParquetCodec::kLz4Raw ? kNames[static_cast<int>(codec)] : "unknown";
}

bool value_encoding_supported(std::int32_t encoding) {
  return encoding == kPlainEncoding || encoding == kPlainDictionaryEncoding ||
         encoding == kRleDictionaryEncoding;
}

namespace {

// A size field: 0..kMaxPageBytes, else the header is bad.
bool page_size(std::int64_t v, std::uint32_t& out) {
  if (v < 0 || v > kMaxPageBytes) return false;
  out = static_cast<std::uint32_t>(v);
  return true;
}

// The fields of DataPageHeader (1), DictionaryPageHeader (2) or DataPageHeaderV2 (3) that a
// byte column's reader needs; the rest are skipped.
bool read_page_kind(ThriftReader& r, int kind, PageHeader& h) {
  std::int16_t id = 0;
  ThriftType t{};
  bool have_values = false;
  while (r.field(id, t)) {
    const bool integer = t == ThriftType::kI32;
    std::int64_t v = 0;
    if (integer) v = r.i32();
    if (!integer) {
      if (kind == 3 && id == 7 && (t == ThriftType::kTrue || t == ThriftType::kFalse))
        h.compressed = t == ThriftType::kTrue;
      else
        r.skip(t);
      continue;
    }
    if (id == 1) {
      if (!page_size(v, h.values)) return false;
      have_values = true;
    } else if (id == (kind == 3 ? 4 : 2)) {
      h.encoding = static_cast<std::int32_t>(v);
    } else if (kind == 1 && id == 3) {
      h.def_encoding = static_cast<std::int32_t>(v);
    } else if (kind == 3 && id == 5) {
      if (!page_size(v, h.def_length)) return false;
    } else if (kind == 3 && id == 6) {
      if (!page_size(v, h.rep_length)) return false;
    }
  }
  return r.ok() && have_values;
}

}  // namespace

HeaderParse parse_page_header(const std::uint8_t* data, std::size_t size, PageHeader& out) {
  ThriftReader r(data, std::min(size, kMaxPageHeaderBytes));
  PageHeader h;
  std::int16_t id = 0;
  ThriftType t{};
  bool have_type = false, have_sizes[2] = {false, false}, have_kind = false;
  while (r.field(id, t)) {
    if (t == ThriftType::kI32 && id >= 1 && id <= 3) {
      const std::int32_t v = r.i32();
      if (id == 1) {
        if (v < 0 || v > static_cast<std::int32_t>(PageType::kDataV2)) return HeaderParse::kBad;
        h.type = static_cast<PageType>(v);
        have_type = true;
      } else if (!page_size(v, id == 2 ? h.uncompressed_size : h.compressed_size)) {
        return HeaderParse::kBad;
      } else {
        have_sizes[id - 2] = true;
      }
    } else if (t == ThriftType::kStruct && (id == 5 || id == 7 || id == 8)) {
      if (!read_page_kind(r, id == 5 ? 1 : id == 7 ? 2 : 3, h)) {
        if (r.ok()) return HeaderParse::kBad;  // (a size or count out of bounds)
        break;                                 // (cut short, or not Thrift: below)
      }
      have_kind = true;
    } else {
      r.skip(t);
    }
  }
  if (!r.ok()) {
    return r.starved() && size < kMaxPageHeaderBytes ? HeaderParse::kShort : HeaderParse::kBad;
  }
  if (!have_type || !have_sizes[0] || !have_sizes[1]) return HeaderParse::kBad;
  if (h.data() || h.type == PageType::kDictionary) {
    if (!have_kind) return HeaderParse::kBad;
  }
  // V2's levels lie in the body, uncompressed, before the values.
  if (h.type == PageType::kDataV2 &&
      (std::uint64_t{h.def_length} + h.rep_length > h.compressed_size ||
       std::uint64_t{h.def_length} + h.rep_length > h.uncompressed_size))
    return HeaderParse::kBad;
  h.header_size = static_cast<std::uint32_t>(r.offset(data));
  out = h;
  return HeaderParse::kOk;
}

namespace {

bool inflate_gzip(const std::uint8_t* src, std::size_t n, std::uint8_t* dst, std::size_t size) {
  z_stream s{};
  if (inflateInit2(&s, 15 + 32) != Z_OK) return false;  // gzip or zlib framing
  s.next_in = const_cast<std::uint8_t*>(src);
  s.avail_in = static_cast<uInt>(n);
  s.next_out = dst;
  s.avail_out = static_cast<uInt>(size);
  const int r = inflate(&s, Z_FINISH);
  const bool ok = r == Z_STREAM_END && s.total_out == size;
  inflateEnd(&s);
  return ok;
}

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

// Hadoop's LZ4 framing: blocks of (uncompressed length, compressed length, raw LZ4 bytes), both
// lengths big-endian 32-bit. False when the bytes are not framed so.
bool lz4_hadoop(const std::uint8_t* src, std::size_t n, std::uint8_t* dst, std::size_t size) {
  std::size_t in = 0, out = 0;
  while (in < n) {
    if (n - in < 8) return false;
    const std::uint32_t raw = big_endian_u32(src + in), packed = big_endian_u32(src + in + 4);
    in += 8;
    if (packed > n - in || raw > size - out) return false;
    const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(src + in),
                                        reinterpret_cast<char*>(dst + out),
                                        static_cast<int>(packed), static_cast<int>(raw));
    if (got < 0 || static_cast<std::uint32_t>(got) != raw) return false;
    in += packed;
    out += raw;
  }
  return out == size;
}

bool lz4_raw(const std::uint8_t* src, std::size_t n, std::uint8_t* dst, std::size_t size) {
  const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(src),
                                      reinterpret_cast<char*>(dst), static_cast<int>(n),
                                      static_cast<int>(size));
  return got >= 0 && static_cast<std::size_t>(got) == size;
}

}  // namespace

bool decompress_page(ParquetCodec codec, const std::uint8_t* src, std::size_t n, std::uint8_t* dst,
                     std::size_t size) {
  if (n > kMaxPageBytes || size > kMaxPageBytes) return false;
  switch (codec) {
    case ParquetCodec::kNone:
      if (n != size) return false;
      if (n > 0) std::memcpy(dst, src, n);
      return true;
    case ParquetCodec::kSnappy: {
      std::size_t claimed = 0;
      if (snappy_uncompressed_length(reinterpret_cast<const char*>(src), n, &claimed) !=
              SNAPPY_OK ||
          claimed != size)
        return false;
      std::size_t got = size;
      return snappy_uncompress(reinterpret_cast<const char*>(src), n,
                               reinterpret_cast<char*>(dst), &got) == SNAPPY_OK &&
             got == size;
    }
    case ParquetCodec::kGzip:
      return inflate_gzip(src, n, dst, size);
    case ParquetCodec::kBrotli: {
      std::size_t got = size;
      return BrotliDecoderDecompress(n, src, &got, dst) == BROTLI_DECODER_RESULT_SUCCESS &&
             got == size;
    }
    case ParquetCodec::kLz4:
      return lz4_hadoop(src, n, dst, size) || lz4_raw(src, n, dst, size);
    case ParquetCodec::kLz4Raw:
      return lz4_raw(src, n, dst, size);
    case ParquetCodec::kZstd: {
      // A frame that says its size must say this one (one that does not is decoded into the
      // page's bytes, never past them); the decoder's window is bounded by zstd's default limit.
      const unsigned long long claimed = ZSTD_getFrameContentSize(src, n);
      if (claimed == ZSTD_CONTENTSIZE_ERROR) return false;
      if (claimed != ZSTD_CONTENTSIZE_UNKNOWN && claimed != size) return false;
      const std::size_t got = ZSTD_decompress(dst, size, src, n);
      return ZSTD_isError(got) == 0 && got == size;
    }
    case ParquetCodec::kLzo:
      break;
  }
  return false;
}

bool plausible_size(ParquetCodec codec, const std::uint8_t* src, std::size_t n, std::size_t size) {
  switch (codec) {
    case ParquetCodec::kSnappy: {
      std::size_t claimed = 0;
      return snappy_uncompressed_length(reinterpret_cast<const char*>(src), n, &claimed) ==
                 SNAPPY_OK &&
             claimed == size;
    }
    case ParquetCodec::kZstd: {
      const unsigned long long claimed = ZSTD_getFrameContentSize(src, n);
      if (claimed == ZSTD_CONTENTSIZE_ERROR) return false;
      if (claimed != ZSTD_CONTENTSIZE_UNKNOWN) return claimed == size;
      break;
    }
    default:
      break;
  }
  return size <= kMaxExpansion * n + (std::size_t{1} << 20);
}

bool decode_hybrid(const std::uint8_t* data, std::size_t n, int bit_width, std::size_t count,
                   std::uint32_t* out) {
  if (bit_width < 0 || bit_width > 32) return false;
  const std::size_t value_bytes = (static_cast<std::size_t>(bit_width) + 7) / 8;
  std::size_t at = 0, done = 0;
  while (done < count) {
    // The run's header: a ULEB128 varint, at most 5 bytes for a 32-bit one.
    std::uint64_t h = 0;
    int shift = 0;
    for (;; shift += 7) {
      if (at == n || shift > 28) return false;
      const std::uint8_t b = data[at++];
      h |= std::uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80u) == 0) break;
    }
    if ((h & 1) == 0) {  // a run: one value repeated h / 2 times
      const std::uint64_t run = h >> 1;
      if (run == 0 || value_bytes > n - at) return false;
      std::uint32_t v = 0;
      for (std::size_t k = 0; k < value_bytes; ++k) v |= std::uint32_t{data[at + k]} << (8 * k);
      at += value_bytes;
      if (bit_width < 32 && (v >> bit_width) != 0) return false;
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(run, count - done));
      std::fill_n(out + done, take, v);
      done += take;
    } else {  // bit-packed: h / 2 groups of 8 values, least significant bit first
      const std::uint64_t groups = h >> 1;
      if (groups > (n - at) / std::max<std::size_t>(1, static_cast<std::size_t>(bit_width)))
        return false;
      const std::uint64_t bytes = groups * static_cast<std::uint64_t>(bit_width);
      const std::uint64_t total = groups * 8;
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(total, count - done));
      const std::uint8_t* p = data + at;
      const std::uint64_t mask = bit_width == 32 ? 0xffffffffu : (std::uint64_t{1} << bit_width) - 1;
      for (std::size_t k = 0; k < take; ++k) {
        const std::uint64_t bit = k * static_cast<std::uint64_t>(bit_width);
        std::uint64_t word = 0;
        const std::size_t first = static_cast<std::size_t>(bit / 8);
        const std::size_t last = std::min<std::size_t>(first + 5, static_cast<std::size_t>(bytes));
        for (std::size_t b = first; b < last; ++b) word |= std::uint64_t{p[b]} << (8 * (b - first));
        out[done + k] = static_cast<std::uint32_t>((word >> (bit % 8)) & mask);
      }
      at += static_cast<std::size_t>(bytes);
      done += take;
    }
  }
  return true;
}

namespace {

int bit_width_of(std::uint32_t max_value) {
  int w = 0;
  while (w < 32 && (std::uint64_t{1} << w) <= max_value) ++w;
  return w;
}

// The PLAIN byte arrays of p[0, n), one per set entry of `defined` (all when it is empty), into
// spans: false when a length runs past n.
bool plain_values(const std::uint8_t* p, std::size_t n, std::size_t rows,
                  const std::vector<std::uint8_t>& defined, std::vector<ByteSpan>& out) {
  out.assign(rows, ByteSpan{});
  std::size_t at = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    if (!defined.empty() && defined[i] == 0) continue;
    if (n - at < 4) return false;
    std::uint32_t length = 0;
    std::memcpy(&length, p + at, 4);  // little-endian, as Parquet is (and this machine)
    at += 4;
    if (length > n - at) return false;
    out[i] = ByteSpan{p + at, length};
    at += length;
  }
  return true;
}

}  // namespace

BadInput PageValues::decode(const PageHeader& h, std::vector<std::uint8_t>&& page,
                            std::size_t body_at, const ChunkLayout& layout,
                            std::shared_ptr<const PageValues> dictionary) {
  rows_.clear();
  defined_.clear();
  dictionary_ = std::move(dictionary);
  const PageValues* dictionary_values = dictionary_.get();
  if (!h.data() && h.type != PageType::kDictionary) return BadInput::kCorrupt;
  if (!within(body_at, h.compressed_size, page.size())) return BadInput::kCorrupt;
  const std::uint8_t* body = page.data() + body_at;
  if (h.values > kMaxPageRows) return BadInput::kTooLarge;
  // V2: the levels come first and are never compressed; V1: everything is.
  const std::size_t levels = h.type == PageType::kDataV2 ? h.def_length + h.rep_length : 0;
  if (h.type == PageType::kDataV2 && h.rep_length != 0) return BadInput::kCorrupt;  // flat only
  if (levels > h.compressed_size || levels > h.uncompressed_size) return BadInput::kCorrupt;
  const bool compressed = layout.codec != ParquetCodec::kNone &&
                          (h.type != PageType::kDataV2 || h.compressed);
  const std::size_t packed = h.compressed_size - levels;
  const std::size_t plain = h.uncompressed_size - levels;
  const std::uint8_t* p = nullptr;  // the decompressed body, levels first
  std::size_t n = 0;
  if (compressed) {
    // Before the allocation: the size the header claims must be one the compressed bytes can
    // make (snappy's own length; a zstd frame's stated size; else a ratio no image page nears).
    if (!plausible_size(layout.codec, body + levels, packed, plain)) return BadInput::kCorrupt;
    body_.resize(levels + plain);
    if (levels > 0) std::memcpy(body_.data(), body, levels);
    if (!decompress_page(layout.codec, body + levels, packed, body_.data() + levels, plain))
      return BadInput::kCorrupt;
    p = body_.data();
    n = body_.size();
  } else {
    if (packed != plain) return BadInput::kCorrupt;
    body_ = std::move(page);
    p = body_.data() + body_at;
    n = h.compressed_size;
  }
  const std::size_t rows = h.values;
  if (h.type == PageType::kDictionary) {
    if (h.encoding != kPlainEncoding && h.encoding != kPlainDictionaryEncoding)
      return BadInput::kCorrupt;
    return plain_values(p, n, rows, defined_, rows_) ? BadInput::kNone : BadInput::kCorrupt;
  }
  // The definition levels: a row's value is there when its level is max_def.
  std::size_t at = 0;
  std::size_t present = rows;
  if (layout.max_def > 0) {
    std::size_t length = h.def_length;
    if (h.type == PageType::kData) {
      if (h.def_encoding != kRleEncoding || n < 4) return BadInput::kCorrupt;
      std::uint32_t l = 0;
      std::memcpy(&l, p, 4);
      at = 4;
      length = l;
    }
    if (length > n - at) return BadInput::kCorrupt;
    indices_.resize(rows);
    if (!decode_hybrid(p + at, length, bit_width_of(layout.max_def), rows, indices_.data()))
      return BadInput::kCorrupt;
    defined_.resize(rows);
    present = 0;
    for (std::size_t i = 0; i < rows; ++i) {
      if (indices_[i] > layout.max_def) return BadInput::kCorrupt;
      defined_[i] = indices_[i] == layout.max_def ? 1 : 0;
      present += defined_[i];
    }
    at += length;
  } else if (h.type == PageType::kDataV2 && h.def_length != 0) {
    return BadInput::kCorrupt;
  }
  const std::uint8_t* values = p + at;
  const std::size_t value_bytes = n - at;
  if (present == 0) {  // every row null: no values to read (a writer may write none)
    rows_.assign(rows, ByteSpan{});
    return BadInput::kNone;
  }
  if (h.encoding == kPlainEncoding)
    return plain_values(values, value_bytes, rows, defined_, rows_) ? BadInput::kNone
                                                                     : BadInput::kCorrupt;
  if (h.encoding != kRleDictionaryEncoding && h.encoding != kPlainDictionaryEncoding)
    return BadInput::kCorrupt;
  if (dictionary_values == nullptr || value_bytes < 1) return BadInput::kCorrupt;
  indices_.resize(present);
  if (!decode_hybrid(values + 1, value_bytes - 1, values[0], present, indices_.data()))
    return BadInput::kCorrupt;
  rows_.assign(rows, ByteSpan{});
  std::size_t k = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    if (!defined_.empty() && defined_[i] == 0) continue;
    const std::uint32_t e = indices_[k++];
    if (e >= dictionary_values->rows()) return BadInput::kCorrupt;
    rows_[i] = dictionary_values->row(e);
  }
  return BadInput::kNone;
}

}  // namespace stoke::detail
