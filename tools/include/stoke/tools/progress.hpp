#pragma once
// Progress output on stderr, shared by the tools. Thread-safety: one thread per object.
//
// On a terminal a tool rewrites one line in place, at most every `interval`; in a log (stderr
// not a terminal) it prints whole lines at milestones of its own choosing (every_tenth helps),
// so a log shows progress without a flood of carriage returns.

#include <chrono>
#include <cstdint>
#include <string>

namespace stoke::tools {

class TerminalLine {
 public:
  // Draws only when `enabled` and stderr is a terminal.
  explicit TerminalLine(bool enabled, std::chrono::milliseconds interval);
  // Ends an open line, so an error message after an aborted run starts on a fresh one.
  ~TerminalLine();
  TerminalLine(const TerminalLine&) = delete;
  TerminalLine& operator=(const TerminalLine&) = delete;

  bool active() const { return active_; }
  // Rewrites the line with `text` unless the last redraw was under `interval` ago; `force`
  // (e.g. the last step) redraws anyway.
  void draw(const std::string& text, bool force);
  // Ends the line being rewritten (a newline), if there is one.
  void finish();

 private:
  bool active_;
  bool open_ = false;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_{};
};

// Progress through `total` items, as the tools that write datasets report it: rewritten in place
// on a terminal (the last update drawn, then the line ended), and in a log one line at every
// tenth except the last (the tool's summary follows). `enabled` false: nothing at all.
class CountProgress {
 public:
  explicit CountProgress(std::int64_t total, bool enabled = true,
                         std::chrono::milliseconds interval = std::chrono::milliseconds(100));
  // `done` (1-based) of total items, described by `text`.
  void update(std::int64_t done, const std::string& text);

 private:
  std::int64_t total_;
  bool enabled_;
  TerminalLine terminal_;
};

// "[######..............]": `width` cells, done / total of them filled.
std::string meter(std::int64_t done, std::int64_t total, int width);

// True when `done` (1-based) reaches a tenth of `total`, or the end: when a log gets a line.
bool every_tenth(std::int64_t done, std::int64_t total);

}  // namespace stoke::tools
