// All-reduce for GPU replicas with NCCL: one communicator per GPU over every rank's GPUs; the
// unique id travels from rank 0 through MPI.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "reducer.hpp"
#include "stoke/error.hpp"

namespace stoke::train {
namespace {

void check(ncclResult_t status, const char* what) {
  if (status != ncclSuccess)
    throw Error(std::string(what) + " failed: " + ncclGetErrorString(status));
}

class NcclReducer final : public Reducer {
 public:
  NcclReducer(const MpiWorld& world, const std::vector<DeviceOps*>& replicas)
      : world_(world), replicas_(replicas), comms_(replicas.size()) {
    ncclUniqueId id{};
    if (world.rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    world.broadcast(&id, sizeof id, 0);
    const int local = static_cast<int>(replicas.size());
    // Every rank drives the same number of GPUs (stoke-train checks that ranks agree).
    check(ncclGroupStart(), "ncclGroupStart");
    ncclResult_t status = ncclSuccess;
    for (int i = 0; i < local && status == ncclSuccess; ++i) {
      if (cudaSetDevice(replicas[i]->cuda_device()) != cudaSuccess) status = ncclUnhandledCudaError;
      else status = ncclCommInitRank(&comms_[i], world.size() * local, id, world.rank() * local + i);
    }
    // The group is closed whatever happened inside it.
    const ncclResult_t ended = ncclGroupEnd();
    check(status, "ncclCommInitRank");
    check(ended, "ncclGroupEnd");
  }
  ~NcclReducer() override {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
  }

  void sum(const std::vector<float*>& buffers, std::int64_t count) override {
    reduce(buffers.data(), count, ncclFloat);
  }
  void sum(const std::vector<double*>& buffers, std::int64_t count) override {
    reduce(buffers.data(), count, ncclDouble);
  }
  void sum_over_ranks(double* values, std::int64_t count) override { world_.sum(values, count); }

 private:
  // Enqueued on each replica's stream, after the work that produced the buffers.
  template <class T>
  void reduce(T* const* buffers, std::int64_t count, ncclDataType_t type) {
    check(ncclGroupStart(), "ncclGroupStart");
    ncclResult_t status = ncclSuccess;
    for (std::size_t i = 0; i < replicas_.size() && status == ncclSuccess; ++i)
      status = ncclAllReduce(buffers[i], buffers[i], static_cast<std::size_t>(count), type, ncclSum,
                             comms_[i], replicas_[i]->stream());
    const ncclResult_t ended = ncclGroupEnd();
    check(status, "ncclAllReduce");
    check(ended, "ncclGroupEnd");
  }

  const MpiWorld& world_;
  std::vector<DeviceOps*> replicas_;
  std::vector<ncclComm_t> comms_;
};

}  // namespace

std::unique_ptr<Reducer> make_nccl_reducer(const MpiWorld& world,
                                           const std::vector<DeviceOps*>& replicas) {
  return std::make_unique<NcclReducer>(world, replicas);
}

}  // namespace stoke::train
