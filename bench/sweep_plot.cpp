#include "sweep_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#if defined(STOKE_BENCH_PLOT)
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "stoke/tools/format.hpp"
#endif

#if defined(STOKE_BENCH_PLOT)
namespace {

constexpr int kWidth = 900, kHeight = 520;
constexpr int kLeft = 90, kRight = 80, kTop = 50, kBottom = 60;
const cv::Scalar kInk(40, 40, 40), kGrid(225, 225, 225), kWhite(255, 255, 255);
// Per prefetch depth: throughput colour (BGR); the stall line uses a lighter tone, dashed.
const cv::Scalar kColours[] = {{180, 90, 20}, {30, 120, 220}, {60, 160, 60}, {150, 60, 150}};

void text(cv::Mat& img, const std::string& s, cv::Point at, double scale = 0.5,
          const cv::Scalar& colour = kInk) {
  cv::putText(img, s, at, cv::FONT_HERSHEY_SIMPLEX, scale, colour, 1, cv::LINE_AA);
}

void dashed(cv::Mat& img, cv::Point a, cv::Point b, const cv::Scalar& c) {
  const double len = std::hypot(b.x - a.x, b.y - a.y);
  for (double t = 0; t < len; t += 10) {
    const double u = t / len, v = std::min(1.0, (t + 6) / len);
    cv::line(img, a + (b - a) * u, a + (b - a) * v, c, 2, cv::LINE_AA);
  }
}

}  // namespace
#endif

std::string write_sweep_plot(const std::string& path, const std::vector<SweepPoint>& points,
                             const std::string& title, int recommended) {
#if !defined(STOKE_BENCH_PLOT)
  (void)path;
  (void)points;
  (void)title;
  (void)recommended;
  return "this build has no image encoder (built without OpenCV imgcodecs)";
#else
  if (points.empty()) return "nothing to plot";
  cv::Mat img(kHeight, kWidth, CV_8UC3, kWhite);
  int lo = points.front().workers, hi = lo;
  double top = 0;
  for (const SweepPoint& p : points) {
    lo = std::min(lo, p.workers);
    hi = std::max(hi, p.workers);
    top = std::max(top, p.samples_per_s);
  }
  top = top > 0 ? top * 1.1 : 1;
  const int pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  const auto x_of = [&](double w) {
    return kLeft + static_cast<int>(hi == lo ? pw / 2 : (w - lo) * pw / (hi - lo));
  };
  const auto y_rate = [&](double r) { return kTop + ph - static_cast<int>(r / top * ph); };
  const auto y_stall = [&](double s) { return kTop + ph - static_cast<int>(s * ph); };
  for (int i = 0; i <= 5; ++i) {  // grid and axis labels
    const int y = kTop + ph - i * ph / 5;
    cv::line(img, {kLeft, y}, {kLeft + pw, y}, kGrid, 1);
    text(img, stoke::tools::short_number(top * i / 5), {8, y + 5});
    text(img, std::to_string(i * 20) + "%", {kLeft + pw + 10, y + 5});
  }
  for (int w = lo; w <= hi; ++w) {
    cv::line(img, {x_of(w), kTop + ph}, {x_of(w), kTop + ph + 5}, kInk, 1);
    text(img, std::to_string(w), {x_of(w) - 5, kTop + ph + 22});
  }
  cv::rectangle(img, {kLeft, kTop}, {kLeft + pw, kTop + ph}, kInk, 1);
  text(img, "workers", {kLeft + pw / 2 - 30, kHeight - 15});
  text(img, "samples/s (solid)", {8, kTop - 12});
  text(img, "consumer stall (dashed)", {kLeft + pw - 150, kTop - 12});
  text(img, title, {kLeft, 24}, 0.55);
  if (recommended > 0) {
    cv::line(img, {x_of(recommended), kTop}, {x_of(recommended), kTop + ph}, {0, 0, 200}, 1);
    const std::string label = "recommended: " + std::to_string(recommended);
    const int x = x_of(recommended);
    text(img, label, {x + 150 > kLeft + pw ? x - 150 : x + 6, kTop + 18}, 0.5, {0, 0, 200});
  }
  std::map<int, std::vector<SweepPoint> > by_prefetch;
  for (const SweepPoint& p : points) by_prefetch[p.prefetch].push_back(p);
  int series = 0;
  for (auto& [prefetch, line] : by_prefetch) {
    std::sort(line.begin(), line.end(),
              [](const SweepPoint& a, const SweepPoint& b) { return a.workers < b.workers; });
    const cv::Scalar colour = kColours[series % 4];
    for (std::size_t i = 0; i < line.size(); ++i) {
      const cv::Point r{x_of(line[i].workers), y_rate(line[i].samples_per_s)};
      const cv::Point s{x_of(line[i].workers), y_stall(line[i].stall)};
      cv::circle(img, r, 4, colour, cv::FILLED, cv::LINE_AA);
      cv::circle(img, s, 3, colour, 1, cv::LINE_AA);
      if (i > 0) {
        cv::line(img, {x_of(line[i - 1].workers), y_rate(line[i - 1].samples_per_s)}, r, colour, 2,
                 cv::LINE_AA);
        dashed(img, {x_of(line[i - 1].workers), y_stall(line[i - 1].stall)}, s, colour);
      }
    }
    if (by_prefetch.size() > 1) {
      const std::string label =
          prefetch == 0 ? "prefetch default" : "prefetch " + std::to_string(prefetch);
      text(img, label, {kLeft + 10, kTop + 20 + 18 * series}, 0.5, colour);
    }
    ++series;
  }
  try {
    if (!cv::imwrite(path, img)) return "could not write " + path;
  } catch (const cv::Exception& e) {
    return "could not write " + path + ": " + e.what();
  }
  return "";
#endif
}
