// Builds without CUDA: asking for a GPU replica or NCCL is a configuration error.

#include "device_ops.hpp"
#include "reducer.hpp"
#include "stoke/error.hpp"

namespace stoke::train {

std::unique_ptr<DeviceOps> make_cuda_ops(int ordinal) {
  throw ConfigError("cuda:" + std::to_string(ordinal) +
                    " requested, but this stoke was built without CUDA; use --devices cpu:G or "
                    "rebuild with -DSTOKE_CUDA=ON");
}

std::unique_ptr<Reducer> make_nccl_reducer(const MpiWorld&, const std::vector<DeviceOps*>&) {
  throw ConfigError("NCCL all-reduce requested, but this stoke was built without CUDA");
}

}  // namespace stoke::train
