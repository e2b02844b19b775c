#include "data/coco.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "data/file_reader.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Pixels a box may reach past its image's edge before it counts as outside (annotation tools
// round box corners).
constexpr double kEdgeTolerance = 1.0;

// "FILE: line L, column C: why" for a syntax error at byte offset `byte` (1-based, as
// nlohmann-json counts) of `text`.
std::string syntax_error(const std::string& file, const std::string& text, std::size_t byte,
                         const std::string& what) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  // nlohmann's text: "[json.exception.parse_error.101] parse error at line 3, column 9: why".
  std::string why = what;
  if (const std::size_t at = why.find(": "); at != std::string::npos) why = why.substr(at + 2);
  return file + ": line " + std::to_string(line) + ", column " + std::to_string(column) +
         ": not valid JSON (" + why + ")";
}

// The COCO fields, read with the field's path in every error.
class Fields {
 public:
  explicit Fields(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw ConfigError(file_ + ": " + where + ": " + what + " (expected the COCO layout: images, "
                      "annotations and categories)");
  }
  const json& array(const json& parent, const char* key, const std::string& where) const {
    const auto it = parent.find(key);
    if (it == parent.end()) fail(where.empty() ? key : where + "." + key, "missing");
    if (!it->is_array()) fail(where.empty() ? key : where + "." + key, "expected an array");
    return *it;
  }
  std::int64_t integer(const json& item, const char* key, const std::string& where) const {
    const auto it = item.find(key);
    if (it == item.end()) fail(where + "." + key, "missing");
    if (!it->is_number_integer()) fail(where + "." + key, "expected an integer");
    return it->get<std::int64_t>();
  }
  std::string text(const json& item, const char* key, const std::string& where) const {
    const auto it = item.find(key);
    if (it == item.end()) fail(where + "." + key, "missing");
    if (!it->is_string()) fail(where + "." + key, "expected a string");
    return it->get<std::string>();
  }

 private:
  std::string file_;
};

std::string at(const char* array, std::size_t i) {
  return std::string(array) + "[" + std::to_string(i) + "]";
}

}  // namespace

CocoDataset read_coco(const std::string& json_path, const std::string& image_root,
                      OnError on_error) {
  const std::optional<std::string> read = read_text_file(json_path);
  if (!read) throw ConfigError(json_path + ": cannot be read");
  const std::string& text = *read;
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(syntax_error(json_path, text, e.byte, e.what()));
  } catch (const json::out_of_range& e) {  // a number beyond a double's range (1e999)
    const std::string why = e.what();  // "[json.exception.out_of_range.406] number overflow ..."
    throw ConfigError(json_path + ": not valid JSON (" + why.substr(why.find("] ") + 2) + ")");
  }
  const Fields f(json_path);
  if (!doc.is_object()) f.fail("the top level", "expected an object");
  const std::string root =
      image_root.empty() ? fs::absolute(json_path).parent_path().string() : image_root;

  CocoDataset d;
  // Categories: contiguous indices in ascending id order.
  const json& categories = f.array(doc, "categories", "");
  std::map<std::int64_t, std::string> names;
  for (std::size_t i = 0; i < categories.size(); ++i) {
    const std::string where = at("categories", i);
    const std::int64_t id = f.integer(categories[i], "id", where);
    if (!names.emplace(id, f.text(categories[i], "name", where)).second)
      f.fail(where + ".id", "category id " + std::to_string(id) + " appears twice");
  }
  std::unordered_map<std::int64_t, std::int32_t> label_of;
  for (const auto& [id, name] : names) {
    label_of[id] = static_cast<std::int32_t>(d.class_names.size());
    d.category_ids.push_back(id);
    d.class_names.push_back(name);
  }

  const json& images = f.array(doc, "images", "");
  std::unordered_map<std::int64_t, std::size_t> image_of;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const std::string where = at("images", i);
    CocoImage img;
    img.id = f.integer(images[i], "id", where);
    img.path = (fs::path(root) / f.text(images[i], "file_name", where)).lexically_normal().string();
    img.width = static_cast<int>(f.integer(images[i], "width", where));
    img.height = static_cast<int>(f.integer(images[i], "height", where));
    if (img.width <= 0 || img.height <= 0) f.fail(where, "width and height must be positive");
    if (!image_of.emplace(img.id, i).second)
      f.fail(where + ".id", "image id " + std::to_string(img.id) + " appears twice");
    d.images.push_back(std::move(img));
  }

  // Annotations, grouped by image (each image's in the file's order).
  const json& annotations = f.array(doc, "annotations", "");
  std::vector<std::vector<SampleBox>> per_image(d.images.size());
  for (std::size_t i = 0; i < annotations.size(); ++i) {
    const json& a = annotations[i];
    const std::string where = at("annotations", i);
    const std::int64_t image_id = f.integer(a, "image_id", where);
    const auto image = image_of.find(image_id);
    if (image == image_of.end())
      f.fail(where + ".image_id", "no image has id " + std::to_string(image_id));
    const std::int64_t category = f.integer(a, "category_id", where);
    const auto label = label_of.find(category);
    if (label == label_of.end())
      f.fail(where + ".category_id", "no category has id " + std::to_string(category));
    if (const auto crowd = a.find("iscrowd"); crowd != a.end() && crowd->is_number() &&
                                              crowd->get<double>() != 0) {
      d.crowd += 1;
      continue;
    }
    const auto bbox = a.find("bbox");
    if (bbox == a.end() || !bbox->is_array() || bbox->size() != 4 ||
        !std::all_of(bbox->begin(), bbox->end(), [](const json& v) { return v.is_number(); }))
      f.fail(where + ".bbox", "expected 4 numbers [x, y, width, height]");
    const double x = (*bbox)[0].get<double>(), y = (*bbox)[1].get<double>();
    const double w = (*bbox)[2].get<double>(), h = (*bbox)[3].get<double>();
    const CocoImage& img = d.images[image->second];
    std::string bad;
    if (!(w > 0 && h > 0))
      bad = "an empty box (width or height not above 0)";
    else if (x < -kEdgeTolerance || y < -kEdgeTolerance || x + w > img.width + kEdgeTolerance ||
             y + h > img.height + kEdgeTolerance)
      bad = "a box outside its " + std::to_string(img.width) + "x" + std::to_string(img.height) +
            " image";
    if (!bad.empty()) {
      const auto id = a.find("id");
      const std::string name =
          json_path + ": " + where +
          (id != a.end() && id->is_number_integer() ? " (id " + std::to_string(id->get<std::int64_t>()) + ")" : "") +
          ", on " + img.path + ": " + bad + " [" + std::to_string(x) + ", " + std::to_string(y) +
          ", " + std::to_string(w) + ", " + std::to_string(h) + "]";
      if (on_error == OnError::kError) throw DataError(name);
      d.dropped.push_back(name);
      continue;
    }
    per_image[image->second].push_back({static_cast<float>(x), static_cast<float>(y),
                                        static_cast<float>(x + w), static_cast<float>(y + h),
                                        label->second});
  }
  for (std::size_t i = 0; i < d.images.size(); ++i) {
    d.images[i].first_box = d.boxes.size();
    d.images[i].box_count = per_image[i].size();
    d.boxes.insert(d.boxes.end(), per_image[i].begin(), per_image[i].end());
  }
  return d;
}

}  // namespace stoke::detail
