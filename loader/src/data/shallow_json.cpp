#include "data/shallow_json.hpp"

namespace stoke::detail {

nlohmann::json parse_shallow_json(const std::string& text, int max_depth) {
  struct TooDeep {};
  using Event = nlohmann::json::parse_event_t;
  try {
    return nlohmann::json::parse(
        text,
        [max_depth](int depth, Event event, nlohmann::json&) {
          if ((event == Event::object_start || event == Event::array_start) && depth >= max_depth)
            throw TooDeep{};
          return true;
        },
        false);
  } catch (const TooDeep&) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

}  // namespace stoke::detail
