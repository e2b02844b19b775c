#pragma once
// Thrift's compact protocol, read: what a Parquet page header is written in. Only what the hot
// path needs is read here (data/parquet_page.hpp's PageHeader); a file's footer is Arrow's to
// read (data/parquet_facts.hpp).
//
// Every read is bounded by construction: nothing is read past the bytes given, a length is
// checked against what is left before it is used, and structs nest at most kMaxThriftDepth deep,
// so a hostile header costs at most one pass over its own bytes and no allocation.
//
// Thread-safety: a ThriftReader is used by one thread; it owns nothing.

#include <cstddef>
#include <cstdint>

namespace stoke::detail {

// Nesting deeper than this (a struct in a struct in ...) is refused: a page header nests 3 deep.
inline constexpr int kMaxThriftDepth = 16;

// The compact protocol's field and element types.
enum class ThriftType : std::uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

class ThriftReader {
 public:
  ThriftReader(const std::uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}

  bool ok() const { return ok_; }
  // Whether a read failed for want of bytes: what was given may be the start of a longer value.
  bool starved() const { return starved_; }
  // Bytes read so far.
  std::size_t offset(const std::uint8_t* data) const { return static_cast<std::size_t>(p_ - data); }

  // The next field of the struct being read: false at its end (kStop) or on bad input (ok()
  // then false). `last_id` is the struct's previous field id (0 before the first).
  bool field(std::int16_t& last_id, ThriftType& type);
  std::int64_t integer();  // an i8, i16, i32 or i64 (zigzag varint; i8: one byte)
  std::int32_t i32();      // an i32 that must fit its type
  // Skips a value of `type` (a struct or collection with everything in it).
  void skip(ThriftType type, int depth = 0);

 private:
  std::uint64_t varint();
  void fail() {
    ok_ = false;
    p_ = end_;
  }
  void starve() {
    if (ok_) starved_ = true;  // (a read after a failure finds no bytes left: it adds nothing)
    fail();
  }
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  bool ok_ = true;
  bool starved_ = false;
};

}  // namespace stoke::detail
