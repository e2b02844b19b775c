#pragma once
// COCO-format detection annotations (an instances_*.json file): its images, their boxes and
// classes, read once as a stream (nlohmann-json's SAX interface), keeping only what the index
// needs, so memory follows what is kept and not the file's size: segmentations, captions, URLs
// and every other field are read past. Thread-safety: read_coco is reentrant; the result is a
// value.
//
// The rules:
//   - `file_name`s resolve under `image_root` (default: the JSON file's folder);
//   - category ids map to contiguous class indices 0..C-1 in ascending id order, and
//     class_names holds their `name`s; ids are kept sparsely (nothing is sized by an id's value);
//   - `bbox` [x, y, w, h] (pixels) becomes xyxy [x, y, x + w, y + h];
//   - crowd annotations (`iscrowd` 1: one box around a group of objects, for evaluation) are
//     left out and counted in `crowd`, as detection training usually does;
//   - images without annotations are kept, with no boxes;
//   - a box that is empty (w or h <= 0) or reaches outside its image (beyond the image's
//     `width` x `height`, with a tolerance of 1 pixel for rounding) is bad input: under
//     OnError::kError a DataError names the file, the annotation's id and why; under kSkip it
//     is left out and described in `dropped` (the first kMaxDroppedNotes, then one line counting
//     the rest).
// A file that is not JSON, or not the COCO layout, is a ConfigError naming the file and the line
// and column, or the field (`annotations[12].bbox: expected 4 numbers`).
//
// The bounds (a file past one is a DataError naming the file and the bound, found before the
// memory it would take is allocated):
//   - nesting: at most kMaxCocoDepth levels of arrays and objects (COCO's own nest 5 deep);
//   - one JSON token (a string, a number) or run of whitespace: at most kMaxCocoTokenBytes (the
//     parser holds a token twice, in buffers that double as they grow);
//   - `file_name` and category `name`: at most kMaxCocoNameBytes each (a ConfigError);
//   - counts: kMaxCocoImages images, kMaxCocoAnnotations annotations, kMaxCocoCategories
//     categories; category ids in 0..kMaxCocoCategoryId; width and height in 1..2^31-1.

#include <cstdint>
#include <string>
#include <vector>

#include "data/sample_box.hpp"
#include "stoke/options.hpp"

namespace stoke::detail {

inline constexpr int kMaxCocoDepth = 64;
inline constexpr std::uint64_t kMaxCocoTokenBytes = std::uint64_t{4} << 20;
inline constexpr std::size_t kMaxCocoNameBytes = 4096;
inline constexpr std::size_t kMaxCocoImages = std::size_t{1} << 30;
inline constexpr std::size_t kMaxCocoAnnotations = std::size_t{1} << 31;
inline constexpr std::size_t kMaxCocoCategories = std::size_t{1} << 16;
inline constexpr std::int64_t kMaxCocoCategoryId = 2147483647;
inline constexpr std::size_t kMaxDroppedNotes = 1000;

struct CocoImage {
  std::string path;  // file_name resolved under image_root
  std::int64_t id = 0;
  int width = 0, height = 0;
  std::size_t first_box = 0;  // boxes [first_box, first_box + box_count) of CocoDataset::boxes
  std::size_t box_count = 0;
};

struct CocoDataset {
  std::vector<CocoImage> images;  // in the file's order
  std::vector<SampleBox> boxes;   // grouped by image, each image's in the file's order
  std::vector<std::string> class_names;
  std::vector<std::int64_t> category_ids;  // class index -> COCO category id
  std::int64_t crowd = 0;                  // crowd annotations left out
  std::vector<std::string> dropped;        // boxes left out as bad input (OnError::kSkip)
};

// REQUIRES: json_path names a file. `image_root` "" means the JSON file's folder.
CocoDataset read_coco(const std::string& json_path, const std::string& image_root,
                      OnError on_error);

}  // namespace stoke::detail
