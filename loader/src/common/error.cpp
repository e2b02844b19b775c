#include "stoke/error.hpp"

#include "common/text.hpp"

namespace stoke {

Error::Error(const std::string& what) : std::runtime_error(detail::printable(what)) {}
Error::Error(const char* what) : Error(std::string(what)) {}

}  // namespace stoke
