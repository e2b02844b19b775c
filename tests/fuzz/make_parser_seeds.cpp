// Writes the seeds of the parser fuzz targets that come from stoke's own writers or from libpng,
// under the corpus root given on the command line (tests/fuzz/corpus):
//   sidecar/        format_sidecar of every shard in tar/ (walked with walk_tar), and of an
//                   index whose names and values need escaping
//   state/          LoaderState::serialize of a few states, and one "stoke-state/1" string as
//                   stoke 0.1 saved them
//   png_label_map/  masks written by libpng: palette 8-bit (Pascal VOC's kind, with its 255
//                   "void" border), palette 4-bit, gray 8-bit (also Adam7-interlaced), gray
//                   16-bit, gray 2-bit
//   index_file/     write_index_file of a list's index (masks), a tree's (paths over three
//                   blocks), a shard index (boxes, bytes, shard starts, a remote shard's copy, a
//                   left-out file), IDX data's and a Parquet index (two files of a remote
//                   one's row groups, its chunks and pages; and with some rows' image files),
//                   each for the identity "fuzz"
//   pixels_file/    the IDX data's numbers (images, height, width) and write_pixels_file of
//                   it, for the identity "fuzz"
// Deterministic. tests/fuzz/make_parser_seeds.py runs it after writing tar/.
//
//   stoke_fuzz_parser_seedgen tests/fuzz/corpus

#include <fcntl.h>
#include <png.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "data/index_format.hpp"
#include "data/tar_index.hpp"
#include "stoke/state.hpp"

namespace {

namespace fs = std::filesystem;
using stoke::detail::ShardIndex;

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::cerr << path << ": cannot be written\n";
    std::exit(1);
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_sidecars(const fs::path& root) {
  fs::create_directories(root / "sidecar");
  for (const auto& entry : fs::directory_iterator(root / "tar")) {
    const std::string bytes = read_file(entry.path());
    const stoke::detail::ReadAt read_at = [&bytes](std::uint64_t offset, void* dst,
                                                   std::size_t n) -> std::size_t {
      if (offset >= bytes.size()) return 0;
      const std::size_t take = std::min<std::uint64_t>(n, bytes.size() - offset);
      std::memcpy(dst, bytes.data() + offset, take);
      return take;
    };
    const ShardIndex index = stoke::detail::walk_tar(read_at, bytes.size());
    write_file(root / "sidecar" / (entry.path().stem().string() + ".idx"),
               stoke::detail::format_sidecar(index));
  }
  ShardIndex escaped;
  escaped.shard_bytes = 8192;
  escaped.members = {{"a/100%.jpg", 512, 700, ""},
                     {"a/100%.cls", 1536, 2, "17"},
                     {"b/tab\there.jpg", 2560, 3000, ""},
                     {"b/tab\there.txt", 6144, 20, "line one\nline two"}};
  write_file(root / "sidecar" / "escaped_names.idx", stoke::detail::format_sidecar(escaped));
}

void write_states(const fs::path& root) {
  fs::create_directories(root / "state");
  stoke::LoaderState fresh;
  fresh.seed = 42;
  fresh.dataset_size = 1281167;
  fresh.global_batch = 1024;
  write_file(root / "state" / "fresh", fresh.serialize());
  stoke::LoaderState mid = fresh;
  mid.epoch = 3;
  mid.next_batch = 517;
  mid.position = 517 * 1024;
  write_file(root / "state" / "mid_epoch", mid.serialize());
  stoke::LoaderState resized = mid;  // resumed with another global batch, then saved again
  resized.global_batch = 384;
  resized.next_batch = 1379;
  resized.position = 529792;  // not a multiple of the batch: the saving loader started mid-way
  write_file(root / "state" / "resumed_other_batch", resized.serialize());
  stoke::LoaderState done = fresh;
  done.seed = 18446744073709551615ull;
  done.epoch = 89;
  done.next_batch = 1252;
  done.position = done.dataset_size;
  write_file(root / "state" / "epoch_done_max_seed", done.serialize());
  write_file(root / "state" / "v1",
             "stoke-state/1 seed=7 epoch=1 next_batch=12 dataset_size=60000 global_batch=256");
}

struct Mask {
  const char* name;
  int width, height, bit_depth, color_type;
  bool interlaced;
};

// A label map of a few shapes: class k fills a band, with a one-pixel border of `edge`.
std::vector<std::uint8_t> labels(const Mask& m, int classes, int edge) {
  const int bytes = m.bit_depth == 16 ? 2 : 1;
  std::vector<std::uint8_t> rows(static_cast<std::size_t>(m.width) * m.height * bytes);
  for (int y = 0; y < m.height; ++y) {
    for (int x = 0; x < m.width; ++x) {
      const bool border = x == 0 || y == 0 || x == m.width - 1 || y == m.height - 1;
      const int v = border ? edge : ((x / 7 + y / 5) % classes) * (m.bit_depth == 16 ? 1000 : 1);
      std::uint8_t* p = rows.data() + (static_cast<std::size_t>(y) * m.width + x) * bytes;
      if (bytes == 2) {
        p[0] = static_cast<std::uint8_t>(v >> 8);  // PNG is big-endian
        p[1] = static_cast<std::uint8_t>(v);
      } else {
        p[0] = static_cast<std::uint8_t>(v);
      }
    }
  }
  return rows;
}

void write_png(const fs::path& path, const Mask& m, const std::vector<std::uint8_t>& pixels) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (f == nullptr || png == nullptr || info == nullptr) {
    std::cerr << path << ": cannot be written\n";
    std::exit(1);
  }
  if (setjmp(png_jmpbuf(png))) {
    std::cerr << path << ": libpng failed\n";
    std::exit(1);
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(m.width), static_cast<png_uint_32>(m.height),
               m.bit_depth, m.color_type, m.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  std::vector<png_color> palette(std::size_t{1} << m.bit_depth);
  if (m.color_type == PNG_COLOR_TYPE_PALETTE) {
    for (std::size_t i = 0; i < palette.size(); ++i) {
      palette[i] = {static_cast<png_byte>(i * 37), static_cast<png_byte>(i * 91),
                    static_cast<png_byte>(255 - i * 53)};
    }
    png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
  }
  png_write_info(png, info);
  if (m.bit_depth < 8) png_set_packing(png);
  const std::size_t stride = static_cast<std::size_t>(m.width) * (m.bit_depth == 16 ? 2 : 1);
  std::vector<png_bytep> rows(static_cast<std::size_t>(m.height));
  for (int y = 0; y < m.height; ++y)
    rows[static_cast<std::size_t>(y)] = const_cast<png_bytep>(pixels.data() + y * stride);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

void write_masks(const fs::path& root) {
  fs::create_directories(root / "png_label_map");
  const Mask masks[] = {
      {"palette8_voc.png", 48, 36, 8, PNG_COLOR_TYPE_PALETTE, false},
      {"palette4.png", 33, 20, 4, PNG_COLOR_TYPE_PALETTE, false},
      {"gray8.png", 40, 30, 8, PNG_COLOR_TYPE_GRAY, false},
      {"gray8_interlaced.png", 23, 17, 8, PNG_COLOR_TYPE_GRAY, true},
      {"gray16.png", 32, 24, 16, PNG_COLOR_TYPE_GRAY, false},
      {"gray2.png", 30, 9, 2, PNG_COLOR_TYPE_GRAY, false},
  };
  for (const Mask& m : masks) {
    const int classes = m.bit_depth >= 8 ? 21 : (1 << m.bit_depth) - 1;
    const int edge = m.bit_depth == 8 ? 255 : (m.bit_depth == 16 ? 65535 : (1 << m.bit_depth) - 1);
    write_png(root / "png_label_map" / m.name, m, labels(m, classes, edge));
  }
}

}  // namespace

void write_index(const fs::path& path, const stoke::detail::DatasetIndex& index) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || !stoke::detail::write_index_file(fd, index, "fuzz")) {
    std::cerr << path << ": cannot be written\n";
    std::exit(1);
  }
  ::close(fd);
}

void write_index_files(const fs::path& root) {
  using namespace stoke::detail;
  fs::create_directories(root / "index_file");
  DatasetIndex list;
  list.kind = DatasetKind::kFiles;
  for (int i = 0; i < 3; ++i) {
    FileEntry& e = list.add_file("/data/img" + std::to_string(i) + ".png", i);
    list.set_mask_file(e, "/data/m" + std::to_string(i) + ".png");
  }
  list.size = 3;
  list.has_masks = true;
  list.rejected.push_back({"/data/empty.png", BadInput::kEmpty});
  write_index(root / "index_file" / "list_with_masks", list);

  // A tree's paths over three blocks of 16, in two folders, and a path without a folder: the
  // front- and back-coding of every kind of neighbour.
  DatasetIndex tree;
  tree.kind = DatasetKind::kFiles;
  for (int i = 0; i < 40; ++i)
    tree.add_file(i == 39 ? "loose.jpg"
                          : "/data/train/n0" + std::to_string(i / 20) + "/img_" +
                                std::to_string(1000 + 7 * i) + ".JPEG",
                  i / 20);
  tree.size = 40;
  tree.class_names = {"n00", "n01"};
  write_index(root / "index_file" / "tree_three_blocks", tree);

  DatasetIndex shards;
  shards.kind = DatasetKind::kFiles;
  shards.has_boxes = shards.has_bytes = true;
  shards.paths = "https://example.com/a.tar/cache/shards/abc.tar";
  for (int i = 0; i < 4; ++i) {
    FileEntry e;
    e.path_length = 25;
    e.copy_length = 22;
    e.label = 7 * i;
    e.offset = 512 + 2048 * i;
    e.size = 600;
    e.box_first = shards.boxes.size();
    e.box_count = static_cast<std::uint32_t>(i % 3);
    for (int b = 0; b < i % 3; ++b) shards.boxes.push_back({1, 2, 30, 40, b});
    e.bytes_offset = 1536 + 2048 * i;
    e.bytes_size = 20;
    shards.entries.push_back(e);
  }
  shards.size = 4;
  shards.shard_starts = {0, 2, 4};
  shards.remote_shards.push_back({0, "https://example.com/a.tar", 8192, "/cache/shards/abc.tar"});
  shards.shard_notes.push_back("b.tar.idx does not describe b.tar");
  shards.class_names = {"cat", "dog"};
  write_index(root / "index_file" / "shards_with_boxes", shards);

  DatasetIndex raw;
  raw.kind = DatasetKind::kRaw;
  raw.size = 3;
  raw.height = raw.width = 2;
  raw.channels = 1;
  raw.labels = {0, 9, 4};
  raw.pixels = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  write_index(root / "index_file" / "idx_pixels", raw);
  fs::create_directories(root / "pixels_file");
  const fs::path pixels = root / "pixels_file" / "three_2x2";
  const int fd = ::open(pixels.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  // (The fuzz target's input: the index's images, height and width, then the pixels file.)
  const std::uint32_t images = 3;
  const std::uint16_t side = 2;
  if (fd < 0 || ::write(fd, &images, 4) != 4 || ::write(fd, &side, 2) != 2 ||
      ::write(fd, &side, 2) != 2 || !stoke::detail::write_pixels_file(fd, raw, "fuzz")) {
    std::cerr << pixels << ": cannot be written\n";
    std::exit(1);
  }
  ::close(fd);

  DatasetIndex lazy;  // a dataset-level index's shards (one of them empty)
  lazy.kind = DatasetKind::kShards;
  std::snprintf(lazy.lazy_options.label_field, sizeof lazy.lazy_options.label_field, "cls");
  std::snprintf(lazy.lazy_options.cache_root, sizeof lazy.lazy_options.cache_root, "/cache");
  lazy.lazy_options.max_classes = 1000;
  lazy.shard_starts = {0};
  for (const auto& [name, n] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"/data/train-0.tar", 5}, {"/data/train-1.tar", 0}, {"s3://b/train-2.tar", 3}}) {
    lazy.shard_records.push_back({static_cast<std::uint64_t>(lazy.size), n, lazy.paths.size(),
                                  static_cast<std::uint32_t>(name.size()), 0});
    lazy.paths += name;
    lazy.size += static_cast<std::int64_t>(n);
    lazy.shard_starts.push_back(lazy.size);
  }
  write_index(root / "index_file" / "dataset_level_shards", lazy);

  // Parquet: a local file of two row groups (a dictionary page and two data pages; one data
  // page) and a remote file with a local copy (one row group of three pages).
  DatasetIndex pq;
  pq.kind = DatasetKind::kFiles;
  pq.parquet = true;
  pq.shard_starts = {0};
  const std::string local = "/data/train-0.parquet";
  const std::string remote = "https://example.com/train-1.parquet";
  const std::string copy = "/cache/shards/def.parquet";
  pq.paths = local + remote + copy;
  const struct {
    std::uint64_t path_offset;
    std::uint32_t path_length, copy_length;
    std::uint32_t rows[3];
    std::uint32_t dictionary;
  } groups[] = {{0, 21, 0, {4, 3, 0}, 900}, {0, 21, 0, {5, 0, 0}, 0},
                {21, 35, 25, {2, 2, 2}, 0}};
  std::uint32_t row_group = 0;
  for (const auto& g : groups) {
    ParquetChunkRecord& c = pq.parquet_chunks.emplace_back();
    c.dictionary_offset = g.dictionary > 0 ? 4 : 0;
    c.dictionary_size = g.dictionary;
    c.codec = 1;  // snappy
    c.max_def = 2;
    c.first_page = pq.parquet_pages.size();
    c.row_group = g.path_offset == 0 ? row_group++ : 0;
    // (An entry a row group, its file's path; a label a row.)
    FileEntry e;
    e.path_offset = g.path_offset;
    e.path_length = g.path_length;
    e.copy_length = g.copy_length;
    pq.entries.push_back(e);
    std::uint32_t first = 0;
    for (const std::uint32_t rows : g.rows) {
      if (rows == 0) continue;
      pq.parquet_pages.push_back({1000 + 4096 * pq.parquet_pages.size(), 4000, first});
      for (std::uint32_t r = 0; r < rows; ++r)
        pq.labels.push_back(static_cast<std::int32_t>(pq.labels.size() % 3));
      first += rows;
    }
    pq.size = static_cast<std::int64_t>(pq.labels.size());
    pq.shard_starts.push_back(pq.size);
  }
  pq.remote_shards.push_back({2, remote, 30000, copy, false, 1});
  pq.class_names = {"a", "b", "c"};
  write_index(root / "index_file" / "parquet_row_groups", pq);
  // The same, some rows' images files of their own (an Image struct's paths).
  pq.parquet_image_files = {{1, "/data/images/a/1.jpg"},
                            {2, "/data/images/a/2.jpg"},
                            {7, "/data/images/b/7.jpg"},
                            {pq.labels.size() - 1, "https://example.com/images/c/9.jpg"}};
  write_index(root / "index_file" / "parquet_image_files", pq);
  // The same with a pass-through bytes column: a second chunk record each row group, of one page.
  DatasetIndex with_bytes = pq;
  with_bytes.parquet_columns = 2;
  with_bytes.has_bytes = true;
  with_bytes.parquet_chunks.clear();
  with_bytes.parquet_pages.clear();
  for (std::size_t s = 0; s < pq.parquet_chunks.size(); ++s) {
    const std::uint64_t end = s + 1 < pq.parquet_chunks.size() ? pq.parquet_chunks[s + 1].first_page
                                                               : pq.parquet_pages.size();
    ParquetChunkRecord image = pq.parquet_chunks[s];
    image.first_page = with_bytes.parquet_pages.size();
    with_bytes.parquet_chunks.push_back(image);
    for (std::uint64_t p = pq.parquet_chunks[s].first_page; p < end; ++p)
      with_bytes.parquet_pages.push_back(pq.parquet_pages[p]);
    ParquetChunkRecord bytes = image;
    bytes.dictionary_offset = bytes.dictionary_size = 0;
    bytes.first_page = with_bytes.parquet_pages.size();
    with_bytes.parquet_chunks.push_back(bytes);
    if (pq.shard_starts[s + 1] > pq.shard_starts[s])
      with_bytes.parquet_pages.push_back({90000 + 512 * s, 500, 0});
  }
  for (std::size_t i = 0; i < pq.labels.size(); ++i)
    with_bytes.parquet_bytes_sizes.push_back(static_cast<std::uint32_t>(i % 5 == 4 ? 0 : 10 + i));
  write_index(root / "index_file" / "parquet_bytes_column", with_bytes);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: stoke_fuzz_parser_seedgen CORPUS_ROOT (tests/fuzz/corpus)\n";
    return 2;
  }
  const fs::path root = argv[1];
  write_sidecars(root);
  write_states(root);
  write_masks(root);
  write_index_files(root);
  return 0;
}
