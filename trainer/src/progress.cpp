#include "progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace stoke::train {

std::string with_commas(double value) {
  const long long v = std::llround(value);
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

Progress::Progress(bool enabled) : enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1) {}

std::string Progress::render(const ProgressLine& l, bool bar) {
  char text[256];
  std::string meter;
  if (bar) {
    constexpr int kWidth = 20;
    const int filled = l.steps > 0 ? static_cast<int>(kWidth * l.step / l.steps) : 0;
    meter.push_back('[');
    meter.append(static_cast<std::size_t>(filled), '#');
    meter.append(static_cast<std::size_t>(kWidth - filled), '.');
    meter.append("] ");
  }
  std::snprintf(text, sizeof text, "epoch %lld/%lld %sstep %lld/%lld  %s img/s  stall %.1f%%  loss %.4f",
                static_cast<long long>(l.epoch + 1), static_cast<long long>(l.epochs),
                meter.c_str(), static_cast<long long>(l.step), static_cast<long long>(l.steps),
                with_commas(l.images_per_s).c_str(), 100 * l.stall, l.loss);
  return text;
}

void Progress::update(const ProgressLine& l) {
  if (!enabled_) return;
  if (tty_) {
    const auto now = std::chrono::steady_clock::now();
    if (l.step != l.steps && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    std::fprintf(stderr, "\r%s\033[K", render(l, true).c_str());
    open_ = true;
    return;
  }
  const std::int64_t every = std::max<std::int64_t>(1, l.steps / 10);
  if (l.step % every == 0 || l.step == l.steps) std::fprintf(stderr, "%s\n", render(l, false).c_str());
}

void Progress::finish_line() {
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

}  // namespace stoke::train
