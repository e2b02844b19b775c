#include "stoke/tools/cores.hpp"

#include "tuning/cores.hpp"

namespace stoke::tools {

int available_cores() {
  return detail::available_cores();
}

}  // namespace stoke::tools
