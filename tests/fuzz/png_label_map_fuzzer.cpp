// libFuzzer target: the input is a mask file (a shard's mask member or a mask on disk) ->
// PngLabelMapReader::open -> decode, as ChunkRunner::decode_mask calls them: once reading only
// the rows a crop would need (the top half; the zlib stream's Adler-32 unchecked), once the
// whole file (Verify::kWholeFile).
//
// Checks beyond the sanitizers:
//   * open() accepts only gray (1-16 bit) and palette (1-8 bit) files within the pixel limit;
//   * the decoded rows fill exactly height x stride bytes, one or two bytes a label;
//   * a file the whole-file decode accepts, the region decode accepts too, with the same bytes
//     in every row it decoded; palette indices and gray values below 8 bits stay below
//     2^bit_depth (unscaled).

#include <png.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "decode/png_label_map.hpp"
#include "fuzz_support.hpp"

namespace {

using stoke::detail::BadInput;
using stoke::detail::PngLabelMapReader;

// As in the decode target: far below the loader's default, so a header alone cannot push one
// decode past libFuzzer's memory limit (16-bit labels: 2 bytes a pixel).
constexpr std::int64_t kMaxPixels = 4'000'000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  PngLabelMapReader region;
  const BadInput opened = region.open(data, size, kMaxPixels);
  if (opened != BadInput::kNone) return 0;
  const int bit_depth = data[24];
  const int color_type = data[25];
  STOKE_FUZZ_CHECK(color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_PALETTE);
  STOKE_FUZZ_CHECK(region.width() > 0 && region.height() > 0 &&
                   std::int64_t{region.width()} * region.height() <= kMaxPixels);
  STOKE_FUZZ_CHECK(region.bytes() == (bit_depth == 16 ? 2 : 1));
  STOKE_FUZZ_CHECK(region.stride() == static_cast<std::size_t>(region.width()) * region.bytes());

  const int last_row = (region.height() - 1) / 2;
  const BadInput region_result = region.decode(last_row, false);
  PngLabelMapReader whole;
  STOKE_FUZZ_CHECK(whole.open(data, size, kMaxPixels) == BadInput::kNone);
  const BadInput whole_result = whole.decode(whole.height() - 1, true);
  if (whole_result != BadInput::kNone) return 0;
  STOKE_FUZZ_CHECK(region_result == BadInput::kNone,
                   "the whole file decodes but its first rows do not");
  const std::size_t bytes = region.stride() * static_cast<std::size_t>(last_row + 1);
  STOKE_FUZZ_CHECK(std::memcmp(region.rows(), whole.rows(), bytes) == 0,
                   "the region decode's rows differ from the whole file's");
  if (bit_depth < 8) {
    const std::size_t all = whole.stride() * static_cast<std::size_t>(whole.height());
    const std::uint8_t top = static_cast<std::uint8_t>((1 << bit_depth) - 1);
    STOKE_FUZZ_CHECK(
        std::all_of(whole.rows(), whole.rows() + all, [top](std::uint8_t v) { return v <= top; }),
        "a label above 2^bit_depth - 1 (scaled, not unpacked)");
  }
  return 0;
}
