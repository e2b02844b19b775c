#pragma once
// The loader's position: cheap to save, exact to resume. Thread-safety: value type.

#include <cstdint>
#include <string>
#include <string_view>

namespace stoke {

struct LoaderState {
  std::uint64_t seed = 0;
  std::int64_t epoch = 0;
  std::int64_t next_batch = 0;  // index within the epoch of the next batch to deliver
  // Guard against resuming with another configuration.
  std::int64_t dataset_size = 0;
  std::int64_t global_batch = 0;

  // "stoke-state/1 seed=.. epoch=.. next_batch=.. dataset_size=.. global_batch=.."
  std::string serialize() const;
  // Throws ConfigError naming the problem when `text` is not a serialized state.
  static LoaderState parse(std::string_view text);

  bool operator==(const LoaderState&) const = default;
};

}  // namespace stoke
