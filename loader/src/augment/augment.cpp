// The augmenter: every pipeline step and the single write of the output. One file of ~470
// lines on purpose: the steps share the Window (a source region, possibly not decoded yet, with
// its geometry and flip), and the JPEG fast path (resize_region) decides from all of them at once
// whether to decode only the crop at a reduced DCT scale and write straight into the slot;
// split by step, that one geometry would be spread over several files.
#include "augment/augment.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "augment/augmix.hpp"
#include "augment/boxes.hpp"
#include "augment/op_sequence.hpp"
#include "augment/steps/step_def.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stoke::detail {
namespace {

// Row pieces here are short (28 bytes for MNIST-sized images), where a libc call per piece costs
// more than the copy; these inline loops keep them in registers.
typedef std::uint8_t V16 __attribute__((vector_size(16)));

// Stores the 16 bytes at s in reverse order at d. Baseline x86-64 has no byte shuffle (SSSE3),
// so reverse dwords, then words within dwords, then bytes within words: five SSE2 instructions.
inline void reverse16(std::uint8_t* d, const std::uint8_t* s) {
#if defined(__SSE2__)
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  v = _mm_shuffle_epi32(v, _MM_SHUFFLE(0, 1, 2, 3));
  v = _mm_shufflelo_epi16(v, _MM_SHUFFLE(2, 3, 0, 1));
  v = _mm_shufflehi_epi16(v, _MM_SHUFFLE(2, 3, 0, 1));
  v = _mm_or_si128(_mm_slli_epi16(v, 8), _mm_srli_epi16(v, 8));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d), v);
#else
  for (int i = 0; i < 16; ++i) d[i] = s[15 - i];
#endif
}

inline void copy_bytes(std::uint8_t* d, const std::uint8_t* s, int n) {
  for (; n >= 16; n -= 16, d += 16, s += 16) {
    V16 v;
    std::memcpy(&v, s, 16);
    std::memcpy(d, &v, 16);
  }
  for (int i = 0; i < n; ++i) d[i] = s[i];
}

inline void fill_bytes(std::uint8_t* d, std::uint8_t value, int n) {
  for (int i = 0; i < n; ++i) d[i] = value;
}

// d[i] = s[n - 1 - i]
inline void reverse_bytes(std::uint8_t* d, const std::uint8_t* s, int n) {
  for (; n >= 16; n -= 16, d += 16) reverse16(d, s + n - 16);
  if (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, s + n - 8, 8);
    v = __builtin_bswap64(v);
    std::memcpy(d, &v, 8);
    n -= 8;
    d += 8;
  }
  for (int i = 0; i < n; ++i) d[i] = s[n - 1 - i];
}

// Copies n >= 16 bytes with 16-byte moves; the last move overlaps instead of looping on a tail,
// so the branch pattern is the same for every row.
inline void copy_16plus(std::uint8_t* d, const std::uint8_t* s, int n) {
  V16 v;
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    std::memcpy(&v, s + i, 16);
    std::memcpy(d + i, &v, 16);
  }
  std::memcpy(&v, s + n - 16, 16);
  std::memcpy(d + n - 16, &v, 16);
}

// d[i] = s[n - 1 - i] for n >= 16, with the same overlapping trick.
inline void reverse_16plus(std::uint8_t* d, const std::uint8_t* s, int n) {
  for (int i = 0; i + 16 <= n; i += 16) reverse16(d + i, s + n - i - 16);
  reverse16(d + n - 16, s);
}

// Mirrors `n` pixels of `c` channels from src (left to right) into dst (right to left).
void copy_mirrored(std::uint8_t* dst, const std::uint8_t* src, int n, int c) {
  if (c == 1) {
    reverse_bytes(dst, src, n);
    return;
  }
  for (int i = 0; i < n; ++i) {
    const std::uint8_t* p = src + (n - 1 - i) * c;
    for (int k = 0; k < c; ++k) dst[i * c + k] = p[k];
  }
}

}  // namespace

void Augmenter::run(const Step* steps, int step_count, ImageSource& source, SampleRng& rng,
                    std::uint8_t* dst, int out_height, int out_width, int out_channels) {
  applied_.clear();
  erase_ = kernels::EraseBox{};
  warps_.clear();
  deferred_warps_.clear();
  deferred_from_ = kNotDeferred;
  next_scratch_ = 0;
  steps_ = steps;
  step_count_ = step_count;
  rng_ = &rng;
  dst_ = dst;
  out_height_ = out_height;
  out_width_ = out_width;
  out_channels_ = out_channels;
  written_ = false;
  ax_ = ay_ = 1;
  bx_ = by_ = 0;
  stage_width_ = source.width();
  stage_height_ = source.height();
  composed_ = OutputMap{1, 0, 1, 0, source.width(), source.height()};
  Window w;
  w.lazy = &source;
  w.width = source.width();
  w.height = source.height();
  for (int i = 0; i < step_count; ++i) {
    step_index_ = i;
    const Step& s = steps[i];
    (this->*step_def(s.kind).apply)(w, s, rng);
  }
  step_index_ = step_count;
  // Validation guarantees the window has the output size here. Output column x reads the
  // window's column x0 + x, or x0 + width - 1 - x when mirrored.
  after_warps_.sy = w.vflip ? -ay_ : ay_;
  after_warps_.ty = w.vflip ? w.y0 + w.height - by_ : by_ - w.y0;
  after_warps_.sx = w.flip ? -ax_ : ax_;
  after_warps_.tx = w.flip ? w.x0 + w.width - bx_ : bx_ - w.x0;
  after_warps_.source_width = stage_width_;
  after_warps_.source_height = stage_height_;
  // The warps left for the output act on it as it is written: each ends a stage there.
  for (const std::size_t i : deferred_warps_) {
    warps_.push_back(Warp{after_warps_, applied_[i], out_width, out_height});
    composed_ = then(composed_, after_warps_);
    after_warps_ = OutputMap{1, 0, 1, 0, out_width, out_height};
  }
  output_map_ = then(composed_, after_warps_);
  if (geometry_only_) {
    if (step_count > 0 && steps[step_count - 1].kind == StepKind::kRandomErasing)
      finish_erasing(nullptr);  // (records the rectangle; erase_pixels_ is false)
    return;
  }
  write_output(w, dst, out_channels);
  if (w.vflip) mirror_rows(dst, out_channels);
  const Pixels out{dst, out_height, out_width, out_channels,
                   static_cast<std::size_t>(out_width) * out_channels};
  if (deferred_from_ != kNotDeferred)
    apply_ops(std::span(applied_).subspan(deferred_from_), out, photometric_);
  if (step_count > 0 && steps[step_count - 1].kind == StepKind::kRandomErasing) finish_erasing(dst);
}

void Augmenter::run_geometry(const Step* steps, int step_count, ImageSource& source, SampleRng& rng,
                             int out_height, int out_width, int out_channels) {
  // Cleared however run() ends: a step that throws (ImageTooLarge) must not leave the next
  // run(), whose pixels a worker writes, without them.
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{geometry_only_};
  geometry_only_ = true;
  run(steps, step_count, source, rng, nullptr, out_height, out_width, out_channels);
}

void Augmenter::apply_in_place(Window& w, const Step& s, SampleRng& rng) {
  const std::size_t first = applied_.size();
  draw_pixel_ops(s, rng, w.height, w.width, applied_);
  if (applied_.size() == first) return;
  const bool warp = s.kind == StepKind::kRandomAffine;  // one op, always drawn
  if (deferred_from_ == kNotDeferred && !nothing_moves_after()) {
    apply_now(w, first, warp);
    return;
  }
  if (deferred_from_ == kNotDeferred) deferred_from_ = first;
  if (warp) deferred_warps_.push_back(first);
}

void Augmenter::apply_now(Window& w, std::size_t first, bool warp) {
  realize(w);
  cv::Mat m = materialize(w, true);
  if (m.channels() == 3 && w.src.bgr) cv::cvtColor(m, m, cv::COLOR_BGR2RGB);
  w.src = ImageRef{m.data, m.rows, m.cols, m.channels(), m.step, false};
  resized(w, w.height, w.width);  // the same size: the map only moves by the window's origin
  if (warp) bake_flips(w);
  const Pixels px{m.data, m.rows, m.cols, m.channels(), m.step};
  apply_ops(std::span(applied_).subspan(first), px, photometric_);
  if (warp) end_stage(applied_[first], w.width, w.height);
}

void Augmenter::bake_flips(Window& w) {
  const cv::Mat m(w.src.height, w.src.width, CV_8UC(w.src.channels),
                  const_cast<std::uint8_t*>(w.src.data), w.src.stride);
  if (w.flip) {
    cv::flip(m, m, 1);
    ax_ = -ax_;
    bx_ = w.width - bx_;
    w.flip = false;
  }
  if (w.vflip) {
    cv::flip(m, m, 0);
    ay_ = -ay_;
    by_ = w.height - by_;
    w.vflip = false;
  }
}

void Augmenter::end_stage(const AppliedOp& op, int width, int height) {
  const OutputMap stage{ax_, bx_, ay_, by_, stage_width_, stage_height_};
  warps_.push_back(Warp{stage, op, width, height});
  composed_ = then(composed_, stage);
  ax_ = ay_ = 1;
  bx_ = by_ = 0;
  stage_width_ = width;
  stage_height_ = height;
}

void Augmenter::mirror_rows(std::uint8_t* dst, int out_channels) const {
  const std::size_t row = static_cast<std::size_t>(out_width_) * out_channels;
  for (int y = 0, z = out_height_ - 1; y < z; ++y, --z)
    std::swap_ranges(dst + y * row, dst + (y + 1) * row, dst + z * row);
}

void Augmenter::resized(Window& w, int height, int width) {
  const double kx = static_cast<double>(width) / w.width;
  const double ky = static_cast<double>(height) / w.height;
  ax_ *= kx;
  bx_ = (bx_ - w.x0) * kx;
  ay_ *= ky;
  by_ = (by_ - w.y0) * ky;
  w.x0 = w.y0 = 0;
  w.width = width;
  w.height = height;
}

namespace {

// Whether a step's ops move pixels, so that a flip after it would not commute with it.
bool moves_pixels_in_place(StepKind k) {
  return k == StepKind::kRandomAffine || is_policy(k);
}

}  // namespace

bool Augmenter::nothing_moves_after() const {
  // Past the last step (the output's own write) nothing follows.
  if (step_index_ >= step_count_) return true;
  bool warped = moves_pixels_in_place(steps_[step_index_].kind);
  for (int j = step_index_ + 1; j < step_count_; ++j) {
    const StepKind k = steps_[j].kind;
    if (k == StepKind::kRandomErasing) continue;  // on the output, after everything
    if (k == StepKind::kHorizontalFlip || k == StepKind::kVerticalFlip) {
      if (warped) return false;
      continue;
    }
    if (!works_in_place(k)) return false;
    warped = warped || moves_pixels_in_place(k);
  }
  return true;
}

// (x, y) are in the window's own (possibly mirrored) coordinates.
void Augmenter::crop(Window& w, int x, int y, int width, int height) const {
  w.x0 += w.flip ? (w.width - x - width) : x;
  w.y0 += w.vflip ? (w.height - y - height) : y;
  w.width = width;
  w.height = height;
}

bool Augmenter::keeps_a_box(const Window& w, int x, int y, int width, int height,
                            double fraction) const {
  if (boxes_.empty()) return true;
  // The crop in the current image's pixels, as crop() places it, and each box there: through
  // the warps so far, then the current stage's map (ax_ * x + bx_, ay_ * y + by_).
  Window c = w;
  crop(c, x, y, width, height);
  const double x0 = c.x0, y0 = c.y0, x1 = x0 + width, y1 = y0 + height;
  const OutputMap stage{ax_, bx_, ay_, by_, stage_width_, stage_height_};
  for (const SampleBox& b : boxes_) {
    const MovedBox m = move_box(warps_, stage, b);
    const double area = m.area();
    const double iw = std::min(m.x2, x1) - std::max(m.x1, x0);
    const double ih = std::min(m.y2, y1) - std::max(m.y1, y0);
    if (area > 0 && iw > 0 && ih > 0 && iw * ih >= fraction * area) return true;
  }
  return false;
}

// Resizes the window's pixels (ignoring a pending flip, which commutes with resizing).
void Augmenter::resize_to(Window& w, int height, int width) {
  height = std::max(height, 1);
  width = std::max(width, 1);
  if (static_cast<std::int64_t>(height) * width > kMaxIntermediatePixels) throw ImageTooLarge();
  if (geometry_only_) {  // the window follows; the devices resize
    w.lazy = nullptr;
    w.src = ImageRef{nullptr, height, width, out_channels_, 0, false};
    resized(w, height, width);
    return;
  }
  if (w.lazy != nullptr) {
    if (resize_region(w, height, width)) return;
    realize(w);
  }
  if (height == w.height && width == w.width) return;
  cv::Mat src = materialize(w);
  std::vector<std::uint8_t>& buf = scratch_[next_scratch_];
  next_scratch_ = (next_scratch_ + 1) % 3;
  const int c = w.src.channels;
  buf.resize(static_cast<std::size_t>(height) * width * c);
  cv::Mat dst(height, width, CV_8UC(c), buf.data());
  const bool shrink = width * 2 <= src.cols && height * 2 <= src.rows;
  cv::resize(src, dst, dst.size(), 0, 0, shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
  w.src = ImageRef{buf.data(), height, width, c, static_cast<std::size_t>(width) * c, w.src.bgr};
  resized(w, height, width);
}

void Augmenter::realize(Window& w) {
  if (w.lazy == nullptr) return;
  w.src = w.lazy->whole();
  w.lazy = nullptr;
}

bool Augmenter::resize_region(Window& w, int height, int width) {
  ImageSource& source = *w.lazy;
  if (!source.partial() || w.x0 < 0 || w.y0 < 0 || w.x0 + w.width > source.width() ||
      w.y0 + w.height > source.height())
    return false;
  // The filter the general path would use for this window at full resolution (area when it
  // shrinks at least 2x both ways), so both paths agree. For area, the DCT scale keeps at
  // least area_oversample_ times the output resolution (and area_floor_ pixels) and the area
  // filter does the rest: a
  // DCT-scaled image is sharper than an area-averaged one, and letting the area filter have
  // the final factor keeps the fast path within a level or two of the general one on fine
  // textures (measured: tests/loader/decode/jpeg_region_test.cpp, stoke-decode-benchmarks --sweep).
  const bool area = w.width >= 2 * width && w.height >= 2 * height;
  const ResampleFilter filter = area ? ResampleFilter::kArea : ResampleFilter::kLinear;
  const double oversample = area ? area_oversample_ : 1.0;
  const int floor = area ? area_floor_ : 0;
  const int min_w =
      std::max(static_cast<int>(std::ceil(width * oversample)), std::min(floor, w.width));
  const int min_h =
      std::max(static_cast<int>(std::ceil(height * oversample)), std::min(floor, w.height));
  const SourceRegion r = source.region(w.x0, w.y0, w.width, w.height, min_w, min_h);
  w.lazy = nullptr;
  // The window in the decoded region's pixels: fractional, because the region starts on an MCU
  // boundary and is scaled.
  const double fx = (w.x0 - r.origin_x) * r.scale;
  const double fy = (w.y0 - r.origin_y) * r.scale;
  const double fw = w.width * r.scale;
  const double fh = w.height * r.scale;
  const int c = r.image.channels;
  const bool supported = resample_supports(filter, fw, width, fh, height);
  if (supported && !r.image.bgr && c == out_channels_ && height == out_height_ &&
      width == out_width_ && nothing_moves_after()) {
    // The last pixel-moving step: resample straight into the output, already mirrored as the
    // remaining flips will decide (drawn here from a copy of the generator, with the draws of
    // the photometric steps between them; the steps then draw the same values).
    SampleRng ahead = *rng_;
    bool flip = w.flip;
    for (int j = step_index_ + 1; j < step_count_; ++j) {
      const Step& later = steps_[j];
      if (later.kind == StepKind::kRandomErasing) break;  // the last step; moves nothing
      if (works_in_place(later.kind)) {
        lookahead_.clear();
        draw_pixel_ops(later, ahead, height, width, lookahead_);
        continue;
      }
      const bool drawn = ahead.bernoulli(later.probability);  // every flip draws
      if (drawn && later.kind == StepKind::kHorizontalFlip) flip = !flip;
    }
    resample(r.image, fx, fy, fw, fh, dst_, width, height, flip, filter, resample_);
    written_ = true;
    resized(w, height, width);
    return true;
  }
  std::vector<std::uint8_t>& buf = scratch_[next_scratch_];
  next_scratch_ = (next_scratch_ + 1) % 3;
  buf.resize(static_cast<std::size_t>(height) * width * c);
  if (!supported) {
    // Still far too large at the smallest DCT scale (a huge photograph): OpenCV's area filter
    // on the window rounded to whole pixels (at most half a pixel off, of 3+ per output pixel).
    const cv::Mat whole(r.image.height, r.image.width, CV_8UC(c),
                        const_cast<std::uint8_t*>(r.image.data), r.image.stride);
    const int x0 = std::clamp(static_cast<int>(std::lround(fx)), 0, r.image.width - 1);
    const int y0 = std::clamp(static_cast<int>(std::lround(fy)), 0, r.image.height - 1);
    const int x1 = std::clamp(static_cast<int>(std::lround(fx + fw)), x0 + 1, r.image.width);
    const int y1 = std::clamp(static_cast<int>(std::lround(fy + fh)), y0 + 1, r.image.height);
    cv::Mat out(height, width, CV_8UC(c), buf.data());
    cv::resize(whole(cv::Rect(x0, y0, x1 - x0, y1 - y0)), out, out.size(), 0, 0, cv::INTER_AREA);
  } else {
    resample(r.image, fx, fy, fw, fh, buf.data(), width, height, false, filter, resample_);
  }
  w.src = ImageRef{buf.data(), height, width, c, static_cast<std::size_t>(width) * c, r.image.bgr};
  resized(w, height, width);
  return true;
}

cv::Mat Augmenter::materialize(const Window& w, bool copy) {
  const ImageRef& s = w.src;
  const int type = CV_8UC(s.channels);
  cv::Mat whole(s.height, s.width, type, const_cast<std::uint8_t*>(s.data), s.stride);
  const bool inside =
      w.x0 >= 0 && w.y0 >= 0 && w.x0 + w.width <= s.width && w.y0 + w.height <= s.height;
  if (inside && !copy) return whole(cv::Rect(w.x0, w.y0, w.width, w.height));

  std::vector<std::uint8_t>& buf = scratch_[next_scratch_];
  next_scratch_ = (next_scratch_ + 1) % 3;
  buf.assign(static_cast<std::size_t>(w.width) * w.height * s.channels, 0);
  cv::Mat out(w.height, w.width, type, buf.data());
  const cv::Rect inter =
      cv::Rect(w.x0, w.y0, w.width, w.height) & cv::Rect(0, 0, s.width, s.height);
  if (!inter.empty()) whole(inter).copyTo(out(inter - cv::Point(w.x0, w.y0)));
  return out;
}

// Small gray images (MNIST-like) with padding and flips: rows are a few dozen bytes, so the generic
// per-row fill/copy/fill costs more in branch mispredictions than in bytes. Here the source is
// first laid into a zero-margined scratch image, after which every output row is one
// fixed-length (possibly reversed) copy. Returns false when the window does not fit this shape.
bool Augmenter::write_small_gray(const Window& w, std::uint8_t* dst) {
  constexpr int kMargin = 16;  // zero bytes left of each scratch row
  const ImageRef& s = w.src;
  if (s.channels != 1 || w.width < 16 || s.width < 16 || s.width > 256) return false;
  if (w.x0 < -kMargin || w.x0 + w.width > s.width + kMargin) return false;
  const int stride = kMargin + s.width + kMargin;
  const std::size_t bytes = static_cast<std::size_t>(stride) * s.height;
  if (padded_.size() != bytes || padded_width_ != s.width) {
    padded_.assign(bytes, 0);  // margins are written once and stay zero
    padded_width_ = s.width;
  }
  for (int y = 0; y < s.height; ++y)
    copy_16plus(padded_.data() + y * stride + kMargin, s.data + y * s.stride, s.width);
  for (int y = 0; y < w.height; ++y) {
    std::uint8_t* out = dst + static_cast<std::size_t>(y) * w.width;
    const int sy = w.y0 + y;
    if (sy < 0 || sy >= s.height) {
      std::memset(out, 0, static_cast<std::size_t>(w.width));
      continue;
    }
    const std::uint8_t* row = padded_.data() + sy * stride + kMargin + w.x0;
    if (w.flip)
      reverse_16plus(out, row, w.width);
    else
      copy_16plus(out, row, w.width);
  }
  return true;
}

void Augmenter::write_output(Window& w, std::uint8_t* dst, int out_channels) {
  // Crops without a resize still decode only their region, at full scale.
  if (w.lazy != nullptr && !resize_region(w, w.height, w.width)) realize(w);
  if (written_) return;
  const ImageRef& s = w.src;
  const int sc = s.channels;
  const std::size_t row_bytes = static_cast<std::size_t>(w.width) * out_channels;
  // Columns [lo, hi) of the output read source pixels; the rest are padding.
  int lo, hi;
  if (!w.flip) {
    lo = std::clamp(-w.x0, 0, w.width);
    hi = std::clamp(s.width - w.x0, lo, w.width);
  } else {  // output x reads source column x0 + width - 1 - x
    lo = std::clamp(w.x0 + w.width - s.width, 0, w.width);
    hi = std::clamp(w.x0 + w.width, lo, w.width);
  }
  const bool plain = sc == out_channels && !(sc == 3 && s.bgr);
  if (plain && write_small_gray(w, dst)) return;
  for (int y = 0; y < w.height; ++y) {
    std::uint8_t* out = dst + y * row_bytes;
    const int sy = w.y0 + y;
    if (sy < 0 || sy >= s.height || lo == hi) {
      std::memset(out, 0, row_bytes);
      continue;
    }
    fill_bytes(out, 0, lo * out_channels);
    fill_bytes(out + hi * out_channels, 0, (w.width - hi) * out_channels);
    const std::uint8_t* row = s.data + sy * s.stride;
    if (plain) {
      if (!w.flip) {
        copy_bytes(out + lo * sc, row + (w.x0 + lo) * sc, (hi - lo) * sc);
      } else {
        const int first_src = w.x0 + w.width - hi;  // source column written at output hi-1
        copy_mirrored(out + lo * sc, row + first_src * sc, hi - lo, sc);
      }
      continue;
    }
    for (int x = lo; x < hi; ++x) {
      const int sx = w.flip ? w.x0 + w.width - 1 - x : w.x0 + x;
      const std::uint8_t* p = row + sx * sc;
      std::uint8_t* o = out + x * out_channels;
      std::uint8_t r, g, b;
      if (sc == 1) {
        r = g = b = p[0];
      } else {
        r = s.bgr ? p[2] : p[0];
        g = p[1];
        b = s.bgr ? p[0] : p[2];
      }
      if (out_channels == 3) {
        o[0] = r;
        o[1] = g;
        o[2] = b;
      } else {
        o[0] = sc == 1 ? r : static_cast<std::uint8_t>((299 * r + 587 * g + 114 * b + 500) / 1000);
      }
    }
  }
}

}  // namespace stoke::detail
