#pragma once
// Exception types thrown by stoke. Thread-safety: immutable value types.
//
// Slow paths (construction, I/O, configuration) throw; hot paths return status.

#include <stdexcept>
#include <string>

namespace stoke {

// Base class of every exception stoke throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Invalid configuration, detected at construction. The message says what to change.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Bad input under OnError::kError: the message names the path, the reason and the sample index.
class DataError : public Error {
 public:
  using Error::Error;
};

}  // namespace stoke
