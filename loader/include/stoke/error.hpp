#pragma once
// Exception types thrown by stoke. Thread-safety: immutable value types.
//
// Slow paths (construction, I/O, configuration) throw; hot paths return status.

#include <stdexcept>
#include <string>

namespace stoke {

// Base class of every exception stoke throws. The message is made printable as it is built:
// control characters, terminal escapes and bytes that are not UTF-8 (from a member name, a
// path or a server's answer) appear as \xNN escapes, so no message can forge a line of output.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what);
  explicit Error(const char* what);
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
