// libFuzzer target: the input is a COCO instances file -> read_coco, under OnError::kSkip and
// OnError::kError. read_coco takes a path, so the input is handed over as an in-memory file
// (/proc/self/fd/N); the target uses only data/coco.hpp's public function, whatever parser is
// behind it.
//
// Checks beyond the sanitizers:
//   * read_coco returns a dataset or a ConfigError / DataError, nothing else (nlohmann's own
//     exceptions, std::bad_alloc and libFuzzer's memory limits count as findings);
//   * class_names and category_ids match one to one, the ids strictly ascending;
//   * every image has a positive size and its boxes [first_box, first_box + box_count) are the
//     next ones of `boxes` (grouped by image, in order, none left over);
//   * every box has a class in [0, class_names.size()), is not inverted, and lies within its
//     image up to the documented 1-pixel tolerance;
//   * the two modes agree: kError fails with a DataError only where kSkip drops a box (or fails),
//     with a ConfigError only where kSkip does too, and otherwise reads what kSkip reads.

#include <cstddef>
#include <cstdint>
#include <string>

#include "data/coco.hpp"
#include "fuzz_support.hpp"
#include "stoke/error.hpp"

namespace {

using stoke::OnError;
using stoke::detail::CocoDataset;

constexpr float kTolerance = 1.0f;

void check(const CocoDataset& d) {
  STOKE_FUZZ_CHECK(d.class_names.size() == d.category_ids.size());
  for (std::size_t i = 1; i < d.category_ids.size(); ++i)
    STOKE_FUZZ_CHECK(d.category_ids[i - 1] < d.category_ids[i]);
  std::size_t next = 0;
  for (const auto& img : d.images) {
    STOKE_FUZZ_CHECK(img.width > 0 && img.height > 0, img.path);
    STOKE_FUZZ_CHECK(img.first_box == next, img.path);
    STOKE_FUZZ_CHECK(img.box_count <= d.boxes.size() - next, img.path);
    for (std::size_t k = img.first_box; k < img.first_box + img.box_count; ++k) {
      const auto& b = d.boxes[k];
      STOKE_FUZZ_CHECK(b.label >= 0 && static_cast<std::size_t>(b.label) < d.class_names.size());
      STOKE_FUZZ_CHECK(b.x2 >= b.x1 && b.y2 >= b.y1, img.path);
      STOKE_FUZZ_CHECK(b.x1 >= -kTolerance && b.y1 >= -kTolerance &&
                           b.x2 <= static_cast<float>(img.width) + kTolerance &&
                           b.y2 <= static_cast<float>(img.height) + kTolerance,
                       img.path);
    }
    next += img.box_count;
  }
  STOKE_FUZZ_CHECK(next == d.boxes.size());
}

bool same(const CocoDataset& a, const CocoDataset& b) {
  if (a.images.size() != b.images.size() || a.boxes.size() != b.boxes.size() ||
      a.class_names != b.class_names || a.crowd != b.crowd)
    return false;
  for (std::size_t i = 0; i < a.images.size(); ++i) {
    if (a.images[i].path != b.images[i].path || a.images[i].box_count != b.images[i].box_count)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static stoke::fuzz::MemFile file;
  const std::string& path = file.fill(data, size);
  std::optional<CocoDataset> skipped;
  try {
    skipped = stoke::detail::read_coco(path, "/coco/images", OnError::kSkip);
    check(*skipped);
  } catch (const stoke::ConfigError&) {
  } catch (const stoke::DataError& e) {
    stoke::fuzz::fail("a DataError under OnError::kSkip", e.what());
  }
  try {
    const CocoDataset strict = stoke::detail::read_coco(path, "/coco/images", OnError::kError);
    check(strict);
    STOKE_FUZZ_CHECK(strict.dropped.empty());
    STOKE_FUZZ_CHECK(skipped && skipped->dropped.empty() && same(*skipped, strict),
                     "kError accepted what kSkip did not read the same way");
  } catch (const stoke::ConfigError&) {
    STOKE_FUZZ_CHECK(!skipped, "a ConfigError under kError only");
  } catch (const stoke::DataError&) {
    STOKE_FUZZ_CHECK(!skipped || !skipped->dropped.empty(),
                     "a DataError under kError, but kSkip read the file and dropped nothing");
  }
  return 0;
}
