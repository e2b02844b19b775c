#include "data/parquet_thrift.hpp"

#include <limits>

namespace stoke::detail {

std::uint64_t ThriftReader::varint() {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p_ == end_) return starve(), 0;
    const std::uint8_t b = *p_++;
    v |= std::uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80u) == 0) return v;
  }
  return fail(), 0;  // more than 10 bytes: not a varint
}

std::int64_t ThriftReader::integer() {
  const std::uint64_t v = varint();
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

std::int32_t ThriftReader::i32() {
  const std::int64_t v = integer();
  if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    return fail(), 0;
  return static_cast<std::int32_t>(v);
}

bool ThriftReader::field(std::int16_t& last_id, ThriftType& type) {
  if (p_ == end_) return starve(), false;
  const std::uint8_t b = *p_++;
  if (b == 0) return false;  // kStop
  type = static_cast<ThriftType>(b & 0x0fu);
  if (type > ThriftType::kStruct) return fail(), false;
  if (const int delta = b >> 4; delta != 0) {
    last_id = static_cast<std::int16_t>(last_id + delta);
  } else {
    const std::int64_t id = integer();
    if (id < std::numeric_limits<std::int16_t>::min() || id > std::numeric_limits<std::int16_t>::max())
      return fail(), false;
    last_id = static_cast<std::int16_t>(id);
  }
  return ok_;
}

void ThriftReader::skip(ThriftType type, int depth) {
  if (depth > kMaxThriftDepth) return fail();
  const auto left = [&] { return static_cast<std::uint64_t>(end_ - p_); };
  switch (type) {
    case ThriftType::kTrue:
    case ThriftType::kFalse:
      return;  // a field's value is in its type
    case ThriftType::kByte:
      if (p_ == end_) return starve();
      ++p_;
      return;
    case ThriftType::kI16:
    case ThriftType::kI32:
    case ThriftType::kI64:
      varint();
      return;
    case ThriftType::kDouble:
      if (left() < 8) return starve();
      p_ += 8;
      return;
    case ThriftType::kBinary: {
      const std::uint64_t n = varint();
      if (n > left()) return starve();
      p_ += n;
      return;
    }
    case ThriftType::kList:
    case ThriftType::kSet: {
      if (p_ == end_) return starve();
      const std::uint8_t b = *p_++;
      std::uint64_t n = b >> 4;
      if (n == 15) n = varint();
      const auto element = static_cast<ThriftType>(b & 0x0fu);
      // Every element takes at least a byte (a boolean element is a byte of its own): a count
      // larger than what is left is a lie, refused before the loop.
      if (element == ThriftType::kStop || element > ThriftType::kStruct) return fail();
      if (n > left()) return starve();
      for (std::uint64_t i = 0; i < n && ok_; ++i) {
        if (element == ThriftType::kTrue || element == ThriftType::kFalse)
          skip(ThriftType::kByte, depth + 1);
        else
          skip(element, depth + 1);
      }
      return;
    }
    case ThriftType::kMap: {
      const std::uint64_t n = varint();
      if (n == 0) return;
      if (p_ == end_ || n > left() / 2) return starve();
      const std::uint8_t b = *p_++;
      const auto key = static_cast<ThriftType>(b >> 4), value = static_cast<ThriftType>(b & 0x0fu);
      if (key == ThriftType::kStop || key > ThriftType::kStruct || value == ThriftType::kStop ||
          value > ThriftType::kStruct)
        return fail();
      const auto one = [&](ThriftType t) {
        skip(t == ThriftType::kTrue || t == ThriftType::kFalse ? ThriftType::kByte : t, depth + 1);
      };
      for (std::uint64_t i = 0; i < n && ok_; ++i) {
        one(key);
        one(value);
      }
      return;
    }
    case ThriftType::kStruct: {
      std::int16_t id = 0;
      ThriftType t{};
      while (field(id, t)) skip(t, depth + 1);
      return;
    }
    case ThriftType::kStop:
      break;
  }
  fail();
}

}  // namespace stoke::detail
