#pragma once
// Training progress on stderr. Thread-safety: training thread only.
//
// On a terminal, one line rewritten in place (at most 10 times a second); otherwise (logs, CI) a
// full line at every tenth of an epoch, so a log shows progress without a flood.

#include <cstdint>
#include <string>

#include "stoke/tools/progress.hpp"

namespace stoke::train {

struct ProgressLine {
  std::int64_t epoch = 0;  // 0-based
  std::int64_t epochs = 0;
  std::int64_t step = 0;   // within the epoch, 1-based
  std::int64_t steps = 0;  // per epoch
  double images_per_s = 0;
  double stall = 0;        // fraction of the time spent waiting for data
  double loss = 0;
};

class Progress {
 public:
  explicit Progress(bool enabled);
  void update(const ProgressLine& line);
  // Ends the in-place line before other output.
  void finish_line();

 private:
  static std::string render(const ProgressLine& line, bool bar);
  bool enabled_;
  tools::TerminalLine terminal_;
};

}  // namespace stoke::train
