#pragma once
// Reading the golden files that tests/loader/make_*_golden.py write from torchvision's outputs:
// the file's bytes, then its little-endian fields. A read past the end sets failed() and returns
// zeros, so a parser reads on and checks once.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace stoke::test {

inline std::string golden_path(const std::string& name) {
  return std::string(STOKE_SOURCE_DIR) + "/tests/data/" + name;
}

// The file's bytes; `error` names the path when it cannot be opened.
inline std::vector<std::uint8_t> read_golden_file(const std::string& path, std::string& error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = path + ": cannot be opened";
    return {};
  }
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

class FieldReader {
 public:
  explicit FieldReader(const std::vector<std::uint8_t>& data) : data_(data) {}
  std::uint32_t u32() {
    std::uint32_t v = 0;
    if (!take(4)) return 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | data_[pos_ - 4 + static_cast<std::size_t>(i)];
    return v;
  }
  float f32() {
    const std::uint32_t bits = u32();
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::vector<std::uint8_t> bytes(std::size_t n) {
    if (!take(n)) return {};
    return {data_.begin() + static_cast<std::ptrdiff_t>(pos_ - n),
            data_.begin() + static_cast<std::ptrdiff_t>(pos_)};
  }
  bool failed() const { return failed_; }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  bool take(std::size_t n) {
    if (failed_ || n > data_.size() - pos_) return !(failed_ = true);
    pos_ += n;
    return true;
  }
  const std::vector<std::uint8_t>& data_;
  std::size_t pos_ = 0;
  bool failed_ = false;
};

// An image of a golden file: its height, width and channels (each masked small, so that a
// corrupt size stays bounded), then its bytes in tight rows.
struct GoldenImage {
  int height = 0, width = 0, channels = 0;
  std::vector<std::uint8_t> bytes;  // tight rows
};

inline bool read_golden_image(FieldReader& in, GoldenImage& im) {
  im.height = static_cast<int>(in.u32() & 0xffff);
  im.width = static_cast<int>(in.u32() & 0xffff);
  im.channels = static_cast<int>(in.u32() & 0xf);
  im.bytes = in.bytes(static_cast<std::size_t>(im.height) * static_cast<std::size_t>(im.width) *
                      static_cast<std::size_t>(im.channels));
  return !in.failed();
}

// A case's label: a length (below 256) and its characters.
inline std::string read_golden_label(FieldReader& in) {
  const std::vector<std::uint8_t> label = in.bytes(in.u32() & 0xff);
  return {label.begin(), label.end()};
}

// The image-op golden files' layout: `magic`, version 1, a count and the images, a count and the
// cases, nothing after. G has `images`, `cases` and `error`; read_case(in, images, c) reads one
// case and says whether it was whole and names an image. `what` names the file in the errors.
template <class G, class ReadCase>
G parse_image_cases(const std::vector<std::uint8_t>& data, const char (&magic)[5],
                    const std::string& what, ReadCase read_case) {
  G g;
  const auto fail = [](const std::string& why) {
    G failed{};
    failed.error = why;
    return failed;
  };
  FieldReader in(data);
  if (in.bytes(4) != std::vector<std::uint8_t>(magic, magic + 4) || in.u32() != 1)
    return fail("not a version-1 " + what + " golden file");
  g.images.resize(in.u32() & 0xff);
  for (GoldenImage& im : g.images)
    if (!read_golden_image(in, im)) return fail("truncated in its images");
  g.cases.resize(in.u32() & 0xffff);
  for (auto& c : g.cases)
    if (!read_case(in, g.images, c)) return fail("a case is truncated or names no image");
  if (!in.at_end()) return fail("followed by extra bytes");
  return g;
}

// The golden file `name` read and handed to `parse` (a function of its bytes returning a G), or a
// G whose `error` says why it could not be read; a parse error is prefixed with the path.
template <class G, class Parse>
G load_golden(const std::string& name, Parse parse) {
  const std::string path = golden_path(name);
  std::string error;
  const std::vector<std::uint8_t> data = read_golden_file(path, error);
  if (!error.empty()) {
    G failed{};
    failed.error = error;
    return failed;
  }
  G parsed = parse(data);
  if (!parsed.error.empty()) parsed.error = path + ": " + parsed.error;
  return parsed;
}

// What a run on rows padded by `pad` bytes of `fill` got wrong against the same run on tight
// rows ("" when nothing): `tight` holds `rows` rows of `line` bytes, `padded` rows of line + pad.
inline std::string padding_mismatch(const std::vector<std::uint8_t>& tight,
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

}  // namespace stoke::test
