#pragma once
// Reading the golden files that tests/loader/make_*_golden.py write from the references' outputs
// (torchvision's, Pillow's, timm's): the file's bytes, then its little-endian fields, or its text
// lines. A read past the end sets failed() and returns zeros, so a parser reads on and checks
// once. golden_harness.hpp runs the image ops' cases.
//
// Thread-safety: a FieldReader belongs to one thread; the functions are functions of their
// arguments and the files.

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

// The lines of the text golden file `name` that are neither empty nor a '#' comment; `error`
// names the path when it cannot be opened.
inline std::vector<std::string> read_golden_lines(const std::string& name, std::string& error) {
  const std::string path = golden_path(name);
  std::ifstream f(path);
  if (!f) {
    error = path + ": cannot be opened";
    return {};
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);)
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  return lines;
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
  std::uint64_t u64() {
    const std::uint64_t lo = u32();
    return lo | (std::uint64_t{u32()} << 32);
  }
  float f32() {
    const std::uint32_t bits = u32();
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  double f64() {
    const std::uint64_t bits = u64();
    double v;
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

// An image-op golden file: its images and its cases. A Case has `image`, the index of the image
// it runs on, and `expected`, the reference's bytes of that image after the op (tight rows).
template <class Case>
struct ImageCases {
  std::vector<GoldenImage> images;
  std::vector<Case> cases;
  std::string error;  // why the file could not be read; empty when it was
};

// The end of every case: c.image names an image, and c.expected, its bytes after the op, follow.
// Whether the case was whole.
template <class Case>
bool read_expected(FieldReader& in, const std::vector<GoldenImage>& images, Case& c) {
  if (in.failed() || c.image >= images.size()) return false;
  c.expected = in.bytes(images[c.image].bytes.size());
  return !in.failed();
}

// The image-op golden files' layout: `magic`, version 1, a count and the images, a count and the
// cases, then what read_rest(in, g) reads (nothing, by default; it returns why it failed, or ""),
// nothing after. G has `images`, `cases` and `error` (an ImageCases, or a struct built on one);
// read_case(in, images, c) reads one case and says whether it was whole and names an image.
// `what` names the file in the errors.
template <class G, class ReadCase, class ReadRest>
G parse_image_cases(const std::vector<std::uint8_t>& data, const char (&magic)[5],
                    const std::string& what, ReadCase read_case, ReadRest read_rest) {
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
  if (const std::string why = read_rest(in, g); !why.empty()) return fail(why);
  if (!in.at_end()) return fail("followed by extra bytes");
  return g;
}

template <class G, class ReadCase>
G parse_image_cases(const std::vector<std::uint8_t>& data, const char (&magic)[5],
                    const std::string& what, ReadCase read_case) {
  return parse_image_cases<G>(data, magic, what, read_case,
                              [](FieldReader&, G&) { return std::string(); });
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

// load_golden of an image-op golden file laid out as parse_image_cases reads it.
template <class Case, class ReadCase>
ImageCases<Case> load_image_cases(const std::string& name, const char (&magic)[5],
                                  const std::string& what, ReadCase read_case) {
  return load_golden<ImageCases<Case>>(name, [&](const std::vector<std::uint8_t>& data) {
    return parse_image_cases<ImageCases<Case>>(data, magic, what, read_case);
  });
}

}  // namespace stoke::test
