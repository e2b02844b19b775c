// libFuzzer target: the input is a shard sample's .json member (WebDataset's per-sample metadata)
// read as its label and as its boxes. The target writes a one-sample shard (s/000000.jpg, then
// s/000000.json holding the input) with stoke's own tar writer into an in-memory file and indexes
// it with index_shards, the public function the loader calls, twice:
//   1. label_field "json:label", no boxes: the label is the member's integer field "label";
//   2. label_field "none", box_field "json": {"boxes": [[x1, y1, x2, y2], ...],
//      "classes": [c, ...], "width": W, "height": H}.
//
// Checks beyond the sanitizers:
//   * index_shards returns an index or a stoke::Error (no samples), nothing else (nlohmann's
//     exceptions, std::bad_alloc and libFuzzer's memory limits count as findings);
//   * at most the one sample; a kept sample's label is in [0, max_classes); with boxes, its
//     boxes are [box_first, box_first + box_count) of the index, not inverted, with finite
//     corners, each with a class in [0, max_classes);
//   * no table of class names: one sample's label or box class must not size one (a table of
//     2^31 names is ~64 GiB); a label at or past max_classes is a stoke::DataError.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/dataset_index.hpp"
#include "data/tar_index.hpp"
#include "fuzz_support.hpp"
#include "stoke/error.hpp"

namespace {

using stoke::detail::DatasetIndex;

constexpr int kMaxClasses = 1 << 24;  // Options::max_classes' default

std::string one_sample_shard(const std::uint8_t* json, std::size_t size) {
  using stoke::detail::tar_member_header;
  using stoke::detail::tar_padding;
  std::string tar = tar_member_header("s/000000.jpg", 1);
  tar += 'x';
  tar.append(tar_padding(1), '\0');
  tar += tar_member_header("s/000000.json", size);
  tar.append(reinterpret_cast<const char*>(json), size);
  tar.append(tar_padding(size), '\0');
  tar.append(stoke::detail::kTarEndBytes, '\0');
  return tar;
}

void check(const DatasetIndex& index, bool boxes) {
  STOKE_FUZZ_CHECK(index.entries.size() <= 1);
  STOKE_FUZZ_CHECK(index.class_names.empty(),
                   std::to_string(index.class_names.size()) + " class names from one sample");
  for (const auto& e : index.entries) {
    STOKE_FUZZ_CHECK(e.label >= 0 && e.label < kMaxClasses);
    if (!boxes) continue;
    STOKE_FUZZ_CHECK(e.box_first <= index.boxes.size() &&
                     e.box_count <= index.boxes.size() - e.box_first);
    for (std::size_t k = e.box_first; k < e.box_first + e.box_count; ++k) {
      const auto& b = index.boxes[k];
      STOKE_FUZZ_CHECK(b.x2 > b.x1 && b.y2 > b.y1);
      STOKE_FUZZ_CHECK(std::isfinite(b.x1) && std::isfinite(b.y1) && std::isfinite(b.x2) &&
                       std::isfinite(b.y2));
      STOKE_FUZZ_CHECK(b.label >= 0 && b.label < kMaxClasses);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static stoke::fuzz::MemFile file;
  const std::string shard = one_sample_shard(data, size);
  const std::vector<std::string> shards{file.fill(shard.data(), shard.size())};
  for (const bool boxes : {false, true}) {
    stoke::detail::ShardFields fields;
    fields.label = boxes ? "none" : "json:label";
    fields.boxes = boxes ? "json" : "";
    try {
      check(stoke::detail::index_shards(shards, fields, {}, {}, kMaxClasses), boxes);
    } catch (const stoke::Error&) {
      // No sample survived (a bad label or boxes member): the loader's "hold no samples" error.
    }
  }
  return 0;
}
