#pragma once
// JSON read from files and servers stoke does not control, bounded in depth.
//
// Thread-safety: reentrant.

#include <nlohmann/json.hpp>
#include <string>

namespace stoke::detail {

// `text` as JSON, or a discarded value when it is not JSON or nests arrays and objects deeper
// than `max_depth`: a member of nested brackets must not cost memory (nlohmann's DOM holds every
// level) or stack for what is never read. The caller bounds the text's size.
nlohmann::json parse_shallow_json(const std::string& text, int max_depth);

}  // namespace stoke::detail
