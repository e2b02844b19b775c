// stoke-mkdata: writes the image-folder datasets that stoke's tests and benchmarks read.
//
//   stoke-mkdata fashion-mnist --out DIR [--limit N] [--split train|test] [--from DIR]
//   stoke-mkdata jpeg-corpus --out DIR [--count N] [--seed S] [--long-side MIN..MAX]
//                [--quality MIN..MAX] [--progressive F] [--chroma-422 F] [--chroma-444 F]
//   stoke-mkdata [COMMAND] --help
//
// Both write DIR/<class>/<NNNNN>.<ext>, with class folders that sort (byte order) in class-id
// order, because a folder dataset's class id is the index of its sorted folder name.

#include <turbojpeg.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "stoke/error.hpp"
#include "stoke/mnist.hpp"
#include "stoke/names.hpp"
#include "stoke/options.hpp"
#include "stoke/tools/cli.hpp"
#include "stoke/tools/fashion_mnist.hpp"
#include "stoke/tools/progress.hpp"

namespace {

namespace fs = std::filesystem;

// Every failure, usage or not, exits 2 (as documented in --help).
constexpr int kExitError = stoke::tools::kUsageError;

// ---------------------------------------------------------------------------------------------
// Command line.

struct Args {
  std::string command;  // the subcommand given
  std::string out;
  std::uint64_t limit = UINT64_MAX;  // fashion-mnist
  stoke::Split split = stoke::Split::kTrain;
  std::string from = stoke::tools::kDefaultFashionMnistDir;
  std::uint64_t count = 3000;  // jpeg-corpus
  std::uint64_t seed = 0;
  std::optional<std::pair<int, int>> long_side;  // unset: the standard 400..640 views
  std::pair<int, int> quality{90, 95};
  double progressive = 0;  // fractions of the images
  double chroma_422 = 0;
  double chroma_444 = 0;
};

// "MIN..MAX" (or "N") within [lo, hi] into `out`; a message when it is not.
std::string parse_range(const std::string& text, int lo, int hi, std::pair<int, int>& out) {
  const std::optional<stoke::tools::CountRange> r = stoke::tools::parse_count_range(text, lo, hi);
  if (!r || r->lo > r->hi)
    return "expected MIN..MAX (or N) with " + std::to_string(lo) +
           " <= MIN <= MAX <= " + std::to_string(hi) + ", got '" + text + "'";
  out = {r->lo, r->hi};
  return "";
}

CLI::Option* add_range(CLI::App& command, const std::string& name, int lo, int hi,
                       std::optional<std::pair<int, int>>& target, const std::string& help) {
  return command
      .add_option_function<std::string>(
          name,
          [&target, lo, hi, name](const std::string& text) {
            std::pair<int, int> r;
            if (const std::string why = parse_range(text, lo, hi, r); !why.empty())
              throw CLI::ValidationError(name, why);
            target = r;
          },
          help)
      ->type_name("MIN..MAX");
}

void add_out(CLI::App& command, Args& args) {
  command.add_option("--out", args.out, "the folder to write; must be missing or empty")
      ->type_name("DIR")
      ->required()
      ->check([](const std::string& dir) {
        return dir.empty() ? std::string("must not be empty") : std::string();
      });
}

// The command line into `args`; nullopt: go on, else the exit code (see stoke/tools/cli.hpp).
std::optional<int> parse_args(int argc, char** argv, Args& args) {
  CLI::App app("Writes the image-folder datasets that stoke's tests and benchmarks read.",
               "stoke-mkdata");
  stoke::tools::configure(app);
  app.require_subcommand(1);
  app.footer("DIR must be missing or empty. Exit status: 0 on success, 2 on any error.");
  CLI::App* fashion = app.add_subcommand(
      "fashion-mnist",
      "Writes Fashion-MNIST as grayscale PNGs DIR/<label>-<name>/NNNNN.png (NNNNN = dataset "
      "index).");
  add_out(*fashion, args);
  fashion->add_option("--limit", args.limit, "only the first N images (default all)")
      ->check(CLI::Range(std::uint64_t{1}, UINT64_MAX));
  stoke::tools::add_word(*fashion, "--split", args.split, stoke::parse_split,
                         "train (default) or test")
      ->type_name("train|test");
  fashion
      ->add_option("--from", args.from,
                   "folder of the IDX files (Debian package dataset-fashion-mnist)")
      ->type_name("DIR")
      ->capture_default_str();
  CLI::App* corpus = app.add_subcommand(
      "jpeg-corpus",
      "Writes an ImageNet-like JPEG corpus DIR/cNN-<photo>/NNNNN.jpg: random crops of real "
      "photographs from Debian packages mate-backgrounds and opencv-doc, one class per "
      "photograph, long side 400..640, JPEG quality 90..95, baseline 4:2:0 (the flags below "
      "make camera-sized photographs instead; see docs/BENCHMARKS.md).");
  add_out(*corpus, args);
  corpus->add_option("--count", args.count, "images to write")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32))
      ->capture_default_str();
  corpus->add_option("--seed", args.seed, "the same seed and sources give the same corpus")
      ->capture_default_str();
  add_range(*corpus, "--long-side", 16, 8192, args.long_side,
            "long side of each image, drawn from MIN..MAX (default 400..640); views are "
            "enlarged at most 1.25x, and photographs too small for that are left out");
  std::optional<std::pair<int, int>> quality;
  add_range(*corpus, "--quality", 1, 100, quality,
            "JPEG quality, drawn from MIN..MAX (default "
            "90..95)");
  const auto fraction = CLI::Range(0.0, 1.0);
  corpus
      ->add_option("--progressive", args.progressive,
                   "fraction of the images written as progressive JPEG (default 0)")
      ->type_name("F")
      ->check(fraction);
  corpus
      ->add_option("--chroma-422", args.chroma_422,
                   "fraction with 4:2:2 chroma subsampling, as many cameras write (default 0)")
      ->type_name("F")
      ->check(fraction);
  corpus
      ->add_option("--chroma-444", args.chroma_444,
                   "fraction with full-resolution chroma, 4:4:4 (default 0; the rest 4:2:0)")
      ->type_name("F")
      ->check(fraction);
  if (const auto code = stoke::tools::parse(app, argc, argv)) return code;
  args.command = fashion->parsed() ? fashion->get_name() : corpus->get_name();
  if (quality) args.quality = *quality;
  if (args.chroma_422 + args.chroma_444 > 1.0)
    return stoke::tools::usage_error(app, "--chroma-444", "with --chroma-422, more than 1");
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Output.

// Refuses a non-empty DIR: stale files from an earlier, larger run would silently join the
// dataset, and deleting a user-named folder ourselves is too dangerous.
void prepare_out_dir(const fs::path& out) {
  if (fs::exists(out) && !fs::is_empty(out)) {
    throw stoke::Error(out.string() + " is not empty; remove it or choose another --out");
  }
  fs::create_directories(out);
}

// Zero-padded so names sort in index order; at least 5 digits, more for larger sets.
std::string numbered_name(std::uint64_t index, std::uint64_t total, const char* ext) {
  const std::size_t width = std::max<std::size_t>(5, std::to_string(total - 1).size());
  std::string digits = std::to_string(index);
  if (digits.size() < width) digits = std::string(width - digits.size(), '0') + digits;
  return digits + "." + ext;
}

// Writes `image` and returns the file's size in bytes.
std::uintmax_t write_image(const fs::path& path, const cv::Mat& image,
                           const std::vector<int>& params = {}) {
  if (!cv::imwrite(path.string(), image, params)) {
    throw stoke::Error(path.string() + ": cannot write image");
  }
  return fs::file_size(path);
}

// "writing N/TOTAL" on stderr (stoke/tools/progress.hpp).
void report(stoke::tools::CountProgress& progress, std::uint64_t n, std::uint64_t total) {
  progress.update(static_cast<std::int64_t>(n),
                  "writing " + std::to_string(n) + "/" + std::to_string(total));
}

void print_summary(std::uint64_t images, std::size_t classes, const fs::path& out,
                   std::uintmax_t bytes) {
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  std::cout << "wrote " << images << " images in " << classes << " classes to " << out.string()
            << " (" << mib << " MiB)\n";
}

// ---------------------------------------------------------------------------------------------
// fashion-mnist.

// Label-prefixed so that byte-order sorting of the folder names reproduces the label order.
constexpr const char* kFashionClasses[] = {
    "0-tshirt-top", "1-trouser", "2-pullover", "3-dress", "4-coat",
    "5-sandal",     "6-shirt",   "7-sneaker",  "8-bag",   "9-ankle-boot",
};
constexpr std::size_t kFashionClassCount = std::size(kFashionClasses);

int run_fashion_mnist(const Args& args) {
  const fs::path out = args.out;
  const std::string& from = args.from;
  stoke::IdxImages data = stoke::read_idx(from, args.split);
  const std::uint64_t total = std::min<std::uint64_t>(args.limit, data.count);
  if (total == 0) throw stoke::Error(from + ": the IDX files hold no images");
  prepare_out_dir(out);

  std::vector<bool> class_used(kFashionClassCount, false);
  const std::size_t image_bytes = static_cast<std::size_t>(data.rows) * data.cols;
  std::uintmax_t bytes = 0;
  stoke::tools::CountProgress progress(static_cast<std::int64_t>(total));
  for (std::uint64_t i = 0; i < total; ++i) {
    const unsigned label = data.labels[i];
    if (label >= kFashionClassCount) {
      throw stoke::Error(from + ": image " + std::to_string(i) + " has label " +
                         std::to_string(label) + ", expected 0..9");
    }
    const fs::path dir = out / kFashionClasses[label];
    if (!class_used[label]) fs::create_directories(dir);
    class_used[label] = true;
    // Wraps the decoded pixels without copying; imwrite only reads them.
    const cv::Mat image(data.rows, data.cols, CV_8UC1, data.pixels.data() + i * image_bytes);
    bytes += write_image(dir / numbered_name(i, data.count, "png"), image);
    report(progress, i + 1, total);
  }
  print_summary(total, std::count(class_used.begin(), class_used.end(), true), out, bytes);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// jpeg-corpus.

// Real photographs from Debian packages; each becomes one class. Logos, charts, chessboards,
// paintings and near-duplicates are left out: they would make decoding unrealistically cheap
// or the classes indistinguishable. The order is fixed so class ids are stable.
constexpr const char* kPhotoSources[] = {
    // mate-backgrounds
    "/usr/share/backgrounds/mate/nature/Aqua.jpg",
    "/usr/share/backgrounds/mate/nature/Blinds.jpg",
    "/usr/share/backgrounds/mate/nature/Dune.jpg",
    "/usr/share/backgrounds/mate/nature/FreshFlower.jpg",
    "/usr/share/backgrounds/mate/nature/Garden.jpg",
    "/usr/share/backgrounds/mate/nature/GreenMeadow.jpg",
    "/usr/share/backgrounds/mate/nature/LadyBird.jpg",
    "/usr/share/backgrounds/mate/nature/RainDrops.jpg",
    "/usr/share/backgrounds/mate/nature/Storm.jpg",
    "/usr/share/backgrounds/mate/nature/TwoWings.jpg",
    "/usr/share/backgrounds/mate/nature/Wood.jpg",
    "/usr/share/backgrounds/mate/nature/YellowFlower.jpg",
    // opencv-doc
    "/usr/share/doc/opencv-doc/examples/data/aloeR.jpg",
    "/usr/share/doc/opencv-doc/examples/data/apple.jpg",
    "/usr/share/doc/opencv-doc/examples/data/baboon.jpg",
    "/usr/share/doc/opencv-doc/examples/data/building.jpg",
    "/usr/share/doc/opencv-doc/examples/data/butterfly.jpg",
    "/usr/share/doc/opencv-doc/examples/data/ela_original.jpg",
    "/usr/share/doc/opencv-doc/examples/data/fruits.jpg",
    "/usr/share/doc/opencv-doc/examples/data/home.jpg",
    "/usr/share/doc/opencv-doc/examples/data/leuvenB.jpg",
    "/usr/share/doc/opencv-doc/examples/data/messi5.jpg",
    "/usr/share/doc/opencv-doc/examples/data/orange.jpg",
    "/usr/share/doc/opencv-doc/examples/data/squirrel_cls.jpg",
};
constexpr std::size_t kMinSources = 4;

constexpr double kMinAreaFraction = 0.25;
constexpr double kMinAspect = 3.0 / 4.0;
constexpr double kMaxAspect = 4.0 / 3.0;
constexpr int kMinLongSide = 400;
constexpr int kMaxLongSide = 640;

// Draws from mt19937_64 by hand: std::uniform_*_distribution differ between standard
// libraries, which would make the corpus depend on the compiler, not just on --seed.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  double uniform(double lo, double hi) {  // [lo, hi)
    return lo + (hi - lo) * static_cast<double>(engine_() >> 11) * 0x1.0p-53;
  }
  int uniform_int(int lo, int hi) {  // [lo, hi]; the modulo bias is below 2^-50
    return lo + static_cast<int>(engine_() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool coin() { return (engine_() >> 63) != 0; }

 private:
  std::mt19937_64 engine_;
};

// "c07-ladybird": index first so folders sort in source order, then the stem in lowercase
// with anything but letters and digits turned into '-'.
std::string class_name(std::size_t index, const fs::path& source) {
  std::string stem = source.stem().string();
  for (char& c : stem) {
    const auto u = static_cast<unsigned char>(c);
    c = std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '-';
  }
  std::string number = std::to_string(index);
  if (number.size() < 2) number.insert(0, 2 - number.size(), '0');
  return "c" + number + "-" + stem;
}

std::vector<fs::path> usable_sources() {
  std::vector<fs::path> found;
  for (const char* path : kPhotoSources) {
    if (fs::is_regular_file(path)) found.emplace_back(path);
  }
  if (found.size() < kMinSources) {
    throw stoke::Error("jpeg-corpus needs at least " + std::to_string(kMinSources) +
                       " source photographs but found " + std::to_string(found.size()) +
                       "; install the Debian packages mate-backgrounds and opencv-doc "
                       "(apt-get install mate-backgrounds opencv-doc)");
  }
  return found;
}

// A random crop in the style of RandomResizedCrop: area and aspect are drawn, then a crop that
// does not fit is shrunk to fit the source with its aspect kept, so every output stays within
// [3/4, 4/3] like ImageNet-style training crops (at the cost of a smaller area).
cv::Rect random_crop(const cv::Size& src, Rng& rng, double min_area = kMinAreaFraction) {
  const double area = static_cast<double>(src.area()) * rng.uniform(min_area, 1.0);
  // Log-uniform, so that wide and tall crops are equally likely.
  const double aspect =
      std::exp(rng.uniform(std::log(kMinAspect), std::log(kMaxAspect)));  // width / height
  const double w = std::sqrt(area * aspect);
  const double h = std::sqrt(area / aspect);
  const double fit = std::min({1.0, src.width / w, src.height / h});
  const int cw = std::clamp(static_cast<int>(std::lround(w * fit)), 1, src.width);
  const int ch = std::clamp(static_cast<int>(std::lround(h * fit)), 1, src.height);
  const int x = rng.uniform_int(0, src.width - cw);
  const int y = rng.uniform_int(0, src.height - ch);
  return {x, y, cw, ch};
}

// Scales so the long side is `long_side`; INTER_AREA when shrinking avoids aliasing.
cv::Mat resize_long_side(const cv::Mat& src, int long_side) {
  const double scale = static_cast<double>(long_side) / std::max(src.cols, src.rows);
  const cv::Size size(std::max(1, static_cast<int>(std::lround(src.cols * scale))),
                      std::max(1, static_cast<int>(std::lround(src.rows * scale))));
  cv::Mat out;
  cv::resize(src, out, size, 0, 0, scale < 1.0 ? cv::INTER_AREA : cv::INTER_LINEAR);
  return out;
}

cv::Mat random_view(const cv::Mat& photo, Rng& rng) {
  const cv::Rect crop = random_crop(photo.size(), rng);
  cv::Mat view = resize_long_side(photo(crop), rng.uniform_int(kMinLongSide, kMaxLongSide));
  if (rng.coin()) cv::flip(view, view, 1);
  return view;
}

// Camera-sized views (--long-side): enlarged at most this much where the photograph allows it,
// so that they keep the fine detail, and so the entropy-coded bits, of a real photograph.
constexpr double kMaxEnlarge = 1.25;

int long_side_of(const cv::Mat& m) {
  return std::max(m.cols, m.rows);
}

// Whether `photo` gives views of a long side of at least `min_long` enlarged at most kMaxEnlarge.
bool big_enough(const cv::Mat& photo, int min_long) {
  return long_side_of(photo) * kMaxEnlarge >= min_long;
}

// A random crop large enough for the smallest long side asked for, then a long side drawn from
// what the crop allows within the range.
cv::Mat camera_view(const cv::Mat& photo, std::pair<int, int> long_side, Rng& rng) {
  const double need = long_side.first / kMaxEnlarge / long_side_of(photo);
  const cv::Rect crop =
      random_crop(photo.size(), rng, std::clamp(need * need, kMinAreaFraction, 1.0));
  const int crop_long = std::max(crop.width, crop.height);
  const int hi =
      std::clamp(static_cast<int>(crop_long * kMaxEnlarge), long_side.first, long_side.second);
  cv::Mat view = resize_long_side(photo(crop), rng.uniform_int(long_side.first, hi));
  if (rng.coin()) cv::flip(view, view, 1);
  return view;
}

// How one image is encoded. The standard corpus draws only the quality.
struct Encoding {
  int quality = 90;
  TJSAMP chroma = TJSAMP_420;
  bool progressive = false;
};

Encoding draw_encoding(const Args& args, Rng& rng) {
  Encoding e;
  e.quality = rng.uniform_int(args.quality.first, args.quality.second);
  if (args.chroma_422 + args.chroma_444 > 0) {
    const double u = rng.uniform(0.0, 1.0);
    e.chroma = u < args.chroma_444                     ? TJSAMP_444
               : u < args.chroma_444 + args.chroma_422 ? TJSAMP_422
                                                       : TJSAMP_420;
  }
  if (args.progressive > 0) e.progressive = rng.uniform(0.0, 1.0) < args.progressive;
  return e;
}

// 4:2:0 through OpenCV (as the standard corpus always was); other subsampling through
// TurboJPEG, which OpenCV 4.6 cannot ask for. Both are libjpeg-turbo underneath.
std::uintmax_t write_jpeg(const fs::path& path, const cv::Mat& bgr, const Encoding& e) {
  if (e.chroma == TJSAMP_420) {
    std::vector<int> params{cv::IMWRITE_JPEG_QUALITY, e.quality};
    if (e.progressive) params.insert(params.end(), {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
    return write_image(path, bgr, params);
  }
  const tjhandle tj = tjInitCompress();
  if (tj == nullptr) throw stoke::Error("TurboJPEG: cannot start a compressor");
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int flags = TJFLAG_ACCURATEDCT | (e.progressive ? TJFLAG_PROGRESSIVE : 0);
  const int rc = tjCompress2(tj, bgr.data, bgr.cols, static_cast<int>(bgr.step[0]), bgr.rows,
                             TJPF_BGR, &jpeg, &size, e.chroma, e.quality, flags);
  const std::string why = rc == 0 ? "" : tjGetErrorStr2(tj);
  tjDestroy(tj);
  if (rc != 0) {
    tjFree(jpeg);
    throw stoke::Error(path.string() + ": cannot encode: " + why);
  }
  std::FILE* f = std::fopen(path.string().c_str(), "wb");
  const bool ok = f != nullptr && std::fwrite(jpeg, 1, size, f) == size;
  if (f != nullptr && std::fclose(f) != 0) throw stoke::Error(path.string() + ": cannot write");
  tjFree(jpeg);
  if (!ok) throw stoke::Error(path.string() + ": cannot write image");
  return size;
}

cv::Mat read_photo(const fs::path& path) {
  cv::Mat photo = cv::imread(path.string(), cv::IMREAD_COLOR);
  if (photo.empty()) throw stoke::Error(path.string() + ": cannot decode the photograph");
  return photo;
}

int run_jpeg_corpus(const Args& args) {
  const fs::path out = args.out;
  const std::uint64_t count = args.count;
  Rng rng(args.seed);

  std::vector<fs::path> sources = usable_sources();
  if (args.long_side) {
    // Only photographs that make views this large without much enlarging.
    std::vector<fs::path> large;
    for (const fs::path& p : sources) {
      if (big_enough(read_photo(p), args.long_side->first)) large.push_back(p);
    }
    if (large.size() < kMinSources) {
      throw stoke::Error("--long-side " + std::to_string(args.long_side->first) + "..: only " +
                         std::to_string(large.size()) + " source photographs have a long side of " +
                         "at least " +
                         std::to_string(static_cast<int>(args.long_side->first / kMaxEnlarge)) +
                         " px; at least " + std::to_string(kMinSources) + " are needed");
    }
    std::cerr << "using the " << large.size() << " of " << sources.size()
              << " source photographs large enough for long side " << args.long_side->first << ".."
              << args.long_side->second << "\n";
    sources = std::move(large);
  }
  prepare_out_dir(out);
  std::uint64_t chroma[3] = {0, 0, 0};  // 4:2:0, 4:2:2, 4:4:4
  std::uint64_t progressive = 0;

  const std::uint64_t per_class = count / sources.size();
  const std::uint64_t extra = count % sources.size();  // the first `extra` classes get one more
  std::uint64_t next = 0;
  std::size_t classes = 0;
  std::uintmax_t bytes = 0;
  stoke::tools::CountProgress progress(static_cast<std::int64_t>(count));
  for (std::size_t c = 0; c < sources.size(); ++c) {
    const std::uint64_t n = per_class + (c < extra ? 1 : 0);
    if (n == 0) continue;  // --count below the number of sources: no empty class folders
    const fs::path dir = out / class_name(c, sources[c]);
    fs::create_directories(dir);
    ++classes;
    // One decoded photograph at a time keeps memory bounded by the largest source.
    const cv::Mat photo = read_photo(sources[c]);
    for (std::uint64_t k = 0; k < n; ++k, ++next) {
      const cv::Mat view =
          args.long_side ? camera_view(photo, *args.long_side, rng) : random_view(photo, rng);
      const Encoding e = draw_encoding(args, rng);
      bytes += write_jpeg(dir / numbered_name(next, count, "jpg"), view, e);
      ++chroma[e.chroma == TJSAMP_420 ? 0 : e.chroma == TJSAMP_422 ? 1 : 2];
      progressive += e.progressive ? 1 : 0;
      report(progress, next + 1, count);
    }
  }
  print_summary(count, classes, out, bytes);
  const auto [lo, hi] = args.long_side.value_or(std::pair{kMinLongSide, kMaxLongSide});
  std::cout << "long side " << lo << ".." << hi << ", quality " << args.quality.first << ".."
            << args.quality.second << "; chroma 4:2:0 " << chroma[0] << ", 4:2:2 " << chroma[1]
            << ", 4:4:4 " << chroma[2] << "; progressive " << progressive << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const auto code = parse_args(argc, argv, args)) return *code;
  try {
    return args.command == "fashion-mnist" ? run_fashion_mnist(args) : run_jpeg_corpus(args);
  } catch (const std::exception& e) {
    std::cerr << "stoke-mkdata: " << e.what() << "\n";
  }
  return kExitError;
}
