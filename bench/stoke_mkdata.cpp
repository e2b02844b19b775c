// stoke-mkdata: writes the image-folder datasets that stoke's tests and benchmarks read.
//
//   stoke-mkdata fashion-mnist --out DIR [--limit N] [--split train|test] [--from DIR]
//   stoke-mkdata jpeg-corpus --out DIR [--count N] [--seed S]
//
// Both write DIR/<class>/<NNNNN>.<ext>, with class folders that sort (byte order) in class-id
// order, because a folder dataset's class id is the index of its sorted folder name.

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "stoke/error.hpp"
#include "stoke/mnist.hpp"
#include "stoke/options.hpp"

namespace {

namespace fs = std::filesystem;

constexpr int kExitError = 2;

constexpr const char* kUsage =
    "usage:\n"
    "  stoke-mkdata fashion-mnist --out DIR [--limit N] [--split train|test] [--from DIR]\n"
    "      Writes Fashion-MNIST as grayscale PNGs DIR/<label>-<name>/NNNNN.png (NNNNN = dataset\n"
    "      index). --limit: only the first N images (default all). --split: default train.\n"
    "      --from: folder of the IDX files (default /usr/share/datasets/fashion-mnist, from\n"
    "      Debian package dataset-fashion-mnist).\n"
    "  stoke-mkdata jpeg-corpus --out DIR [--count N] [--seed S]\n"
    "      Writes an ImageNet-like JPEG corpus DIR/cNN-<photo>/NNNNN.jpg: random crops of real\n"
    "      photographs from Debian packages mate-backgrounds and opencv-doc, one class per\n"
    "      photograph, long side 400..640, JPEG quality 90..95. --count: default 3000.\n"
    "      --seed: default 0; the same seed and sources give the same corpus.\n"
    "DIR must be missing or empty. Exit status: 0 on success, 2 on any error.\n";

// Thrown for command-line mistakes: main prints the usage after the message.
class UsageError : public stoke::Error {
 public:
  using stoke::Error::Error;
};

// ---------------------------------------------------------------------------------------------
// Command line.

struct Args {
  std::string command;
  std::vector<std::pair<std::string, std::string>> flags;  // in order; later ones win
  bool help = false;
};

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args.help = true;
    } else if (arg.starts_with("--")) {
      const std::size_t eq = arg.find('=');
      if (eq != std::string_view::npos) {
        args.flags.emplace_back(arg.substr(0, eq), arg.substr(eq + 1));
      } else if (i + 1 < argc) {
        args.flags.emplace_back(arg, argv[++i]);
      } else {
        throw UsageError(std::string(arg) + " needs a value");
      }
    } else if (args.command.empty()) {
      args.command = arg;
    } else {
      throw UsageError("unexpected argument '" + std::string(arg) + "'");
    }
  }
  return args;
}

// Rejects flags the command does not know, so a typo fails instead of being ignored.
void check_flags(const Args& args, std::initializer_list<std::string_view> known) {
  for (const auto& [name, value] : args.flags) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw UsageError("unknown flag " + name + " for command " + args.command);
    }
  }
}

std::optional<std::string> flag(const Args& args, std::string_view name) {
  std::optional<std::string> value;
  for (const auto& [key, val] : args.flags) {
    if (key == name) value = val;
  }
  return value;
}

std::uint64_t parse_u64(const std::string& name, const std::string& text, std::uint64_t min) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < min) {
    throw UsageError(name + " wants an integer >= " + std::to_string(min) + ", got '" + text + "'");
  }
  return value;
}

std::uint64_t u64_flag(const Args& args, std::string_view name, std::uint64_t fallback,
                       std::uint64_t min) {
  const std::optional<std::string> text = flag(args, name);
  return text ? parse_u64(std::string(name), *text, min) : fallback;
}

std::string out_flag(const Args& args) {
  std::optional<std::string> out = flag(args, "--out");
  if (!out || out->empty()) throw UsageError(args.command + " needs --out DIR");
  return *out;
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

class Progress {
 public:
  explicit Progress(std::uint64_t total) : total_(total) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // Ends the line when an error cuts the run short, so the error message starts a fresh one.
  ~Progress() {
    if (open_line_) std::cerr << '\n';
  }

  // On a terminal, redraws one line at most ~200 times per run; in a log file, writes a line at
  // every tenth of the way.
  void done(std::uint64_t n) {
    const std::uint64_t step = std::max<std::uint64_t>(1, total_ / (tty_ ? 200 : 10));
    if (n == total_ || n % step == 0) {
      if (tty_) {
        std::cerr << "\rwriting " << n << '/' << total_ << std::flush;
        open_line_ = true;
      } else if (n != total_) {
        std::cerr << "writing " << n << '/' << total_ << '\n';
      }
    }
    if (n == total_) {
      std::cerr << '\n';
      open_line_ = false;
    }
  }

 private:
  std::uint64_t total_;
  bool tty_ = ::isatty(STDERR_FILENO) != 0;
  bool open_line_ = false;
};

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

stoke::Split parse_split(const std::optional<std::string>& text) {
  if (!text || *text == "train") return stoke::Split::kTrain;
  if (*text == "test") return stoke::Split::kTest;
  throw UsageError("--split wants train or test, got '" + *text + "'");
}

int run_fashion_mnist(const Args& args) {
  check_flags(args, {"--out", "--limit", "--split", "--from"});
  const fs::path out = out_flag(args);
  const stoke::Split split = parse_split(flag(args, "--split"));
  const std::uint64_t limit = u64_flag(args, "--limit", UINT64_MAX, 1);
  const std::string from = flag(args, "--from").value_or(stoke::kDefaultFashionMnistDir);

  stoke::IdxImages data = stoke::read_idx(from, split);
  const std::uint64_t total = std::min<std::uint64_t>(limit, data.count);
  if (total == 0) throw stoke::Error(from + ": the IDX files hold no images");
  prepare_out_dir(out);

  std::vector<bool> class_used(kFashionClassCount, false);
  const std::size_t image_bytes = static_cast<std::size_t>(data.rows) * data.cols;
  std::uintmax_t bytes = 0;
  Progress progress(total);
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
    progress.done(i + 1);
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
constexpr int kMinQuality = 90;
constexpr int kMaxQuality = 95;

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
cv::Rect random_crop(const cv::Size& src, Rng& rng) {
  const double area = static_cast<double>(src.area()) * rng.uniform(kMinAreaFraction, 1.0);
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

cv::Mat read_photo(const fs::path& path) {
  cv::Mat photo = cv::imread(path.string(), cv::IMREAD_COLOR);
  if (photo.empty()) throw stoke::Error(path.string() + ": cannot decode the photograph");
  return photo;
}

int run_jpeg_corpus(const Args& args) {
  check_flags(args, {"--out", "--count", "--seed"});
  const fs::path out = out_flag(args);
  const std::uint64_t count = u64_flag(args, "--count", 3000, 1);
  Rng rng(u64_flag(args, "--seed", 0, 0));

  const std::vector<fs::path> sources = usable_sources();
  prepare_out_dir(out);

  const std::uint64_t per_class = count / sources.size();
  const std::uint64_t extra = count % sources.size();  // the first `extra` classes get one more
  std::uint64_t next = 0;
  std::size_t classes = 0;
  std::uintmax_t bytes = 0;
  Progress progress(count);
  for (std::size_t c = 0; c < sources.size(); ++c) {
    const std::uint64_t n = per_class + (c < extra ? 1 : 0);
    if (n == 0) continue;  // --count below the number of sources: no empty class folders
    const fs::path dir = out / class_name(c, sources[c]);
    fs::create_directories(dir);
    ++classes;
    // One decoded photograph at a time keeps memory bounded by the largest source.
    const cv::Mat photo = read_photo(sources[c]);
    for (std::uint64_t k = 0; k < n; ++k, ++next) {
      const cv::Mat view = random_view(photo, rng);
      const int quality = rng.uniform_int(kMinQuality, kMaxQuality);
      bytes += write_image(dir / numbered_name(next, count, "jpg"), view,
                           {cv::IMWRITE_JPEG_QUALITY, quality});
      progress.done(next + 1);
    }
  }
  print_summary(count, classes, out, bytes);
  return 0;
}

int run(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  if (args.help) {
    std::cout << kUsage;
    return 0;
  }
  if (args.command.empty()) throw UsageError("missing command");
  if (args.command == "fashion-mnist") return run_fashion_mnist(args);
  if (args.command == "jpeg-corpus") return run_jpeg_corpus(args);
  throw UsageError("unknown command '" + args.command + "'");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "stoke-mkdata: " << e.what() << "\n" << kUsage;
  } catch (const std::exception& e) {
    std::cerr << "stoke-mkdata: " << e.what() << "\n";
  }
  return kExitError;
}
