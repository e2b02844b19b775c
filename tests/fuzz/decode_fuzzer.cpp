// libFuzzer target: raw bytes -> ImageDecoder::decode_buffer -> Augmenter::run (the general
// path), and for JPEG input also JpegRegionSource -> Augmenter::run (the region-decode fast path
// a stoke-worker takes for JPEG files; see loader/src/worker/chunk_runner.cpp).
//
// Input layout (so that a mutation can change the pipeline or the random draws without touching
// the image, and the image without touching them):
//
//   byte 0      control: bit 0 = output channels (0: gray, 1: RGB)
//                        bits 1-2 = pipeline (see make_pipelines below)
//   bytes 1..4  little-endian position for the per-sample generator (SampleRng)
//   bytes 5..   the encoded image (JPEG, PNG, BMP, or anything else OpenCV may recognize)
//
// Strip the first 5 bytes of a reproducer (`tail -c +6 crash-...`) to get the bare image file.
//
// Checks beyond the sanitizers:
//   * a successful decode returns 8-bit pixels with the requested channel count within the pixel
//     limit, as stoke-worker assumes;
//   * the augmenter never throws for a successfully decoded image (the library would turn a
//     cv::Exception here into "undecodable", i.e. silently drop a valid image);
//   * output is deterministic: the long-lived augmenter (reused across inputs, as in a worker)
//     and a fresh one produce the same bytes from the same draws;
//   * for JPEG input the fast path reaches the same verdict as the whole-image decoder (the same
//     BadInput reason, or success), however little of the image its crop decodes.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <new>
#include <opencv2/core.hpp>
#include <opencv2/core/utils/logger.hpp>
#include <string>
#include <vector>

#include "augment/augment.hpp"
#include "decode/decode.hpp"
#include "decode/jpeg_region.hpp"
#include "plan/sample_rng.hpp"
#include "stoke/pipeline.hpp"

namespace {

using stoke::Pipeline;
using stoke::detail::Augmenter;
using stoke::detail::BadInput;
using stoke::detail::DecodedImage;
using stoke::detail::ImageDecoder;
using stoke::detail::ImageRef;
using stoke::detail::SampleRng;

// Far below the library default (100M) so a fuzzed header cannot make a single decode allocate
// more than libFuzzer's -rss_limit_mb.
constexpr std::int64_t kMaxPixels = 4'000'000;
constexpr std::size_t kHeaderBytes = 5;
constexpr std::uint64_t kSeed = 0x5eed;

// The four pipelines for one output channel count, indexed by bits 1-2 of the control byte.
std::vector<Pipeline> make_pipelines(int channels) {
  std::vector<Pipeline> p;
  // 0: photographs' training pipeline: random_resized_crop 32x32 + horizontal_flip, then
  //    TrivialAugmentWide (every photometric and geometric op of the policies, on the output).
  p.push_back(Pipeline::training(32, 32, channels, false).trivial_augment_wide());
  // 1: resize + crops + jitter + a bilinear random_affine: the steps that move the window
  //    outside the source, and the colour ops and the warp run on the image before a crop with
  //    padding.
  {
    Pipeline q(32, 32, channels);
    q.resize_shorter(36).center_crop(36, 36).color_jitter(0.4f, 0.4f, 0.4f, 0.1f);
    q.random_affine(stoke::RandomAffineRanges{.degrees_min = -30,
                                              .degrees_max = 30,
                                              .translate_x = 0.2f,
                                              .translate_y = 0.2f,
                                              .scale_min = 0.5f,
                                              .scale_max = 1.5f,
                                              .shear_x_min = -20,
                                              .shear_x_max = 20,
                                              .interpolation = stoke::Interpolation::kBilinear,
                                              .fill = 128});
    q.pad_random_crop(4, 32, 32).horizontal_flip(0.5f);
    p.push_back(std::move(q));
  }
  // 2: small-image training pipeline: pad_random_crop 28x28 + flip straight on the decoded
  //    source (the write_small_gray fast path for gray sources 16..256 wide), then random_affine
  //    (nearest) on the written output.
  p.push_back(Pipeline::training(28, 28, channels, true).random_affine(15.f));
  // 3: evaluation pipeline: resize_shorter(37) + center_crop 32x32, then AugMix (its chains'
  //    bilinear warps and float32 mix on the output).
  p.push_back(Pipeline::evaluation(32, 32, channels, false).augmix());
  for (const Pipeline& q : p) q.validate(0, 0);  // what Loader does for decoded datasets
  return p;
}

struct Fixture {
  std::vector<Pipeline> pipelines[2] = {make_pipelines(1), make_pipelines(3)};  // gray, RGB
  ImageDecoder decoder{kMaxPixels};
  Augmenter augmenter;  // long-lived, like ChunkRunner's
  Augmenter region_augmenter;
  stoke::detail::JpegRegionSource jpeg;
  DecodedImage decoded;
};

Fixture* fixture = nullptr;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "stoke_decode_fuzzer: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

// Runs the JPEG fast path twice (long-lived and fresh augmenter) and checks its verdict against
// the whole-image decoder's and its determinism; then once more with Verify::kRegion.
void check_fast_path(Fixture& f, const std::uint8_t* image, std::size_t n, const Pipeline& pipeline,
                     std::int64_t position, BadInput expected) {
  const int oh = pipeline.output_height(), ow = pipeline.output_width();
  const int oc = pipeline.output_channels();
  const std::size_t out_bytes = static_cast<std::size_t>(oh) * ow * oc;
  std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[out_bytes]);
  std::unique_ptr<std::uint8_t[]> again(new std::uint8_t[out_bytes]);
  const std::vector<stoke::Step> steps = pipeline.steps();
  // The fast path plans the pipeline's geometry from the header before decoding: a step that
  // would need an absurd intermediate image (ImageTooLarge) rejects the file as too_large before
  // a corrupt scan is reached, where the whole-image decoder, decoding first, says corrupt.
  // Both reject the file; that verdict is the pipeline's, whatever the bytes hold.
  bool pipeline_refused = false;
  const auto run = [&](Augmenter& a, std::uint8_t* dst,
                       stoke::Verify verify = stoke::Verify::kWholeFile) {
    f.jpeg.set_verify(verify);
    BadInput got = f.jpeg.open(image, n, oc, kMaxPixels);
    if (got != BadInput::kNone) return got;
    try {
      SampleRng rng(kSeed, stoke::detail::kSampleStream, 0, position);
      a.run(steps.data(), static_cast<int>(steps.size()), f.jpeg, rng, dst, oh, ow, oc);
    } catch (const stoke::detail::BadImage& e) {
      got = e.reason;
    } catch (const std::bad_alloc&) {
      got = BadInput::kTooLarge;
    } catch (const stoke::detail::ImageTooLarge&) {
      got = BadInput::kTooLarge;
      pipeline_refused = true;
    } catch (const cv::Exception& e) {
      std::fprintf(stderr, "cv::Exception from the fast path: %s\n", e.what());
      fail("the JPEG fast path threw cv::Exception");
    }
    return got;
  };
  const BadInput got = run(f.region_augmenter, out.get());
  if (pipeline_refused) return;
  if (got != expected) {
    std::fprintf(stderr, "fast path: %s, whole-image decoder: %s\n",
                 stoke::detail::bad_input_name(got), stoke::detail::bad_input_name(expected));
    fail("the JPEG fast path and the whole-image decoder disagree about this file");
  }
  // Verify::kRegion decodes a prefix of what kWholeFile decodes: it may miss damage, never
  // report damage kWholeFile does not, and what it delivers is what kWholeFile delivers.
  std::unique_ptr<std::uint8_t[]> partial(new std::uint8_t[out_bytes]);
  const BadInput region = run(f.region_augmenter, partial.get(), stoke::Verify::kRegion);
  if (region != BadInput::kNone && region != got)
    fail("Verify::kRegion reports damage that Verify::kWholeFile does not");
  if (got == BadInput::kNone && region == BadInput::kNone &&
      std::memcmp(out.get(), partial.get(), out_bytes) != 0)
    fail("Verify::kRegion delivers other pixels than Verify::kWholeFile");
  if (got != BadInput::kNone) return;
  Augmenter fresh;
  if (run(fresh, again.get()) != BadInput::kNone) fail("the JPEG fast path is not repeatable");
  if (std::memcmp(out.get(), again.get(), out_bytes) != 0)
    fail("fast-path output depends on state left by earlier inputs");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // As stoke-worker does before serving: one thread, and OpenCV's own decoders held to the limit.
  cv::setNumThreads(0);
  ::setenv("OPENCV_IO_MAX_IMAGE_PIXELS", std::to_string(kMaxPixels).c_str(), 1);
  // OpenCV reports every rejected buffer (CV_LOG_* and, in imdecode, straight to std::cerr);
  // at hundreds of inputs a second that drowns libFuzzer's status lines and slows the run.
  // Sanitizer and libFuzzer reports do not go through either. STOKE_FUZZ_VERBOSE=1 keeps them.
  if (std::getenv("STOKE_FUZZ_VERBOSE") == nullptr) {
    cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
    std::cerr.setstate(std::ios::badbit);
  }
  fixture = new Fixture;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < kHeaderBytes) return -1;  // not worth keeping in the corpus
  Fixture& f = *fixture;
  const int channels = (data[0] & 1) ? 3 : 1;
  const Pipeline& pipeline = f.pipelines[channels == 3][(data[0] >> 1) & 3];
  const std::int64_t position =
      static_cast<std::int64_t>(std::uint32_t{data[1]} | (std::uint32_t{data[2]} << 8) |
                                (std::uint32_t{data[3]} << 16) | (std::uint32_t{data[4]} << 24));

  // The decoder reads exactly the image bytes: a heap copy, so ASan sees any read past the end
  // (libFuzzer's own buffer is also exact, but this keeps the header out of reach too).
  const std::size_t n = size - kHeaderBytes;
  std::unique_ptr<std::uint8_t[]> image(new std::uint8_t[n ? n : 1]);
  if (n) std::memcpy(image.get(), data + kHeaderBytes, n);

  const BadInput r = f.decoder.decode_buffer(image.get(), n, channels, f.decoded);
  if (stoke::detail::is_jpeg({image.get(), n}))
    check_fast_path(f, image.get(), n, pipeline, position, r);
  if (r != BadInput::kNone) return 0;

  const cv::Mat& m = f.decoded.pixels;
  if (m.empty() || m.depth() != CV_8U) fail("decode succeeded with empty or non-8-bit pixels");
  if (m.channels() != channels) fail("decode succeeded with the wrong channel count");
  if (static_cast<std::int64_t>(m.rows) * m.cols > kMaxPixels)
    fail("decode succeeded beyond the pixel limit");
  if (m.dims != 2 || m.rows <= 0 || m.cols <= 0) fail("decode succeeded with a degenerate shape");

  const ImageRef src{m.data, m.rows, m.cols, m.channels(), m.step[0], f.decoded.bgr};
  const int oh = pipeline.output_height(), ow = pipeline.output_width();
  const int oc = pipeline.output_channels();
  const std::size_t out_bytes = static_cast<std::size_t>(oh) * ow * oc;
  // Exactly sized heap buffers: ASan flags any write past the batch slot.
  std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[out_bytes]);
  std::unique_ptr<std::uint8_t[]> again(new std::uint8_t[out_bytes]);
  const std::vector<stoke::Step> steps = pipeline.steps();
  try {
    SampleRng rng(kSeed, stoke::detail::kSampleStream, 0, position);
    f.augmenter.run(steps.data(), static_cast<int>(steps.size()), src, rng, out.get(), oh, ow, oc);
    Augmenter fresh;
    SampleRng rng2(kSeed, stoke::detail::kSampleStream, 0, position);
    fresh.run(steps.data(), static_cast<int>(steps.size()), src, rng2, again.get(), oh, ow, oc);
  } catch (const std::bad_alloc&) {
    return 0;  // the library reports this sample as too_large
  } catch (const stoke::detail::ImageTooLarge&) {
    return 0;  // likewise: a step asked for an absurd intermediate image
  } catch (const cv::Exception& e) {
    std::fprintf(stderr, "cv::Exception from the augmenter on a %dx%dx%d image: %s\n", m.rows,
                 m.cols, m.channels(), e.what());
    fail("augmenter threw for a successfully decoded image");
  }
  if (std::memcmp(out.get(), again.get(), out_bytes) != 0)
    fail("augmenter output depends on state left by earlier inputs");
  return 0;
}
