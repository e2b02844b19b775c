#include "decode/jpeg_region.hpp"

#include <algorithm>
#include <cmath>

#include "common/stopwatch.hpp"

namespace stoke::detail {

namespace {

constexpr int kMargin = 2;  // scaled pixels decoded around the region

}  // namespace

JpegRegionSource::~JpegRegionSource() {
  close();
}

void JpegRegionSource::close() {
  if (created_) jpeg_destroy_decompress(&cinfo_);
  created_ = false;
}

BadInput JpegRegionSource::open(const std::uint8_t* data, std::size_t size, int channels,
                                std::int64_t max_pixels) {
  close();
  const Stopwatch watch(decode_ns_);
  channels_ = channels;
  data_ = data;
  size_ = size;
  layout_ = Layout::kUnknown;
  spliced_ = 0;
  errors_.warned = false;
  cinfo_.err = install_jpeg_errors(errors_);
  // After a longjmp only memory outside this frame (members) may be trusted.
  if (setjmp(errors_.jump) != 0) {
    close();
    return too_big(errors_) ? BadInput::kTooLarge : BadInput::kUndecodable;
  }
  jpeg_create_decompress(&cinfo_);
  created_ = true;
  jpeg_mem_src(&cinfo_, data, static_cast<unsigned long>(size));
  if (jpeg_read_header(&cinfo_, TRUE) != JPEG_HEADER_OK) {
    close();
    return BadInput::kUndecodable;
  }
  const std::int64_t w = cinfo_.image_width, h = cinfo_.image_height;
  if (w <= 0 || h <= 0 || w > max_pixels / h) {
    close();
    return BadInput::kTooLarge;
  }
  width_ = static_cast<int>(w);
  height_ = static_cast<int>(h);
  return BadInput::kNone;
}

bool JpegRegionSource::device_decodable() const {
  const bool colour = (cinfo_.jpeg_color_space == JCS_YCbCr && cinfo_.num_components == 3) ||
                      (cinfo_.jpeg_color_space == JCS_GRAYSCALE && cinfo_.num_components == 1);
  return colour && cinfo_.data_precision == 8 && cinfo_.arith_code == 0;
}

int JpegRegionSource::scale_for(int w, int h, int min_w, int min_h) {
  for (int num : {1, 2, 4}) {
    // The scaled region spans at least floor(w * num / 8) whole pixels.
    if (std::int64_t{w} * num >= std::int64_t{8} * min_w &&
        std::int64_t{h} * num >= std::int64_t{8} * min_h)
      return num;
  }
  return 8;
}

SourceRegion JpegRegionSource::region(int x, int y, int w, int h, int min_w, int min_h) {
  SourceRegion out;
  share_ = {static_cast<double>(w) * h / (static_cast<double>(width_) * height_), 0, 0};
  const Stopwatch watch(decode_ns_);
  const BadInput r = decode(x, y, w, h, scale_for(w, h, min_w, min_h), verify_, out);
  if (r != BadInput::kNone) throw BadImage{r};
  return out;
}

ImageRef JpegRegionSource::whole() {
  SourceRegion out;
  const Stopwatch watch(decode_ns_);
  const BadInput r = decode(0, 0, width_, height_, 8, Verify::kWholeFile, out);
  if (r != BadInput::kNone) throw BadImage{r};
  return out.image;
}

BadInput JpegRegionSource::decode(int x, int y, int w, int h, int num, Verify verify,
                                  SourceRegion& out) {
  if (!created_) return BadInput::kUndecodable;
  if (setjmp(errors_.jump) != 0) {
    close();
    return too_big(errors_) ? BadInput::kTooLarge : BadInput::kCorrupt;
  }
  // libjpeg converts gray to RGB and YCbCr to gray, but CMYK only to CMYK: we convert that.
  const bool cmyk_in = cinfo_.jpeg_color_space == JCS_CMYK || cinfo_.jpeg_color_space == JCS_YCCK;
  cinfo_.out_color_space = cmyk_in ? JCS_CMYK : (channels_ == 1 ? JCS_GRAYSCALE : JCS_RGB);
  cinfo_.dct_method = JDCT_ISLOW;
  cinfo_.scale_num = static_cast<unsigned>(num);
  cinfo_.scale_denom = 8;
  jpeg_start_decompress(&cinfo_);
  const double s = num / 8.0;
  const auto full_w = static_cast<int>(cinfo_.output_width);
  const auto full_h = static_cast<int>(cinfo_.output_height);
  // The region in scaled pixels, rounded outward, plus a margin: chroma upsampling at a crop
  // or skip boundary lacks its neighbours, so the pixels next to it differ from a whole decode.
  const int sx0 = std::clamp(static_cast<int>(std::floor(x * s)) - kMargin, 0, full_w - 1);
  const int sx1 = std::clamp(static_cast<int>(std::ceil((x + w) * s)) + kMargin, sx0 + 1, full_w);
  const int sy0 = std::clamp(static_cast<int>(std::floor(y * s)) - kMargin, 0, full_h - 1);
  const int sy1 = std::clamp(static_cast<int>(std::ceil((y + h) * s)) + kMargin, sy0 + 1, full_h);
  auto xoff = static_cast<JDIMENSION>(sx0);
  auto cols = static_cast<JDIMENSION>(sx1 - sx0);
  // Widens the columns to whole iMCUs; afterwards output_width is `cols`.
  if (cols < cinfo_.output_width) jpeg_crop_scanline(&cinfo_, &xoff, &cols);
  const int rows = sy1 - sy0;
  const std::size_t stride = static_cast<std::size_t>(cols) * channels_;
  pixels_.resize(stride * rows);
  const auto done = [&](SourceRegion& region) {
    region.image = ImageRef{pixels_.data(), rows, static_cast<int>(cols), channels_, stride, false};
    region.scale = s;
    region.origin_x = xoff / s;
    region.origin_y = sy0 / s;
  };
  // The same window from the restart intervals around it, where the file has them.
  BadInput spliced = BadInput::kNone;
  if (verify == Verify::kRegion && intervals_on_ && !cinfo_.progressive_mode &&
      decode_spliced(static_cast<int>(xoff), sy0, static_cast<int>(cols), rows, num, spliced)) {
    close();
    if (spliced == BadInput::kNone) done(out);
    return spliced;
  }
  read_window(sy0, rows, static_cast<int>(cols));
  // kRegion: the rows below need no decoding for these pixels; what was read (the header, the
  // rows above and the region's) has been checked. (A progressive file was read whole by
  // jpeg_start_decompress already.) close() aborts the decompression.
  // kWholeFile: the rest of the scan is still entropy-decoded, so damage past the region is
  // found too: skip all but the last row (libjpeg-turbo skips *to* the end without decoding
  // anything), then read that row.
  if (verify == Verify::kWholeFile && cinfo_.output_scanline + 1 < cinfo_.output_height)
    jpeg_skip_scanlines(&cinfo_, cinfo_.output_height - cinfo_.output_scanline - 1);
  if (verify == Verify::kWholeFile) {
    if (cinfo_.output_scanline < cinfo_.output_height) {
      tail_row_.resize(static_cast<std::size_t>(cols) * cinfo_.output_components);
      JSAMPROW tail = tail_row_.data();
      jpeg_read_scanlines(&cinfo_, &tail, 1);
    }
    jpeg_finish_decompress(&cinfo_);  // reads through the end-of-image marker
  }
  const bool warned = errors_.warned;
  close();
  if (warned) return BadInput::kCorrupt;
  done(out);
  return BadInput::kNone;
}

void JpegRegionSource::read_window(int skip, int rows, int cols) {
  if (skip > 0) jpeg_skip_scanlines(&cinfo_, static_cast<JDIMENSION>(skip));
  const std::size_t stride = static_cast<std::size_t>(cols) * channels_;
  const bool convert = cinfo_.output_components == 4;
  if (convert) cmyk_row_.resize(static_cast<std::size_t>(cols) * 4);
  for (int r = 0; r < rows; ++r) {
    std::uint8_t* row = pixels_.data() + stride * static_cast<std::size_t>(r);
    JSAMPROW target = convert ? cmyk_row_.data() : row;
    jpeg_read_scanlines(&cinfo_, &target, 1);
    if (convert) cmyk_row_to(cmyk_row_.data(), row, cols, channels_);
  }
}

bool JpegRegionSource::decode_spliced(int sx0, int sy0, int cols, int rows, int num,
                                      BadInput& result) {
  if (layout_ == Layout::kUnknown)
    layout_ = find_jpeg_intervals(data_, size_, intervals_) ? Layout::kFound : Layout::kNone;
  if (layout_ != Layout::kFound) return false;
  const JpegIntervals& l = intervals_;
  // The window in the file's pixels, and the MCUs around it with one more on each side (chroma
  // upsampling reads a neighbour beyond an MCU's edge; a whole decode has it).
  const auto down = [&](int v) { return static_cast<int>(std::int64_t{v} * 8 / num); };
  const auto up = [&](int v) { return static_cast<int>((std::int64_t{v} * 8 + num - 1) / num); };
  const int x1 = std::min(up(sx0 + cols), l.width), y1 = std::min(up(sy0 + rows), l.height);
  const int mx0 = std::max(down(sx0) / l.mcu_width - 1, 0);
  const int my0 = std::max(down(sy0) / l.mcu_height - 1, 0);
  const int mx1 = std::min((x1 + l.mcu_width - 1) / l.mcu_width + 1, l.mcus_x);
  const int my1 = std::min((y1 + l.mcu_height - 1) / l.mcu_height + 1, l.mcus_y);
  // Worth it when whole intervals are left out: rows above or below, or columns to a side.
  const bool all_columns = !l.columns() || (mx0 < l.restart && mx1 > l.mcus_x - l.restart);
  const int run = l.columns() ? 1 : l.restart / l.mcus_x;  // rows an interval
  if (all_columns && my0 < run && (my1 + run - 1) / run * run >= l.mcus_y) return false;
  int px = 0, py = 0;
  share_.kept = splice_jpeg_intervals(data_, l, mx0, my0, mx1, my1, splice_, px, py);
  share_.total = l.ends.back() - l.data_at;
  // The splice through the same decompressor (its errors longjmp to decode()'s frame), cropped
  // and skipped to the window as the whole file is: within the region the pixels are the whole
  // decode's, as the sequential path's are (the splice holds an MCU's neighbours, as the file
  // does); the margin around it, which the pipeline does not read, may differ.
  const J_COLOR_SPACE space = cinfo_.out_color_space;
  const int components = cinfo_.output_components;
  jpeg_abort_decompress(&cinfo_);
  jpeg_mem_src(&cinfo_, splice_.data(), static_cast<unsigned long>(splice_.size()));
  if (jpeg_read_header(&cinfo_, TRUE) != JPEG_HEADER_OK) {
    result = BadInput::kCorrupt;
    return true;
  }
  cinfo_.out_color_space = space;
  cinfo_.dct_method = JDCT_ISLOW;
  cinfo_.scale_num = static_cast<unsigned>(num);
  cinfo_.scale_denom = 8;
  jpeg_start_decompress(&cinfo_);
  // The splice's first pixel, scaled (whole: px and py are multiples of 8).
  const int ox = px / 8 * num, oy = py / 8 * num;
  auto left = static_cast<JDIMENSION>(sx0 - ox);
  auto width = static_cast<JDIMENSION>(cols);
  const int top = sy0 - oy;
  if (sx0 < ox || top < 0 || left + width > cinfo_.output_width ||
      top + rows > static_cast<int>(cinfo_.output_height) ||
      components != cinfo_.output_components) {
    result = BadInput::kCorrupt;  // (not reached: the splice covers the window)
    return true;
  }
  // (left is on an iMCU boundary, as sx0 and the splice's origin are: the crop keeps it.)
  if (width < cinfo_.output_width) jpeg_crop_scanline(&cinfo_, &left, &width);
  if (left != static_cast<JDIMENSION>(sx0 - ox) || width != static_cast<JDIMENSION>(cols)) {
    result = BadInput::kCorrupt;
    return true;
  }
  read_window(top, rows, cols);
  result = errors_.warned ? BadInput::kCorrupt : BadInput::kNone;
  ++spliced_;
  return true;
}

}  // namespace stoke::detail
