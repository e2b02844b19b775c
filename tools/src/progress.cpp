#include "stoke/tools/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace stoke::tools {

TerminalLine::TerminalLine(bool enabled, std::chrono::milliseconds interval)
    : active_(enabled && ::isatty(STDERR_FILENO) == 1), interval_(interval) {}

TerminalLine::~TerminalLine() {
  finish();
}

void TerminalLine::draw(const std::string& text, bool force) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_ < interval_) return;
  last_ = now;
  // "\033[K" clears what a longer earlier line left to the right.
  std::fprintf(stderr, "\r%s\033[K", text.c_str());
  std::fflush(stderr);
  open_ = true;
}

void TerminalLine::finish() {
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

CountProgress::CountProgress(std::int64_t total, bool enabled, std::chrono::milliseconds interval)
    : total_(total), enabled_(enabled), terminal_(enabled, interval) {}

void CountProgress::update(std::int64_t done, const std::string& text) {
  if (!enabled_) return;
  if (terminal_.active()) {
    terminal_.draw(text, done == total_);
    if (done == total_) terminal_.finish();
  } else if (done != total_ && every_tenth(done, total_)) {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
}

std::string meter(std::int64_t done, std::int64_t total, int width) {
  const std::int64_t clamped = std::clamp<std::int64_t>(done, 0, std::max<std::int64_t>(total, 1));
  const int filled = static_cast<int>(width * clamped / std::max<std::int64_t>(total, 1));
  // Appended piecewise: GCC 12 warns (-Wrestrict, falsely) on operator+ chains of this shape.
  std::string out = "[";
  out.append(static_cast<std::size_t>(filled), '#');
  out.append(static_cast<std::size_t>(width - filled), '.');
  out.push_back(']');
  return out;
}

bool every_tenth(std::int64_t done, std::int64_t total) {
  const std::int64_t every = std::max<std::int64_t>(1, total / 10);
  return done % every == 0 || done == total;
}

}  // namespace stoke::tools
