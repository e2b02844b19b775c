// COCO-format annotations (data/coco.hpp): images, boxes and classes as the rules say, and
// broken files named with the line and column, or the field, that is wrong.
#include "data/coco.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "stoke/error.hpp"
#include "test_support.hpp"

namespace stoke::detail {
namespace {

constexpr const char* kGood = R"({
  "images": [
    {"id": 10, "file_name": "a.jpg", "width": 64, "height": 48},
    {"id": 11, "file_name": "sub/b.jpg", "width": 100, "height": 80},
    {"id": 12, "file_name": "c.jpg", "width": 32, "height": 32}
  ],
  "annotations": [
    {"id": 1, "image_id": 11, "category_id": 18, "bbox": [10, 20, 30, 40], "iscrowd": 0},
    {"id": 2, "image_id": 10, "category_id": 1, "bbox": [0.5, 1.5, 10, 5]},
    {"id": 3, "image_id": 11, "category_id": 7, "bbox": [0, 0, 100, 80], "iscrowd": 1},
    {"id": 4, "image_id": 11, "category_id": 1, "bbox": [50, 10, 50, 70]}
  ],
  "categories": [
    {"id": 18, "name": "dog"}, {"id": 1, "name": "person"}, {"id": 7, "name": "train"}
  ]
})";

std::string write(const test::TempDir& dir, const std::string& text) {
  const std::string path = (dir.path() / "instances_val.json").string();
  std::ofstream(path) << text;
  return path;
}

TEST(Coco, ReadsImagesBoxesAndClassesAsTheRulesSay) {
  test::TempDir dir;
  const std::string json = write(dir, kGood);
  const CocoDataset d = read_coco(json, "", OnError::kError);
  // Categories in ascending id order: 1 person, 7 train, 18 dog.
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"person", "train", "dog"}));
  EXPECT_EQ(d.category_ids, (std::vector<std::int64_t>{1, 7, 18}));
  ASSERT_EQ(d.images.size(), 3u);
  EXPECT_EQ(d.images[0].path, (dir.path() / "a.jpg").string());
  EXPECT_EQ(d.images[1].path, (dir.path() / "sub/b.jpg").string());
  EXPECT_EQ(d.images[1].width, 100);
  // Image 10: one box, xywh -> xyxy.
  ASSERT_EQ(d.images[0].box_count, 1u);
  const SampleBox& a = d.boxes[d.images[0].first_box];
  EXPECT_FLOAT_EQ(a.x1, 0.5f);
  EXPECT_FLOAT_EQ(a.y1, 1.5f);
  EXPECT_FLOAT_EQ(a.x2, 10.5f);
  EXPECT_FLOAT_EQ(a.y2, 6.5f);
  EXPECT_EQ(a.label, 0);
  // Image 11: two boxes in the file's order, the crowd one left out and counted.
  ASSERT_EQ(d.images[1].box_count, 2u);
  EXPECT_EQ(d.boxes[d.images[1].first_box].label, 2);
  EXPECT_FLOAT_EQ(d.boxes[d.images[1].first_box].x2, 40);
  EXPECT_FLOAT_EQ(d.boxes[d.images[1].first_box].y2, 60);
  EXPECT_EQ(d.boxes[d.images[1].first_box + 1].label, 0);
  EXPECT_EQ(d.crowd, 1);
  // Image 12 has no annotations and stays.
  EXPECT_EQ(d.images[2].box_count, 0u);
  EXPECT_TRUE(d.dropped.empty());
  // Another image root.
  const CocoDataset elsewhere = read_coco(json, "/data/coco/val2017", OnError::kError);
  EXPECT_EQ(elsewhere.images[1].path, "/data/coco/val2017/sub/b.jpg");
}

TEST(Coco, ABrokenFileIsNamedWithItsLineAndColumn) {
  test::TempDir dir;
  std::string text = kGood;
  text.replace(text.find("\"height\": 48},"), 14, "\"height\": 48}");  // a comma gone, line 3
  const std::string json = write(dir, text);
  try {
    read_coco(json, "", OnError::kError);
    FAIL() << "a file without a comma was read";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(json + ": line 4, column 5: not valid JSON"), std::string::npos) << what;
  }
}

TEST(Coco, AFieldThatIsNotTheCocoLayoutIsNamed) {
  test::TempDir dir;
  const auto message = [&](const std::string& from, const std::string& to) {
    std::string text = kGood;
    text.replace(text.find(from), from.size(), to);
    try {
      read_coco(write(dir, text), "", OnError::kError);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("\"bbox\": [0.5, 1.5, 10, 5]", "\"bbox\": [0.5, 1.5, 10]")
                .find("annotations[1].bbox: expected 4 numbers"),
            std::string::npos);
  EXPECT_NE(message("\"image_id\": 10,", "\"image_id\": 99,")
                .find("annotations[1].image_id: no image has id 99"),
            std::string::npos);
  EXPECT_NE(message("\"category_id\": 1, \"bbox\": [0.5", "\"category_id\": 5, \"bbox\": [0.5")
                .find("annotations[1].category_id: no category has id 5"),
            std::string::npos);
  EXPECT_NE(message("\"file_name\": \"c.jpg\"", "\"file_name\": 3")
                .find("images[2].file_name: expected a string"),
            std::string::npos);
  EXPECT_NE(message("\"categories\"", "\"kategories\"").find("categories: missing"),
            std::string::npos);
}

TEST(Coco, ABoxOutsideItsImageIsAnErrorOrLeftOutByPolicy) {
  test::TempDir dir;
  std::string text = kGood;
  const std::string from = "\"bbox\": [50, 10, 50, 70]";
  text.replace(text.find(from), from.size(), "\"bbox\": [50, 10, 60, 70]");  // to x 110 of 100
  const std::string json = write(dir, text);
  try {
    read_coco(json, "", OnError::kError);
    FAIL() << "a box outside its image was accepted";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(json + ": annotations[3] (id 4), on " +
                        (dir.path() / "sub/b.jpg").string() + ": a box outside its 100x80 image"),
              std::string::npos)
        << what;
  }
  const CocoDataset d = read_coco(json, "", OnError::kSkip);
  ASSERT_EQ(d.dropped.size(), 1u);
  EXPECT_NE(d.dropped[0].find("(id 4)"), std::string::npos);
  EXPECT_EQ(d.images[1].box_count, 1u);
}

}  // namespace
}  // namespace stoke::detail
