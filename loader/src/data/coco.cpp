#include "data/coco.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "stoke/error.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Pixels a box may reach past its image's edge before it counts as outside (annotation tools
// round box corners).
constexpr double kEdgeTolerance = 1.0;

// Bytes read from the file at a time: the parser's whole buffer.
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

// A file read front to back in chunks, for the parser's byte iterator. It also bounds the
// bytes between two parser events (mark()): the parser holds a whole token (a string, a number)
// in memory before it reports it, so a token as long as the file would cost the file's size.
class ChunkedFile {
 public:
  // Throws ConfigError "PATH: cannot be read" when the file cannot be opened.
  explicit ChunkedFile(std::string path) : path_(std::move(path)), buffer_(kChunkBytes) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw ConfigError(path_ + ": cannot be read (" + std::strerror(errno) + ")");
  }
  ~ChunkedFile() { ::close(fd_); }
  ChunkedFile(const ChunkedFile&) = delete;
  ChunkedFile& operator=(const ChunkedFile&) = delete;

  // True at the file's end; reads the next chunk when this one is used up.
  bool at_end() { return pos_ == size_ && !refill(); }
  // REQUIRES: !at_end().
  char current() const { return buffer_[pos_]; }
  void advance() { ++pos_; }
  // Bytes consumed so far.
  std::uint64_t offset() const { return start_ + pos_; }
  // The parser reported an event: the bytes since the last one were one token and its spacing.
  void mark() { marked_ = offset(); }

 private:
  bool refill() {
    start_ += size_;
    pos_ = size_ = 0;
    if (start_ - marked_ > kMaxCocoTokenBytes)
      throw DataError(path_ + ": more than " + std::to_string(kMaxCocoTokenBytes >> 20) +
                      " MiB from byte " + std::to_string(marked_) +
                      " without a complete JSON token" +
                      " (a string or number that long, or that much white space, is not a COCO "
                      "annotation file)");
    for (;;) {
      const ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw ConfigError(path_ + ": cannot be read (" + std::strerror(errno) + ")");
      size_ = static_cast<std::size_t>(n);
      return n > 0;
    }
  }

  std::string path_;
  int fd_ = -1;
  std::vector<char> buffer_;
  std::size_t pos_ = 0, size_ = 0;  // buffer_[pos_, size_) is still to be read
  std::uint64_t start_ = 0;         // the file offset of buffer_[0]
  std::uint64_t marked_ = 0;
};

// The bytes of a ChunkedFile as nlohmann-json's input iterator; the default one is the end.
class ByteIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = char;

  ByteIterator() = default;
  explicit ByteIterator(ChunkedFile* file) : file_(file) {}
  char operator*() const { return file_->current(); }
  ByteIterator& operator++() {
    file_->advance();
    return *this;
  }
  ByteIterator operator++(int) {
    ByteIterator before = *this;
    file_->advance();
    return before;
  }
  friend bool operator==(const ByteIterator& a, const ByteIterator& b) {
    return a.done() == b.done();
  }

 private:
  bool done() const { return file_ == nullptr || file_->at_end(); }
  ChunkedFile* file_ = nullptr;
};

// "FILE: line L, column C: why" for a syntax error at byte offset `byte` (1-based, as
// nlohmann-json counts) of the file, read again up to there.
std::string syntax_error(const std::string& file, std::uint64_t byte, const std::string& what) {
  std::uint64_t line = 1, column = 1;
  ChunkedFile again(file);
  for (std::uint64_t i = 0; i + 1 < byte && !again.at_end(); ++i, again.advance()) {
    if (again.current() == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  // nlohmann's text: "[json.exception.parse_error.101] parse error at line 3, column 9: why".
  // Or, for a number out of range: "[json.exception.out_of_range.406] number overflow ...".
  std::string why = what;
  if (const std::size_t at = why.find(": "); at != std::string::npos)
    why = why.substr(at + 2);
  else if (why.starts_with("[json.exception.") && why.find("] ") != std::string::npos)
    why = why.substr(why.find("] ") + 2);
  return file + ": line " + std::to_string(line) + ", column " + std::to_string(column) +
         ": not valid JSON (" + why + ")";
}

enum class Section : std::uint8_t { kOther, kImages, kAnnotations, kCategories };
constexpr const char* kSectionName[] = {"", "images", "annotations", "categories"};

// The fields read; every other key is read past.
enum class Key : std::uint8_t {
  kOther,
  kId,
  kImageId,
  kCategoryId,
  kWidth,
  kHeight,
  kFileName,
  kName,
  kIsCrowd,
  kBbox,
  kCount
};

Key key_of(Section s, const std::string& k) {
  if (k == "id") return Key::kId;
  switch (s) {
    case Section::kImages:
      return k == "file_name" ? Key::kFileName
             : k == "width"   ? Key::kWidth
             : k == "height"  ? Key::kHeight
                              : Key::kOther;
    case Section::kAnnotations:
      return k == "image_id"      ? Key::kImageId
             : k == "category_id" ? Key::kCategoryId
             : k == "iscrowd"     ? Key::kIsCrowd
             : k == "bbox"        ? Key::kBbox
                                  : Key::kOther;
    case Section::kCategories:
      return k == "name" ? Key::kName : Key::kOther;
    case Section::kOther:
      break;
  }
  return Key::kOther;
}

// One field's value, as far as the checks need it.
struct Value {
  enum Kind : std::uint8_t { kMissing, kInteger, kHugeInteger, kString, kLongString, kOther };
  Kind kind = kMissing;
  bool is_number = false;
  std::int64_t integer = 0;
  double number = 0;
};

// An annotation as read, checked against the images and categories once all are known (COCO
// files list the categories last). Once resolved, `image_id` holds the image's index, `category_id`
// the class and `kept` whether its box stays.
struct PendingAnnotation {
  std::int64_t image_id = 0, category_id = 0, id = 0;
  double x = 0, y = 0, w = 0, h = 0;
  bool has_id = false, box_ok = false, crowd = false, kept = false;
};

// The SAX handler: a few flags and the element being read, whatever the file's depth or size.
// Errors are thrown from the events (the parser keeps no state that needs unwinding).
class CocoStream final : public nlohmann::json_sax<json> {
 public:
  CocoStream(std::string file, std::string root, ChunkedFile* in)
      : file_(std::move(file)), root_(std::move(root)), in_(in) {}

  bool null() override { return scalar(Value{Value::kOther}); }
  bool boolean(bool) override { return scalar(Value{Value::kOther}); }
  bool number_integer(std::int64_t v) override {
    return scalar(Value{Value::kInteger, true, v, static_cast<double>(v)});
  }
  bool number_unsigned(std::uint64_t v) override {
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return scalar(Value{Value::kHugeInteger, true, 0, static_cast<double>(v)});
    return scalar(
        Value{Value::kInteger, true, static_cast<std::int64_t>(v), static_cast<double>(v)});
  }
  bool number_float(double v, const std::string&) override {
    return scalar(Value{Value::kOther, true, 0, v});
  }
  bool string(std::string& s) override {
    Value v{Value::kString};
    if (depth_ == 3 && in_element_ && (key_ == Key::kFileName || key_ == Key::kName)) {
      if (s.size() > kMaxCocoNameBytes)
        v.kind = Value::kLongString;
      else
        element_text_ = std::move(s);
    }
    return scalar(v);
  }
  bool binary(json::binary_t&) override { return scalar(Value{Value::kOther}); }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(std::string& k) override {
    in_->mark();
    if (depth_ == 1) {
      section_ = k == "images"        ? Section::kImages
                 : k == "annotations" ? Section::kAnnotations
                 : k == "categories"  ? Section::kCategories
                                      : Section::kOther;
      if (section_ != Section::kOther && std::exchange(seen_[index(section_)], true))
        fail(k, "appears twice");
    } else if (depth_ == 3 && in_element_) {
      key_ = key_of(section_, k);
    }
    return true;
  }
  bool parse_error(std::size_t byte, const std::string&,
                   const nlohmann::detail::exception& e) override {
    throw ConfigError(syntax_error(file_, byte, e.what()));
  }

  // The dataset, once the parser has read the whole file.
  CocoDataset finish(OnError on_error);

 private:
  static std::size_t index(Section s) { return static_cast<std::size_t>(s); }

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw ConfigError(file_ + ": " + where + ": " + what +
                      " (expected the COCO layout: images, annotations and categories)");
  }
  std::string where(std::size_t i) const {
    return std::string(kSectionName[index(section_)]) + "[" + std::to_string(i) + "]";
  }

  bool scalar(const Value& v);
  bool open(bool array);
  bool close();
  void begin_element();
  void finish_element();
  std::int64_t integer(Key k, const char* name, std::size_t i) const;
  std::string take_text(Key k, const char* name, std::size_t i);
  void finish_image(std::size_t i);
  void finish_category(std::size_t i);
  void finish_annotation(std::size_t i);
  // Each annotation against the images and categories, in the file's order: a crowd one
  // counted, a bad box an error or noted by `on_error`, the others marked kept. Returns how many
  // each image keeps.
  std::vector<std::size_t> check_annotations(CocoDataset& d, OnError on_error);
  // The kept boxes into d.boxes, grouped by image in the file's order.
  void group_boxes(CocoDataset& d, std::vector<std::size_t> per_image);
  std::size_t count(Section s) const {
    return s == Section::kImages        ? images_.size()
           : s == Section::kAnnotations ? annotations_.size()
                                        : names_.size();
  }

  std::string file_, root_;
  ChunkedFile* in_;

  // Where the parser is: depth_ open arrays and objects; at depth 1 the top-level key's
  // section_, at 2 one of its elements (in_element_), at 3 that element's field key_, at 4 the
  // numbers of a bbox (in_bbox_). Deeper levels, and every other key's value, are read past.
  int depth_ = 0;
  Section section_ = Section::kOther;
  bool in_section_ = false, in_element_ = false, in_bbox_ = false;
  Key key_ = Key::kOther;
  std::array<bool, 4> seen_{};

  // The element being read.
  std::array<Value, static_cast<std::size_t>(Key::kCount)> values_{};
  std::string element_text_;  // its file_name or name
  enum class Box : std::uint8_t { kMissing, kReading, kBad } box_state_ = Box::kMissing;
  std::array<double, 4> box_{};
  int box_numbers_ = 0;

  // What is kept.
  std::vector<CocoImage> images_;
  std::unordered_map<std::int64_t, std::size_t> image_of_;  // image id -> index in images_
  std::map<std::int64_t, std::string> names_;               // category id -> name
  std::vector<PendingAnnotation> annotations_;
};

bool CocoStream::scalar(const Value& v) {
  in_->mark();
  switch (depth_) {
    case 0:
      fail("the top level", "expected an object");
    case 1:
      if (section_ != Section::kOther) fail(kSectionName[index(section_)], "expected an array");
      break;
    case 2:
      if (in_section_) {  // an element that is not an object has none of its fields
        begin_element();
        finish_element();
      }
      break;
    case 3:
      if (!in_element_) break;
      values_[static_cast<std::size_t>(key_)] = v;
      if (key_ == Key::kBbox) box_state_ = Box::kBad;
      break;
    case 4:
      if (!in_bbox_) break;
      if (!v.is_number) box_state_ = Box::kBad;
      if (box_numbers_ < 4) box_[box_numbers_] = v.number;
      box_numbers_ = std::min(box_numbers_ + 1, 5);
      break;
    default:
      break;
  }
  return true;
}

bool CocoStream::open(bool array) {
  in_->mark();
  if (depth_ >= kMaxCocoDepth)
    throw DataError(file_ + ": more than " + std::to_string(kMaxCocoDepth) +
                    " levels of nested arrays and objects at byte " +
                    std::to_string(in_->offset()) +
                    " (COCO annotation files nest 5 deep): not a COCO annotation file");
  switch (depth_) {
    case 0:
      if (array) fail("the top level", "expected an object");
      break;
    case 1:
      if (section_ == Section::kOther) break;
      if (!array) fail(kSectionName[index(section_)], "expected an array");
      in_section_ = true;
      break;
    case 2:
      if (!in_section_) break;
      begin_element();
      if (array) finish_element();
      break;
    case 3:
      if (!in_element_) break;
      values_[static_cast<std::size_t>(key_)] = Value{Value::kOther};
      if (key_ != Key::kBbox) break;
      box_state_ = array ? Box::kReading : Box::kBad;
      box_numbers_ = 0;
      in_bbox_ = array;
      break;
    case 4:
      if (in_bbox_) box_state_ = Box::kBad;
      break;
    default:
      break;
  }
  ++depth_;
  return true;
}

bool CocoStream::close() {
  in_->mark();
  --depth_;
  if (depth_ == 3 && in_bbox_) {
    in_bbox_ = false;
  } else if (depth_ == 2 && in_element_) {
    finish_element();
  } else if (depth_ == 1 && in_section_) {
    in_section_ = false;
    section_ = Section::kOther;
  }
  return true;
}

void CocoStream::begin_element() {
  const std::size_t limit = section_ == Section::kImages        ? kMaxCocoImages
                            : section_ == Section::kAnnotations ? kMaxCocoAnnotations
                                                                : kMaxCocoCategories;
  if (count(section_) >= limit)
    throw DataError(file_ + ": more than " + std::to_string(limit) + " " +
                    kSectionName[index(section_)] + " (the most a COCO file may list)");
  values_.fill(Value{});
  element_text_.clear();
  box_state_ = Box::kMissing;
  box_numbers_ = 0;
  key_ = Key::kOther;
  in_element_ = true;
}

void CocoStream::finish_element() {
  in_element_ = false;
  const std::size_t i = count(section_);
  if (section_ == Section::kImages)
    finish_image(i);
  else if (section_ == Section::kCategories)
    finish_category(i);
  else
    finish_annotation(i);
}

std::int64_t CocoStream::integer(Key k, const char* name, std::size_t i) const {
  const Value& v = values_[static_cast<std::size_t>(k)];
  if (v.kind == Value::kMissing) fail(where(i) + "." + name, "missing");
  if (v.kind == Value::kHugeInteger)
    fail(where(i) + "." + name, "expected an integer of at most 9223372036854775807");
  if (v.kind != Value::kInteger) fail(where(i) + "." + name, "expected an integer");
  return v.integer;
}

std::string CocoStream::take_text(Key k, const char* name, std::size_t i) {
  const Value& v = values_[static_cast<std::size_t>(k)];
  if (v.kind == Value::kMissing) fail(where(i) + "." + name, "missing");
  if (v.kind == Value::kLongString)
    fail(where(i) + "." + name, "longer than " + std::to_string(kMaxCocoNameBytes) + " bytes");
  if (v.kind != Value::kString) fail(where(i) + "." + name, "expected a string");
  return std::move(element_text_);
}

void CocoStream::finish_image(std::size_t i) {
  CocoImage img;
  img.id = integer(Key::kId, "id", i);
  img.path =
      (fs::path(root_) / take_text(Key::kFileName, "file_name", i)).lexically_normal().string();
  const std::int64_t width = integer(Key::kWidth, "width", i);
  const std::int64_t height = integer(Key::kHeight, "height", i);
  if (width <= 0 || height <= 0) fail(where(i), "width and height must be positive");
  constexpr std::int64_t kMaxSide = std::numeric_limits<int>::max();
  if (width > kMaxSide || height > kMaxSide)
    fail(where(i), "width and height must be at most " + std::to_string(kMaxSide));
  img.width = static_cast<int>(width);
  img.height = static_cast<int>(height);
  if (!image_of_.emplace(img.id, i).second)
    fail(where(i) + ".id", "image id " + std::to_string(img.id) + " appears twice");
  images_.push_back(std::move(img));
}

void CocoStream::finish_category(std::size_t i) {
  const std::int64_t id = integer(Key::kId, "id", i);
  std::string name = take_text(Key::kName, "name", i);
  if (id < 0 || id > kMaxCocoCategoryId)
    throw DataError(file_ + ": " + where(i) + ".id: category id " + std::to_string(id) +
                    " is outside 0.." + std::to_string(kMaxCocoCategoryId));
  if (!names_.emplace(id, std::move(name)).second)
    fail(where(i) + ".id", "category id " + std::to_string(id) + " appears twice");
}

void CocoStream::finish_annotation(std::size_t i) {
  PendingAnnotation a;
  a.image_id = integer(Key::kImageId, "image_id", i);
  a.category_id = integer(Key::kCategoryId, "category_id", i);
  const Value& id = values_[static_cast<std::size_t>(Key::kId)];
  a.has_id = id.kind == Value::kInteger;
  a.id = id.integer;
  const Value& crowd = values_[static_cast<std::size_t>(Key::kIsCrowd)];
  a.crowd = crowd.is_number && crowd.number != 0;
  a.box_ok = box_state_ == Box::kReading && box_numbers_ == 4;
  a.x = box_[0], a.y = box_[1], a.w = box_[2], a.h = box_[3];
  annotations_.push_back(a);
}

CocoDataset CocoStream::finish(OnError on_error) {
  for (Section s : {Section::kCategories, Section::kImages, Section::kAnnotations})
    if (!seen_[index(s)]) fail(kSectionName[index(s)], "missing");
  CocoDataset d;
  // Categories: contiguous indices in ascending id order (names_ is sorted by id).
  for (auto& [id, name] : names_) {
    d.category_ids.push_back(id);
    d.class_names.push_back(std::move(name));
  }
  names_.clear();
  group_boxes(d, check_annotations(d, on_error));
  annotations_ = {};
  image_of_ = {};
  d.images = std::move(images_);
  return d;
}

std::vector<std::size_t> CocoStream::check_annotations(CocoDataset& d, OnError on_error) {
  section_ = Section::kAnnotations;  // for where()
  std::vector<std::size_t> per_image(images_.size(), 0);
  std::size_t unlisted = 0;  // bad boxes past kMaxDroppedNotes
  for (std::size_t i = 0; i < annotations_.size(); ++i) {
    PendingAnnotation& a = annotations_[i];
    const auto image = image_of_.find(a.image_id);
    if (image == image_of_.end())
      fail(where(i) + ".image_id", "no image has id " + std::to_string(a.image_id));
    const auto label =
        std::lower_bound(d.category_ids.begin(), d.category_ids.end(), a.category_id);
    if (label == d.category_ids.end() || *label != a.category_id)
      fail(where(i) + ".category_id", "no category has id " + std::to_string(a.category_id));
    if (a.crowd) {
      d.crowd += 1;
      continue;
    }
    if (!a.box_ok) fail(where(i) + ".bbox", "expected 4 numbers [x, y, width, height]");
    const CocoImage& img = images_[image->second];
    std::string bad;
    if (!(a.w > 0 && a.h > 0))
      bad = "an empty box (width or height not above 0)";
    else if (a.x < -kEdgeTolerance || a.y < -kEdgeTolerance ||
             a.x + a.w > img.width + kEdgeTolerance || a.y + a.h > img.height + kEdgeTolerance)
      bad = "a box outside its " + std::to_string(img.width) + "x" + std::to_string(img.height) +
            " image";
    if (!bad.empty()) {
      const std::string name =
          file_ + ": " + where(i) + (a.has_id ? " (id " + std::to_string(a.id) + ")" : "") +
          ", on " + img.path + ": " + bad + " [" + std::to_string(a.x) + ", " +
          std::to_string(a.y) + ", " + std::to_string(a.w) + ", " + std::to_string(a.h) + "]";
      if (on_error == OnError::kError) throw DataError(name);
      if (d.dropped.size() < kMaxDroppedNotes)
        d.dropped.push_back(name);
      else
        ++unlisted;
      continue;
    }
    a.image_id = static_cast<std::int64_t>(image->second);
    a.category_id = label - d.category_ids.begin();
    a.kept = true;
    per_image[image->second] += 1;
  }
  if (unlisted > 0)
    d.dropped.push_back(file_ + ": " + std::to_string(unlisted) +
                        " more bad box(es), not listed one by one");
  return per_image;
}

void CocoStream::group_boxes(CocoDataset& d, std::vector<std::size_t> per_image) {
  std::size_t first = 0;
  for (std::size_t i = 0; i < images_.size(); ++i) {
    images_[i].first_box = first;
    images_[i].box_count = per_image[i];
    first += per_image[i];
    per_image[i] = images_[i].first_box;  // now: where the image's next box goes
  }
  d.boxes.resize(first);
  for (const PendingAnnotation& a : annotations_) {
    if (!a.kept) continue;
    d.boxes[per_image[static_cast<std::size_t>(a.image_id)]++] = {
        static_cast<float>(a.x), static_cast<float>(a.y), static_cast<float>(a.x + a.w),
        static_cast<float>(a.y + a.h), static_cast<std::int32_t>(a.category_id)};
  }
}

}  // namespace

CocoDataset read_coco(const std::string& json_path, const std::string& image_root,
                      OnError on_error) {
  const std::string root =
      image_root.empty() ? fs::absolute(json_path).parent_path().string() : image_root;
  ChunkedFile file(json_path);
  CocoStream stream(json_path, root, &file);
  json::sax_parse(ByteIterator(&file), ByteIterator(), &stream);
  return stream.finish(on_error);
}

}  // namespace stoke::detail
