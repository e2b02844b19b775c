// Detection data through the whole loader: a COCO annotation file's images and boxes, the boxes
// moved with the pixels by the workers, delivered per batch and per device, the same for any
// worker count and across a resume, with max_boxes, bad sizes and bad files handled by policy.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "data/coco.hpp"
#include "fake_gpu.hpp"
#include "libjpeg_writer.hpp"
#include "stoke/error.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

// Three categories with ids that are not contiguous: classes are 0 blue (id 2), 1 red (id 5),
// 2 green (id 9). Each image has at most one box per class, painted in that class's colour
// only, so every output channel shows exactly one box's pixels.
constexpr int kRgbChannelOfClass[3] = {2, 0, 1};

struct Rect {
  int x, y, w, h;
  int cls;
};

struct Scene {
  std::string file;
  int width, height;
  std::vector<Rect> boxes;
};

std::vector<Scene> scenes(int n) {
  std::vector<Scene> out;
  for (int i = 0; i < n; ++i) {
    Scene s;
    s.file = "img" + std::to_string(i) + (i % 2 == 1 ? ".jpg" : ".png");
    s.width = 120 + (i * 37) % 140;
    s.height = 90 + (i * 53) % 110;
    const int count = i % 7 == 3 ? 0 : 1 + i % 3;
    for (int k = 0; k < count; ++k) {
      Rect r;
      r.cls = (i + k) % 3;
      r.w = 24 + (i * 11 + k * 17) % 40;
      r.h = 20 + (i * 7 + k * 23) % 40;
      r.x = (i * 13 + k * 41) % (s.width - r.w);
      r.y = (i * 29 + k * 31) % (s.height - r.h);
      s.boxes.push_back(r);
    }
    out.push_back(s);
  }
  return out;
}

void write_image(const std::filesystem::path& path, const Scene& s) {
  cv::Mat bgr(s.height, s.width, CV_8UC3, cv::Scalar(0, 0, 0));
  std::vector<cv::Mat> planes;
  cv::split(bgr, planes);
  for (const Rect& r : s.boxes)
    planes[2 - kRgbChannelOfClass[r.cls]](cv::Rect(r.x, r.y, r.w, r.h)).setTo(255);
  cv::merge(planes, bgr);
  if (path.extension() != ".jpg") {
    ASSERT_TRUE(cv::imwrite(path.string(), bgr));
    return;
  }
  // JPEGs at full chroma resolution (libjpeg: OpenCV here cannot choose the sampling), so
  // that each colour stays in its own channel.
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  const std::vector<std::uint8_t> jpeg = test::libjpeg_compress(rgb, [](jpeg_compress_struct& c) {
    jpeg_set_quality(&c, 100, TRUE);
    for (int i = 0; i < 3; ++i) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  });
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
}

// Writes the images and instances.json; returns the JSON's path. `edit` may change the text.
std::string write_coco(const test::TempDir& dir, const std::vector<Scene>& set,
                       const std::function<void(std::string&)>& edit = {}) {
  std::string images, annotations;
  int id = 1;
  for (std::size_t i = 0; i < set.size(); ++i) {
    const Scene& s = set[i];
    write_image(dir.path() / "images" / s.file, s);
    images += std::string(i ? ",\n" : "") + R"({"id": )" + std::to_string(100 + i) +
              R"(, "file_name": "images/)" + s.file + R"(", "width": )" + std::to_string(s.width) +
              R"(, "height": )" + std::to_string(s.height) + "}";
    for (const Rect& r : s.boxes) {
      static constexpr int kCategoryId[3] = {2, 5, 9};
      annotations += std::string(annotations.empty() ? "" : ",\n") + R"({"id": )" +
                     std::to_string(id++) + R"(, "image_id": )" + std::to_string(100 + i) +
                     R"(, "category_id": )" + std::to_string(kCategoryId[r.cls]) +
                     R"(, "bbox": [)" + std::to_string(r.x) + ", " + std::to_string(r.y) + ", " +
                     std::to_string(r.w) + ", " + std::to_string(r.h) + R"(], "iscrowd": 0})";
    }
  }
  std::string text = "{\n\"images\": [\n" + images + "\n],\n\"annotations\": [\n" + annotations +
                     "\n],\n\"categories\": [{\"id\": 9, \"name\": \"green\"}, {\"id\": 2, "
                     "\"name\": \"blue\"}, {\"id\": 5, \"name\": \"red\"}]\n}\n";
  if (edit) edit(text);
  const std::string path = (dir.path() / "instances.json").string();
  std::ofstream(path) << text;
  return path;
}

class Detection : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() / "images");
    set_ = scenes(30);
    json_ = write_coco(dir_, set_);
  }

  Options options(int workers) const {
    Options o;
    o.data = json_;
    o.batch = 8;
    o.chunk = 3;
    o.workers = workers;
    o.seed = 11;
    Pipeline p(96, 96, 3);
    p.random_resized_crop(96, 96, 0.3f, 1.0f).horizontal_flip(0.5f);
    o.pipeline = p;
    o.log = log_.sink();
    return o;
  }

  test::TempDir dir_;
  std::vector<Scene> set_;
  std::string json_;
  test::LogLines log_;
};

// The box of pixels over half-bright in channel `c` of an output sample, or none.
bool bright_box(const std::uint8_t* sample, int h, int w, int c, float box[4]) {
  int x1 = w, y1 = h, x2 = -1, y2 = -1;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      if (sample[(y * w + x) * 3 + c] < 128) continue;
      x1 = std::min(x1, x), y1 = std::min(y1, y), x2 = std::max(x2, x), y2 = std::max(y2, y);
    }
  }
  if (x2 < 0) return false;
  box[0] = static_cast<float>(x1), box[1] = static_cast<float>(y1);
  box[2] = static_cast<float>(x2 + 1), box[3] = static_cast<float>(y2 + 1);
  return true;
}

TEST_F(Detection, BoxesArriveWithThePixelsTheyCoverAndTheirClasses) {
  Loader loader(options(2));
  int checked = 0;
  while (auto b = loader.next()) {
    ASSERT_EQ(b->max_boxes(), 3);  // the most any image has
    ASSERT_EQ(b->boxes().size(), 8u * 3 * 4);
    ASSERT_EQ(b->box_counts().size(), 8u);
    for (int i = 0; i < b->size(); ++i) {
      EXPECT_EQ(b->labels()[i], -1);
      const Scene& s = set_[static_cast<std::size_t>(b->sample_ids()[i])];
      const int count = b->box_counts()[i];
      ASSERT_LE(count, static_cast<int>(s.boxes.size()));
      const std::uint8_t* px = b->pixels().data() + i * 96 * 96 * 3;
      const float* g = b->geometry().data() + 6 * i;
      EXPECT_EQ(g[4], static_cast<float>(s.width));
      EXPECT_EQ(g[5], static_cast<float>(s.height));
      bool delivered[3] = {false, false, false};
      for (int k = 0; k < 3; ++k) {
        const float* box = b->boxes().data() + (i * 3 + k) * 4;
        const int cls = b->box_classes()[i * 3 + k];
        if (k >= count) {  // padding rows
          EXPECT_EQ(cls, -1);
          EXPECT_TRUE(box[0] == 0 && box[1] == 0 && box[2] == 0 && box[3] == 0);
          continue;
        }
        ASSERT_TRUE(cls >= 0 && cls < 3) << cls;
        delivered[cls] = true;
        float seen[4];
        ASSERT_TRUE(bright_box(px, 96, 96, kRgbChannelOfClass[cls], seen)) << s.file;
        for (int e = 0; e < 4; ++e) EXPECT_NEAR(box[e], seen[e], 1.5) << s.file << " edge " << e;
        ++checked;
      }
      // A class whose box was dropped shows at most a sliver of its colour.
      for (const Rect& r : s.boxes) {
        if (delivered[r.cls]) continue;
        float seen[4];
        if (bright_box(px, 96, 96, kRgbChannelOfClass[r.cls], seen)) {
          EXPECT_TRUE(seen[2] - seen[0] <= 2 || seen[3] - seen[1] <= 2) << s.file;
        }
      }
    }
  }
  EXPECT_GT(checked, 30);
}

TEST_F(Detection, TheSameBoxesForAnyWorkerCountAndEpoch) {
  Loader in_process(options(0));
  Loader three(options(3));
  for (int epoch = 0; epoch < 2; ++epoch) {
    in_process.set_epoch(epoch);
    three.set_epoch(epoch);
    const test::Delivered a = test::collect(in_process);
    const test::Delivered b = test::collect(three);
    EXPECT_EQ(a.box_counts.size(), 32u);  // 4 batches of 8, the last one padded
    EXPECT_TRUE(a == b) << "epoch " << epoch;
  }
}

TEST_F(Detection, TheDetectionStepsAreTheSameForAnyWorkerCount) {
  Pipeline p(96, 96, 3);
  p.scale_jitter(80, 200).box_crop(96, 96, 0.6f).vertical_flip(0.3f).horizontal_flip(0.5f);
  Options a = options(0), b = options(2);
  a.pipeline = b.pipeline = p;
  Loader in_process(a), two(b);
  const test::Delivered x = test::collect(in_process);
  EXPECT_GT(std::accumulate(x.box_counts.begin(), x.box_counts.end(), 0), 30);
  EXPECT_TRUE(x == test::collect(two));
}

// F.affine's forward map, written from torchvision's definition (RandomAffine's centre c, the
// translation t: x' = RSS (x - c) + c + t, RSS = R(a) S(s) SHy(sy) SHx(sx) as its
// _get_inverse_affine_matrix documents it): {m00, m01, m02, m10, m11, m12}.
std::array<double, 6> affine_forward(const AppliedOp& op, double w, double h) {
  const double k = std::acos(-1.0) / 180;
  const double a = op.args[0] * k, s = op.args[3], sx = op.args[4] * k, sy = op.args[5] * k;
  const double m00 = s * std::cos(a - sy) / std::cos(sy);
  const double m01 = s * (-std::cos(a - sy) * std::tan(sx) / std::cos(sy) - std::sin(a));
  const double m10 = s * std::sin(a - sy) / std::cos(sy);
  const double m11 = s * (-std::sin(a - sy) * std::tan(sx) / std::cos(sy) + std::cos(a));
  const double cx = w / 2, cy = h / 2;
  return {m00, m01, cx + op.args[1] - m00 * cx - m01 * cy,
          m10, m11, cy + op.args[2] - m10 * cx - m11 * cy};
}

// random_affine after the crop and flip: each delivered box is what torchvision v2 makes of the
// annotation (the crop's window from the geometry, clamped as its crop clamps, then F.affine on
// BoundingBoxes: the box around the moved corners, clamped; SanitizeBoundingBoxes' min_size 1)
// within 1e-3 px, in order with its class; where the moved box stays inside the output it sits
// on its colour's pixels; and the same for 0 and 3 workers.
TEST_F(Detection, RandomAffineMovesEveryBoxAsTorchvisionDoes) {
  Pipeline p(96, 96, 3);
  p.random_resized_crop(96, 96, 0.3f, 1.0f)
      .horizontal_flip(0.5f)
      .random_affine(RandomAffineRanges{.degrees_min = -25,
                                        .degrees_max = 25,
                                        .translate_x = 0.1f,
                                        .translate_y = 0.1f,
                                        .scale_min = 0.8f,
                                        .scale_max = 1.1f,
                                        .shear_x_min = -8,
                                        .shear_x_max = 8});
  Options o = options(3);
  o.pipeline = p;
  Loader loader(o);
  int compared = 0, on_pixels = 0, dropped = 0, slivers = 0;
  while (auto b = loader.next()) {
    ASSERT_EQ(b->max_applied_ops(), 1);
    for (int i = 0; i < b->size(); ++i) {
      const Scene& s = set_[static_cast<std::size_t>(b->sample_ids()[i])];
      const float* g = b->geometry().data() + 6 * i;
      const AppliedOp& op = b->applied_ops()[static_cast<std::size_t>(i)];
      ASSERT_EQ(op.op, ImageOp::kAffine);
      const std::array<double, 6> m = affine_forward(op, 96, 96);
      std::vector<std::array<double, 4>> want;
      std::vector<int> classes;
      std::vector<bool> inside;
      for (const Rect& r : s.boxes) {
        const double xa = g[0] * r.x + g[1], xb = g[0] * (r.x + r.w) + g[1];
        const double ya = g[2] * r.y + g[3], yb = g[2] * (r.y + r.h) + g[3];
        const double bx1 = std::clamp(std::min(xa, xb), 0.0, 96.0);
        const double bx2 = std::clamp(std::max(xa, xb), 0.0, 96.0);
        const double by1 = std::clamp(std::min(ya, yb), 0.0, 96.0);
        const double by2 = std::clamp(std::max(ya, yb), 0.0, 96.0);
        double e[4] = {1e9, 1e9, -1e9, -1e9};
        for (const auto& [x, y] :
             {std::pair{bx1, by1}, std::pair{bx2, by1}, std::pair{bx2, by2}, std::pair{bx1, by2}}) {
          const double u = m[0] * x + m[1] * y + m[2], v = m[3] * x + m[4] * y + m[5];
          e[0] = std::min(e[0], u), e[1] = std::min(e[1], v);
          e[2] = std::max(e[2], u), e[3] = std::max(e[3], v);
        }
        const std::array<double, 4> c = {std::clamp(e[0], 0.0, 96.0), std::clamp(e[1], 0.0, 96.0),
                                         std::clamp(e[2], 0.0, 96.0), std::clamp(e[3], 0.0, 96.0)};
        if (c[2] - c[0] < 1 || c[3] - c[1] < 1) {
          ++dropped;
          continue;
        }
        want.push_back(c);
        classes.push_back(r.cls);
        // On the pixels when the warp moved a real box (not a line the crop left on the edge,
        // which torchvision turns into a box too) and kept all of it inside.
        const bool real = bx2 - bx1 >= 2 && by2 - by1 >= 2;
        slivers += !real;
        inside.push_back(real && e[0] >= 0 && e[1] >= 0 && e[2] <= 96 && e[3] <= 96);
      }
      ASSERT_EQ(b->box_counts()[i], static_cast<int>(want.size())) << s.file;
      const std::uint8_t* px = b->pixels().data() + i * 96 * 96 * 3;
      for (std::size_t k = 0; k < want.size(); ++k) {
        const float* box = b->boxes().data() + (i * 3 + static_cast<int>(k)) * 4;
        EXPECT_EQ(b->box_classes()[i * 3 + static_cast<int>(k)], classes[k]) << s.file;
        for (int e = 0; e < 4; ++e) EXPECT_NEAR(box[e], want[k][e], 1e-3) << s.file << " " << e;
        ++compared;
        float seen[4];
        if (!inside[k]) continue;
        ASSERT_TRUE(bright_box(px, 96, 96, kRgbChannelOfClass[classes[k]], seen)) << s.file;
        for (int e = 0; e < 4; ++e) EXPECT_NEAR(box[e], seen[e], 2.0) << s.file << " edge " << e;
        ++on_pixels;
      }
    }
  }
  EXPECT_GT(compared, 30);
  EXPECT_GT(on_pixels, 15);
  EXPECT_GT(dropped, 0);
  EXPECT_GT(slivers, 0);  // the crop cut some box to a line, and the warp's rules met it
  Options none = o;
  none.workers = 0;
  Loader in_process(none), three(o);
  EXPECT_TRUE(test::collect(in_process) == test::collect(three));
}

// The same images and boxes as shard members (key.png or key.jpg, key.json) give the COCO
// file's batches; a member that is not the boxes layout leaves its sample out, named.
TEST_F(Detection, ShardJsonMembersGiveTheSameBoxesAsTheCocoFile) {
  std::vector<std::pair<std::string, std::string>> members;
  for (std::size_t i = 0; i < set_.size(); ++i) {
    const Scene& s = set_[i];
    std::string boxes, classes;
    for (const Rect& r : s.boxes) {
      boxes += std::string(boxes.empty() ? "" : ", ") + "[" + std::to_string(r.x) + ", " +
               std::to_string(r.y) + ", " + std::to_string(r.x + r.w) + ", " +
               std::to_string(r.y + r.h) + "]";
      classes += std::string(classes.empty() ? "" : ", ") + std::to_string(r.cls);
    }
    const std::string json = i == 7 ? R"({"boxes": [[1, 2, 3]], "classes": [0]})"
                                    : R"({"boxes": [)" + boxes + R"(], "classes": [)" + classes +
                                          R"(], "width": )" + std::to_string(s.width) +
                                          R"(, "height": )" + std::to_string(s.height) + "}";
    char key[16];
    std::snprintf(key, sizeof key, "%06d", static_cast<int>(i));
    const std::string ext = std::filesystem::path(s.file).extension().string();
    members.push_back({key + ext, test::read_file(dir_.path() / "images" / s.file)});
    members.push_back({key + std::string(".json"), json});
  }
  std::ofstream(dir_.path() / "s.tar", std::ios::binary) << test::tar_archive(members);
  Options coco = options(2);
  coco.shuffle = false;
  Options shards = coco;
  shards.data = (dir_.path() / "s.tar").string();
  shards.label_field = "none";
  shards.box_field = "json";
  Loader a(coco), b(shards);
  EXPECT_EQ(b.dataset_size(), 29);
  EXPECT_TRUE(
      log_.contains("000007 (boxes: boxes[0]: expected 4 numbers [x1, y1, x2, y2]) while "
                    "indexing: undecodable"));
  test::Delivered x = test::collect(a), y = test::collect(b);
  // The COCO file has sample 7; the shard does not: compare the samples before it.
  const std::size_t before = 7;
  ASSERT_GE(x.box_counts.size(), before);
  EXPECT_TRUE(
      std::equal(x.box_counts.begin(), x.box_counts.begin() + before, y.box_counts.begin()));
  EXPECT_TRUE(std::equal(x.boxes.begin(), x.boxes.begin() + before * 12, y.boxes.begin()));
  EXPECT_TRUE(
      std::equal(x.box_classes.begin(), x.box_classes.begin() + before * 3, y.box_classes.begin()));
  EXPECT_TRUE(
      std::equal(x.pixels.begin(), x.pixels.begin() + before * 96 * 96 * 3, y.pixels.begin()));
}

// The scenes as a list file with masks (each rectangle labelled class + 1): on JPEGs (the region
// path) and PNGs alike, each label covers the pixels of its colour, and a resume continues
// with the same masks.
TEST_F(Detection, MasksFollowTheirImagesOnBothDecodePathsAndAcrossAResume) {
  std::ofstream list(dir_.path() / "list.txt");
  for (std::size_t i = 0; i < set_.size(); ++i) {
    const Scene& s = set_[i];
    cv::Mat mask(s.height, s.width, CV_8UC1, cv::Scalar(0));
    for (const Rect& r : s.boxes) mask(cv::Rect(r.x, r.y, r.w, r.h)).setTo(r.cls + 1);
    const std::string name = "mask" + std::to_string(i) + ".png";
    ASSERT_TRUE(cv::imwrite((dir_.path() / name).string(), mask));
    list << "images/" << s.file << "\t0\t" << name << "\n";
  }
  list.close();
  Options o = options(2);
  o.data = (dir_.path() / "list.txt").string();
  std::int64_t agree[2] = {0, 0}, total[2] = {0, 0};
  {
    Loader loader(o);
    while (auto b = loader.next()) {
      for (int i = 0; i < b->size(); ++i) {
        const bool jpeg = b->sample_ids()[i] % 2 == 1;
        const std::uint8_t* px = b->pixels().data() + i * 96 * 96 * 3;
        const std::uint8_t* m = b->masks().data() + i * 96 * 96;
        for (int k = 0; k < 96 * 96; ++k) {
          // A pixel bright in exactly one channel belongs to that class's rectangle.
          int lit = -1, n = 0;
          for (int c = 0; c < 3; ++c) {
            if (px[3 * k + kRgbChannelOfClass[c]] >= 128) lit = c, ++n;
          }
          if (n > 1) continue;  // two rectangles overlap: the later one's label
          agree[jpeg] += m[k] == (n == 0 ? 0 : lit + 1);
          ++total[jpeg];
        }
      }
    }
  }
  for (int path = 0; path < 2; ++path)
    EXPECT_GT(static_cast<double>(agree[path]) / static_cast<double>(total[path]), 0.97) << path;
  Loader whole(o);
  test::collect(whole, 1);
  const LoaderState saved = whole.state();
  const test::Delivered rest = test::collect(whole);
  o.resume = saved;
  Loader resumed(o);
  const test::Delivered again = test::collect(resumed);
  EXPECT_FALSE(rest.masks.empty());
  EXPECT_TRUE(again == rest);
}

TEST_F(Detection, AResumedLoaderDeliversTheRestOfTheEpochsBoxes) {
  Loader whole(options(2));
  test::collect(whole, 2);
  const LoaderState saved = whole.state();
  const test::Delivered rest = test::collect(whole);
  Options o = options(1);
  o.resume = saved;
  Loader resumed(o);
  EXPECT_TRUE(test::collect(resumed) == rest);
}

TEST_F(Detection, EachDeviceReceivesItsChunksBoxes) {
  test::FakeGpuScope gpu;
  Options o = options(2);
  o.devices = DeviceSet::parse("cuda:0,1");
  o.dtype = DType::kFloat32;
  Loader loader = gpu.loader(o);
  int batches = 0;
  while (auto b = loader.next()) {
    for (int d = 0; d < 2; ++d) {
      b->wait(d);
      const DeviceChunk c = b->chunk(d);
      ASSERT_EQ(c.boxes.size(), 4u * 3 * 4);
      ASSERT_NE(c.device_boxes, nullptr);
      EXPECT_NE(static_cast<const void*>(c.device_boxes), static_cast<const void*>(c.boxes.data()));
      EXPECT_TRUE(std::equal(c.boxes.begin(), c.boxes.end(), c.device_boxes));
      EXPECT_TRUE(std::equal(c.box_classes.begin(), c.box_classes.end(), c.device_box_classes));
      EXPECT_TRUE(std::equal(c.box_counts.begin(), c.box_counts.end(), c.device_box_counts));
      // The chunk is its share of the batch's arrays.
      EXPECT_EQ(c.box_counts.data(), b->box_counts().data() + 4 * d);
    }
    ++batches;
  }
  EXPECT_EQ(batches, 4);
}

TEST_F(Detection, AFewerMaxBoxesKeepsTheFirstOnesUnderSkipAndIsAnErrorUnderError) {
  Options o = options(0);
  o.max_boxes = 1;
  Loader loader(o);
  EXPECT_TRUE(log_.contains("have more boxes than max_boxes 1"));
  while (auto b = loader.next()) {
    ASSERT_EQ(b->max_boxes(), 1);
    for (int i = 0; i < b->size(); ++i) {
      const Scene& s = set_[static_cast<std::size_t>(b->sample_ids()[i])];
      ASSERT_LE(b->box_counts()[i], 1);
      // The first box the crop keeps: with no crop at all it would be the file's first.
      if (b->box_counts()[i] == 1) {
        const int cls = b->box_classes()[i];
        EXPECT_TRUE(std::any_of(s.boxes.begin(), s.boxes.end(),
                                [&](const Rect& r) { return r.cls == cls; }));
      }
    }
  }
  o.on_error = OnError::kError;
  try {
    Loader strict(o);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("img1.jpg has 2 boxes, more than max_boxes 1"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Detection, MaxBoxesOnDataWithoutBoxesIsAConfigError) {
  Options o = test::fashion_options(0);
  o.max_boxes = 4;
  try {
    Loader loader(o);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("has no boxes"), std::string::npos) << e.what();
  }
  o.max_boxes = -1;
  EXPECT_THROW(Loader{o}, ConfigError);
}

TEST_F(Detection, AnImageOfAnotherSizeThanAnnotatedIsSkippedAsWrongSize) {
  // The file says img4.png is a pixel narrower than it is.
  const std::string width = std::to_string(set_[4].width);
  const std::string json = write_coco(dir_, set_, [&](std::string& text) {
    const std::string from = R"("images/img4.png", "width": )" + width;
    text.replace(text.find(from) + from.size() - width.size(), width.size(),
                 std::to_string(set_[4].width - 1));
  });
  Options o = options(2);
  o.data = json;
  Loader loader(o);
  const test::Delivered d = test::collect(loader);
  EXPECT_EQ(std::count(d.ids.begin(), d.ids.end(), 4), 0);
  EXPECT_EQ(loader.stats().skipped_by_reason.at("wrong_size"), 1);
  o.on_error = OnError::kError;
  Loader strict(o);
  try {
    while (strict.next()) {
    }
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("img4.png"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("wrong_size"), std::string::npos) << e.what();
  }
}

TEST_F(Detection, BadAnnotationFilesAreClearErrors) {
  // A syntax error: the file and the line.
  const std::string broken = write_coco(
      dir_, set_, [](std::string& text) { text.replace(text.find("\"annotations\""), 1, ""); });
  Options o = options(0);
  o.data = broken;
  try {
    Loader loader(o);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("instances.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line"), std::string::npos) << e.what();
  }
  // A box outside its image: left out (and said) under skip, a DataError under error.
  const std::string outside = write_coco(dir_, set_, [](std::string& text) {
    const std::string from = R"("bbox": [)";
    const std::size_t at = text.find(from) + from.size();
    text.replace(at, text.find(',', at) - at, "5000");
  });
  o.data = outside;
  {
    Loader loader(o);
    EXPECT_TRUE(log_.contains("a box outside its"));
  }
  o.on_error = OnError::kError;
  EXPECT_THROW(Loader{o}, DataError);
  o.data = (dir_.path() / "missing.json").string();
  EXPECT_THROW(Loader{o}, ConfigError);
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

// The real photographs of bench/make_detection_set.py (made by the make_testdata fixture),
// through a plain resize to 224 x 224: every box arrives, scaled by the image's own factors.
TEST(DetectionSet, RealPhotographsArriveWithEveryBoxScaledAsTheirImage) {
  const std::string json = test::testdata("detection") + "/instances.json";
  const detail::CocoDataset coco = detail::read_coco(json, "", OnError::kError);
  Options o;
  o.data = json;
  o.batch = 5;
  o.workers = 2;
  o.shuffle = false;
  Pipeline p(224, 224, 3);
  p.resize(224, 224);
  o.pipeline = p;
  test::LogLines log;
  o.log = log.sink();
  Loader loader(o);
  EXPECT_TRUE(log.contains("5 crowd annotation(s) (iscrowd 1) left out"));
  std::size_t images = 0, boxes = 0;
  while (auto b = loader.next()) {
    const int rows = b->max_boxes();
    for (int i = 0; i < b->size(); ++i) {
      const detail::CocoImage& img = coco.images[static_cast<std::size_t>(b->sample_ids()[i])];
      ASSERT_EQ(b->box_counts()[i], static_cast<int>(img.box_count)) << img.path;
      const float sx = 224.0f / static_cast<float>(img.width);
      const float sy = 224.0f / static_cast<float>(img.height);
      const float* g = b->geometry().data() + 6 * i;
      EXPECT_FLOAT_EQ(g[0], sx);
      EXPECT_EQ(g[1], 0.0f);
      EXPECT_FLOAT_EQ(g[2], sy);
      EXPECT_EQ(g[3], 0.0f);
      EXPECT_EQ(g[4], static_cast<float>(img.width));
      EXPECT_EQ(g[5], static_cast<float>(img.height));
      for (std::size_t k = 0; k < img.box_count; ++k) {
        const detail::SampleBox& want = coco.boxes[img.first_box + k];
        const float* got = b->boxes().data() + (i * rows + static_cast<int>(k)) * 4;
        EXPECT_NEAR(got[0], want.x1 * sx, 1e-3) << img.path;
        EXPECT_NEAR(got[1], want.y1 * sy, 1e-3) << img.path;
        EXPECT_NEAR(got[2], want.x2 * sx, 1e-3) << img.path;
        EXPECT_NEAR(got[3], want.y2 * sy, 1e-3) << img.path;
        EXPECT_EQ(b->box_classes()[i * rows + static_cast<int>(k)], want.label);
      }
      if (b->valid()[i] != 0) ++images, boxes += img.box_count;
    }
  }
  EXPECT_EQ(images, 45u);
  EXPECT_EQ(boxes, 224u);  // 229 annotations, 5 of them crowd
  EXPECT_EQ(loader.stats().skipped, 0);
}

}  // namespace
}  // namespace stoke
