#include "progress.hpp"

#include <cstdio>

#include "stoke/tools/format.hpp"

namespace stoke::train {

Progress::Progress(bool enabled) : enabled_(enabled), terminal_(enabled, std::chrono::milliseconds(100)) {}

std::string Progress::render(const ProgressLine& l, bool bar) {
  char text[256];
  const std::string shown = bar ? tools::meter(l.step, l.steps, 20) + " " : "";
  std::snprintf(text, sizeof text, "epoch %lld/%lld %sstep %lld/%lld  %s img/s  stall %.1f%%  loss %.4f",
                static_cast<long long>(l.epoch + 1), static_cast<long long>(l.epochs),
                shown.c_str(), static_cast<long long>(l.step), static_cast<long long>(l.steps),
                tools::with_commas(l.images_per_s).c_str(), 100 * l.stall, l.loss);
  return text;
}

void Progress::update(const ProgressLine& l) {
  if (!enabled_) return;
  if (terminal_.active()) {
    terminal_.draw(render(l, true), l.step == l.steps);
    return;
  }
  if (tools::every_tenth(l.step, l.steps)) std::fprintf(stderr, "%s\n", render(l, false).c_str());
}

void Progress::finish_line() { terminal_.finish(); }

}  // namespace stoke::train
