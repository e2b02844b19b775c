#include "augment/steps/timm_config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "stoke/error.hpp"

namespace stoke::detail {
namespace {

constexpr int kMaxMagnitude = 100;
constexpr int kMaxOps = 16;         // n (rand)
constexpr int kMaxChains = 16;      // w (augmix)
constexpr int kMaxDepth = 16;       // d (augmix)
constexpr double kMaxAlpha = 1000;  // a

// The shortest decimal that reads back to the float32 `v`, without an exponent (a '-' would
// split the section).
std::string number_text(float v) {
  char buf[64];
  for (int digits = 1; digits <= 40; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*f", digits, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  std::string text = buf;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

class Parser {
 public:
  explicit Parser(std::string_view config) : config_(config) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw ConfigError("timm_augment '" + std::string(config_) + "': " + why);
  }

  // int(val): an optional sign is impossible here (the value starts at a digit), so digits.
  int whole(const std::string& section, const std::string& key, const std::string& val, int lo,
            int hi) const {
    bool digits = !val.empty();
    for (const char c : val) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (!digits)
      fail("section '" + section + "': " + key +
           " takes a whole number (timm reads it with "
           "int()), got '" +
           val + "'");
    const long v = val.size() > 6 ? std::numeric_limits<long>::max() : std::stol(val);
    if (v < lo || v > hi)
      fail("section '" + section + "': " + key + " must be in " + std::to_string(lo) + ".." +
           std::to_string(hi) + ", got " + val);
    return static_cast<int>(v);
  }

  // float(val): a decimal number (inf and nan cannot start with a digit).
  double real(const std::string& section, const std::string& key, const std::string& val) const {
    char* end = nullptr;
    const double v = std::strtod(val.c_str(), &end);
    if (val.empty() || end != val.c_str() + val.size() || !std::isfinite(v))
      fail("section '" + section + "': " + key +
           " takes a number (timm reads it with float()), "
           "got '" +
           val + "'");
    return v;
  }

  TimmConfig parse() {
    std::vector<std::string> sections;
    std::string part;
    for (const char c : config_) {
      if (c == '-') {
        sections.push_back(part);
        part.clear();
      } else {
        part += c;
      }
    }
    sections.push_back(part);
    TimmConfig out;
    if (sections[0] == "rand") {
      out.kind = StepKind::kTimmRandAugment;
    } else if (sections[0] == "augmix") {
      out.kind = StepKind::kTimmAugMix;
      out.settings.magnitude = 3;
      out.settings.probability = 1.f;
      out.settings.translate_pct = 0.3f;
      out.settings.magnitude_std = std::numeric_limits<float>::infinity();
    } else {
      fail("the first section must be 'rand' (RandAugment) or 'augmix' (AugMix), got '" +
           sections[0] + "'; timm's AutoAugment policies (original, v0, ...) are not supported");
    }
    const bool rand = out.kind == StepKind::kTimmRandAugment;
    TimmAugment& t = out.settings;
    std::set<std::string> seen;
    for (std::size_t i = 1; i < sections.size(); ++i) {
      const std::string& s = sections[i];
      if (s.empty()) fail("an empty section (two '-' in a row, or one at an end)");
      if (rand && s[0] == 't')
        fail("section '" + s + "': timm's other transform sets (the 't' key) are not supported");
      const std::size_t digit = s.find_first_of("0123456789");
      if (digit == std::string::npos)
        fail("section '" + s + "' has no number (timm would ignore it)");
      const std::string key = s.substr(0, digit), val = s.substr(digit);
      if (!seen.insert(key).second) fail("section '" + s + "': " + key + " is given twice");
      if (key == "m") {
        t.magnitude = whole(s, key, val, 0, kMaxMagnitude);
      } else if (key == "mstd") {
        const double v = real(s, key, val);
        // rand_augment_transform: above 100 means uniform sampling; augment_and_mix_transform
        // takes the number as it is.
        t.magnitude_std =
            rand && v > 100 ? std::numeric_limits<float>::infinity() : static_cast<float>(v);
      } else if (rand && key == "n") {
        t.num_ops = whole(s, key, val, 0, kMaxOps);
      } else if (rand && key == "p") {
        const double v = real(s, key, val);
        if (v > 1) fail("section '" + s + "': p must be a probability in [0, 1], got " + val);
        t.probability = static_cast<float>(v);
      } else if (rand && key == "mmax") {
        t.magnitude_max = whole(s, key, val, 0, kMaxMagnitude);
      } else if (rand && key == "inc") {
        t.increasing = whole(s, key, val, 0, std::numeric_limits<int>::max()) != 0;
      } else if (!rand && key == "w") {
        t.width = whole(s, key, val, 1, kMaxChains);
      } else if (!rand && key == "d") {
        // timm: depth if depth > 0 else randint(1, 4); a negative one cannot be written.
        t.depth = whole(s, key, val, 0, kMaxDepth);
        if (t.depth == 0) t.depth = -1;
      } else if (!rand && key == "a") {
        const double v = real(s, key, val);
        if (!(v > 0 && v <= kMaxAlpha))
          fail("section '" + s + "': a must be in (0, 1000], got " + val);
        t.alpha = static_cast<float>(v);
      } else if (!rand && key == "b") {
        t.blended = whole(s, key, val, 0, std::numeric_limits<int>::max()) != 0;
      } else {
        fail("section '" + s + "': unknown key '" + key + "'; timm's " +
             (rand ? "rand takes m, n, p, mstd, mmax and inc"
                   : "augmix takes m, w, d, a, b and mstd"));
      }
    }
    return out;
  }

 private:
  std::string_view config_;
};

}  // namespace

TimmConfig parse_timm_config(std::string_view config) {
  return Parser(config).parse();
}

std::string timm_config_text(StepKind kind, const TimmAugment& t) {
  const bool uniform = std::isinf(t.magnitude_std);
  if (kind == StepKind::kTimmAugMix)
    return "augmix-m" + std::to_string(t.magnitude) + "-w" + std::to_string(t.width) + "-d" +
           std::to_string(std::max(t.depth, 0)) + "-a" + number_text(t.alpha) + "-b" +
           (t.blended ? "1" : "0") + (uniform ? "" : "-mstd" + number_text(t.magnitude_std));
  return "rand-m" + std::to_string(t.magnitude) + "-n" + std::to_string(t.num_ops) + "-p" +
         number_text(t.probability) + "-mstd" +
         (uniform ? std::string("101") : number_text(t.magnitude_std)) + "-mmax" +
         std::to_string(t.magnitude_max) + "-inc" + (t.increasing ? "1" : "0");
}

}  // namespace stoke::detail
