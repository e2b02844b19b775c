// Inputs the decode fuzzer found (tests/fuzz/reproducers/decode/), fed to the regular build: each
// must be classified, never crash, overflow or allocate gigabytes.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "augment/augment.hpp"
#include "decode/decode.hpp"
#include "stoke/pipeline.hpp"

namespace stoke::detail {
namespace {

// The fuzzer's inputs start with a 5-byte header (control byte, 4 seed bytes).
std::vector<std::uint8_t> reproducer(const char* name) {
  std::ifstream in(std::string(STOKE_SOURCE_DIR) + "/tests/fuzz/reproducers/decode/" + name,
                   std::ios::binary);
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  EXPECT_GT(bytes.size(), 5u) << name;
  bytes.erase(bytes.begin(), bytes.begin() + 5);
  return bytes;
}

TEST(DecodeRegression, PngHeaderOf4294967295SquaredIsTooLargeWithoutOverflow) {
  const auto bytes = reproducer("png_ihdr_dims_overflow.bin");
  ImageDecoder decoder;
  DecodedImage out;
  EXPECT_EQ(decoder.decode_buffer(bytes.data(), bytes.size(), 3, out), BadInput::kTooLarge);
}

TEST(DecodeRegression, DicomIsUndecodableAndNeverReachesGdcm) {
  const auto bytes = reproducer("dicom_gdcm_assert.bin");
  ImageDecoder decoder;
  DecodedImage out;
  EXPECT_EQ(decoder.decode_buffer(bytes.data(), bytes.size(), 3, out), BadInput::kUndecodable);
}

TEST(DecodeRegression, AStripImageScaledUpByResizeShorterIsRefusedBeforeAllocating) {
  const auto bytes = reproducer("png_strip_1x1000000_resize_shorter.bin");
  ImageDecoder decoder(4'000'000);
  DecodedImage out;
  ASSERT_EQ(decoder.decode_buffer(bytes.data(), bytes.size(), 3, out), BadInput::kNone);
  ASSERT_EQ(out.pixels.rows * static_cast<std::int64_t>(out.pixels.cols), 1'000'000);
  for (int size : {36, 256, 4096}) {
    Pipeline p(size, size, 3);
    p.resize_shorter(size).center_crop(size, size);
    std::vector<std::uint8_t> dst(static_cast<std::size_t>(size) * size * 3);
    const cv::Mat& m = out.pixels;
    const ImageRef src{m.data, m.rows, m.cols, 3, m.step[0], out.bgr};
    SampleRng rng(0, kSampleStream, 0, 0);
    Augmenter a;
    const std::vector<Step> steps = p.steps();
    EXPECT_THROW(
        a.run(steps.data(), static_cast<int>(steps.size()), src, rng, dst.data(), size, size, 3),
        ImageTooLarge)
        << "resize_shorter(" << size << ")";
  }
}

}  // namespace
}  // namespace stoke::detail
