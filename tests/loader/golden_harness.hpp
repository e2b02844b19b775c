#pragma once
// What the image-op golden tests share (pil_ops, photometric, geometric_ops,
// geometric_ops_bilinear, random_affine and augmix): each case of a golden file (golden_file.hpp)
// run on a copy of its image, its bytes compared with the reference's, and run again on rows
// with padding after them. A test keeps what is its own: its case format, the op call and the
// words that name a case in a failure.
//
// Thread-safety: for the test's own thread.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "augment/photometric.hpp"
#include "golden_file.hpp"
#include "stoke/pipeline.hpp"

namespace stoke {

// GoogleTest shows an ImageOp parameter that fails by its name, not its bytes (found by
// argument-dependent lookup, hence this namespace).
inline void PrintTo(ImageOp op, std::ostream* os) {
  *os << image_op_name(op);
}

}  // namespace stoke

namespace stoke::test {

// Names a test of an ImageOp parameter after the op: PilGolden.MatchesPillowByteForByte/pil_rotate.
struct ImageOpName {
  std::string operator()(const ::testing::TestParamInfo<ImageOp>& info) const {
    return std::string(image_op_name(info.param));
  }
};

// "name(a, b, ...)": the op and its image_op_arg_count numbers.
inline std::string op_text(const AppliedOp& op) {
  std::string s = std::string(image_op_name(op.op)) + "(";
  for (int k = 0; k < image_op_arg_count(op.op); ++k) {
    if (k > 0) s += ", ";
    s += std::to_string(op.args[k]);
  }
  return s + ")";
}

// What a run over golden cases checked: the cases, their bytes, and the bytes that differ from
// the reference's. Printed as "N cases, B bytes, D differ".
struct GoldenTally {
  int cases = 0;
  std::size_t bytes = 0, differing = 0;
};

inline std::ostream& operator<<(std::ostream& os, const GoldenTally& t) {
  return os << t.cases << " cases, " << t.bytes << " bytes, " << t.differing << " differ";
}

// What a case run on padded rows is held to: the bytes it gives on tight rows, or the
// reference's.
enum class PaddedRows { kLikeTightRows, kLikeTheReference };

// A golden file's cases and the op under test. Case is as ImageCases's.
template <class Case>
class ImageOpGolden {
 public:
  // apply(c, pixels) runs case c's op on pixels in place; describe(c) names the case in a failure
  // (the harness adds its image); `reference` names whose bytes the file holds ("Pillow").
  ImageOpGolden(const ImageCases<Case>& file, std::string reference,
                std::function<void(const Case&, const detail::Pixels&)> apply,
                std::function<std::string(const Case&)> describe)
      : file_(file),
        reference_(std::move(reference)),
        apply_(std::move(apply)),
        describe_(std::move(describe)) {}

  // The case's image after its op, laid out with `pad` bytes of `fill` after each row.
  std::vector<std::uint8_t> run(const Case& c, std::size_t pad = 0, std::uint8_t fill = 0) const {
    const GoldenImage& im = image(c);
    const std::size_t line = row_bytes(im);
    std::vector<std::uint8_t> buf((line + pad) * static_cast<std::size_t>(im.height), fill);
    for (int y = 0; y < im.height; ++y)
      std::memcpy(buf.data() + static_cast<std::size_t>(y) * (line + pad),
                  im.bytes.data() + static_cast<std::size_t>(y) * line, line);
    apply_(c, detail::Pixels{buf.data(), im.height, im.width, im.channels, line + pad});
    return buf;
  }

  // The case in a failure: describe(c), then its image's index and size.
  std::string describe(const Case& c) const {
    const GoldenImage& im = image(c);
    return describe_(c) + " on image " + std::to_string(c.image) + " (" +
           std::to_string(im.height) + "x" + std::to_string(im.width) + "x" +
           std::to_string(im.channels) + ")";
  }

  // Runs every case select(c) takes on tight rows and compares its bytes with the reference's.
  // Every byte that differs fails the test (the first ten cases with one are named, each with its
  // first such byte), except `off_by_one` bytes over the whole run, each one off the reference's,
  // which must then differ exactly: a reference's known rounding. Returns what it checked.
  template <class Select>
  GoldenTally expect_matches(Select select, std::size_t off_by_one = 0) const {
    GoldenTally t;
    int named = 0;
    for (const Case& c : file_.cases) {
      if (!select(c)) continue;
      const std::vector<std::uint8_t> out = run(c);
      ++t.cases;
      t.bytes += out.size();
      std::size_t wrong = 0, first = out.size();
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (out[i] == c.expected[i]) continue;
        ++t.differing;
        const int by = int{out[i]} - int{c.expected[i]};
        if (t.differing <= off_by_one && (by == 1 || by == -1)) continue;
        if (wrong++ == 0) first = i;
      }
      if (wrong > 0 && named++ < 10)
        ADD_FAILURE() << describe(c) << ": " << wrong << " bytes differ; byte " << first << " is "
                      << int{out[first]} << " where " << reference_ << " has "
                      << int{c.expected[first]};
    }
    EXPECT_EQ(t.differing, off_by_one) << "bytes differing from " << reference_ << "'s";
    return t;
  }

  // Runs every case select(c) takes again with `pad` bytes of `fill` after every row: the rows
  // must get the bytes `like` names, and the padding keep its own. Returns the cases run.
  template <class Select>
  int expect_padding_kept(Select select, std::size_t pad, std::uint8_t fill,
                          PaddedRows like) const {
    int cases = 0;
    for (const Case& c : file_.cases) {
      if (!select(c)) continue;
      const GoldenImage& im = image(c);
      const std::vector<std::uint8_t> tight =
          like == PaddedRows::kLikeTightRows ? run(c) : c.expected;
      const std::string mismatch =
          padding_mismatch(tight, run(c, pad, fill), im.height, row_bytes(im), pad, fill);
      ++cases;
      if (!mismatch.empty()) {
        ADD_FAILURE() << describe(c) << ": " << mismatch;
        return cases;
      }
    }
    return cases;
  }

 private:
  const GoldenImage& image(const Case& c) const { return file_.images[c.image]; }

  static std::size_t row_bytes(const GoldenImage& im) {
    return static_cast<std::size_t>(im.width) * static_cast<std::size_t>(im.channels);
  }

  // What rows padded by `pad` bytes of `fill` hold that `tight` (rows of `line` bytes) does not
  // ("" when nothing).
  static std::string padding_mismatch(const std::vector<std::uint8_t>& tight,
                                      const std::vector<std::uint8_t>& padded, int rows,
                                      std::size_t line, std::size_t pad, std::uint8_t fill) {
    for (int y = 0; y < rows; ++y) {
      const std::uint8_t* r = padded.data() + static_cast<std::size_t>(y) * (line + pad);
      if (std::memcmp(r, tight.data() + static_cast<std::size_t>(y) * line, line) != 0)
        return "row " + std::to_string(y);
      for (std::size_t i = 0; i < pad; ++i)
        if (r[line + i] != fill) return "row " + std::to_string(y) + ": padding written";
    }
    return "";
  }

  const ImageCases<Case>& file_;
  std::string reference_;
  std::function<void(const Case&, const detail::Pixels&)> apply_;
  std::function<std::string(const Case&)> describe_;
};

// Every case.
inline constexpr auto kEveryCase = [](const auto&) { return true; };

}  // namespace stoke::test
