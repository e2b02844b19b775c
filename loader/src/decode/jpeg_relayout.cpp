#include "decode/jpeg_relayout.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "decode/jpeg_common.hpp"

namespace stoke::detail {

int restart_mcus(int mcus_x) {
  for (int k = std::max(mcus_x / 8, 1); k >= 1; --k) {
    if (mcus_x % k != 0) continue;
    return mcus_x / k <= 64 ? k : mcus_x;
  }
  return mcus_x;
}

namespace {

// Whether saved marker `m` is one the compressor writes itself (JFIF's APP0, Adobe's APP14).
bool written_anew(const jpeg_saved_marker_ptr m, const jpeg_compress_struct& out) {
  const auto starts = [&](const char* tag, unsigned n) {
    return m->data_length >= n && std::memcmp(m->data, tag, n) == 0;
  };
  return (out.write_JFIF_header && m->marker == JPEG_APP0 && starts("JFIF", 5)) ||
         (out.write_Adobe_marker && m->marker == JPEG_APP0 + 14 && starts("Adobe", 5));
}

// The libjpeg objects of one re-layout, destroyed however it ends.
struct Codecs {
  jpeg_decompress_struct in{};
  jpeg_compress_struct out{};
  bool in_created = false, out_created = false;
  unsigned char* buffer = nullptr;
  unsigned long buffer_size = 0;
  ~Codecs() {
    if (out_created) jpeg_destroy_compress(&out);
    if (in_created) jpeg_destroy_decompress(&in);
    std::free(buffer);
  }
};

}  // namespace

Relayout relayout_jpeg(const std::uint8_t* data, std::size_t size) {
  Relayout result;
  // (On the heap: what changes after setjmp must not live in this frame's registers.)
  const auto codecs = std::make_unique<Codecs>();
  Codecs& c = *codecs;
  JpegErrors errors;
  c.in.err = install_jpeg_errors(errors);
  c.out.err = &errors.mgr;
  if (setjmp(errors.jump) != 0) {
    char text[JMSG_LENGTH_MAX] = {};
    errors.mgr.format_message(reinterpret_cast<j_common_ptr>(&c.in), text);
    result = Relayout{};
    result.why = std::string("libjpeg cannot read it (") + text + ")";
    return result;
  }
  jpeg_create_decompress(&c.in);
  c.in_created = true;
  jpeg_mem_src(&c.in, data, static_cast<unsigned long>(size));
  jpeg_save_markers(&c.in, JPEG_COM, 0xFFFF);
  for (int m = 0; m < 16; ++m) jpeg_save_markers(&c.in, JPEG_APP0 + m, 0xFFFF);
  jpeg_read_header(&c.in, TRUE);
  result.was_progressive = c.in.progressive_mode != 0;
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&c.in);
  if (errors.warned) {
    result.why = "damaged (libjpeg warns reading it)";
    return result;
  }
  jpeg_create_compress(&c.out);
  c.out_created = true;
  jpeg_mem_dest(&c.out, &c.buffer, &c.buffer_size);
  jpeg_copy_critical_parameters(&c.in, &c.out);  // (defaults: one sequential Huffman scan)
  c.out.optimize_coding = TRUE;
  const int mcu = c.in.num_components == 1 ? DCTSIZE : DCTSIZE * c.in.max_h_samp_factor;
  const int mcus_x = static_cast<int>((c.in.image_width + mcu - 1) / mcu);
  c.out.restart_interval = static_cast<unsigned>(restart_mcus(mcus_x));
  jpeg_write_coefficients(&c.out, coefficients);
  for (jpeg_saved_marker_ptr m = c.in.marker_list; m != nullptr; m = m->next)
    if (!written_anew(m, c.out)) jpeg_write_marker(&c.out, m->marker, m->data, m->data_length);
  jpeg_finish_compress(&c.out);
  jpeg_finish_decompress(&c.in);
  if (errors.warned) {
    result.why = "damaged (libjpeg warns reading it)";
    return result;
  }
  result.bytes.assign(c.buffer, c.buffer + c.buffer_size);
  return result;
}

}  // namespace stoke::detail
