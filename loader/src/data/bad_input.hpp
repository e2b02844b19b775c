#pragma once
// Why a sample could not be produced. Thread-safety: constants only.

#include <cstdint>

namespace stoke::detail {

enum class BadInput : std::uint32_t {
  kNone = 0,
  kMissing,        // the file does not exist
  kUnreadable,     // open/read failed for another reason (permissions, I/O error)
  kEmpty,          // zero bytes
  kUndecodable,    // not an image any decoder understands, or corrupt
  kTooLarge,       // dimensions beyond the configured pixel limit, or absurd
  kNotAFile,       // a directory or device where an image file should be
  kCorrupt,        // decodes only with warnings: truncated, missing end marker, damaged scan data
  kCrashedWorker,  // workers died on it repeatedly (OnError::kSkip skips it from then on)
  kUnsupportedFormat,  // a format this build cannot decode (built without OpenCV imgcodecs)
  kNoLabel,            // a shard's sample without the member its label comes from
  kWrongSize,  // decoded at another size than its annotation's or its image's (boxes, masks)
  kBadMask,    // a mask that is not a one-channel 8- or 16-bit label map, or whose labels do not
               // fit the mask depth
  kBadShard,   // its shard (named by a dataset-level index) could not be indexed, or holds fewer
               // samples than the index says
  kCount,
};

inline constexpr int kBadInputCount = static_cast<int>(BadInput::kCount);

// Set in a reported reason (a slot's bad byte, a Completion's reason) when it was the sample's
// mask, not its image, that was bad: the message then names the mask file.
inline constexpr std::uint32_t kInMask = 0x80;
static_assert(kBadInputCount < static_cast<int>(kInMask));
inline BadInput in_mask(BadInput reason) {
  return static_cast<BadInput>(static_cast<std::uint32_t>(reason) | kInMask);
}
inline BadInput reason_of(std::uint32_t code) { return static_cast<BadInput>(code & ~kInMask); }
inline bool mask_reason(std::uint32_t code) { return (code & kInMask) != 0; }

// Extra words for messages about `reason`, or "".
inline const char* bad_input_hint(BadInput reason) noexcept {
  if (reason == BadInput::kUnsupportedFormat)
    return " (this build has no OpenCV imgcodecs: it decodes JPEG and IDX only)";
  if (reason == BadInput::kBadShard)
    return " (its shard is missing or cannot be indexed, or holds fewer samples than the "
           "dataset-level index says)";
  return "";
}

inline const char* bad_input_name(BadInput reason) noexcept {
  switch (reason) {
    case BadInput::kNone:
      return "none";
    case BadInput::kMissing:
      return "missing";
    case BadInput::kUnreadable:
      return "unreadable";
    case BadInput::kEmpty:
      return "empty";
    case BadInput::kUndecodable:
      return "undecodable";
    case BadInput::kTooLarge:
      return "too_large";
    case BadInput::kNotAFile:
      return "not_a_file";
    case BadInput::kCorrupt:
      return "corrupt";
    case BadInput::kCrashedWorker:
      return "crashed_worker";
    case BadInput::kUnsupportedFormat:
      return "unsupported_format";
    case BadInput::kNoLabel:
      return "no_label";
    case BadInput::kWrongSize:
      return "wrong_size";
    case BadInput::kBadMask:
      return "bad_mask";
    case BadInput::kBadShard:
      return "bad_shard";
    case BadInput::kCount:
      break;
  }
  return "unknown";
}

}  // namespace stoke::detail
