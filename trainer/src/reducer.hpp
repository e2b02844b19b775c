#pragma once
// All-reduce over every replica of every rank. Thread-safety: training thread only.
//
// Each call sums, element-wise, one buffer per local replica (each in its own device's memory)
// and the same buffers of every other rank; afterwards every buffer holds the total, bit-identical
// on every replica and rank, so identical updates keep the replicas identical.

#include <cstdint>
#include <memory>
#include <vector>

#include "device_ops.hpp"
#include "mpi_world.hpp"

namespace stoke::train {

class Reducer {
 public:
  virtual ~Reducer() = default;
  virtual void sum(const std::vector<float*>& buffers, std::int64_t count) = 0;
  virtual void sum(const std::vector<double*>& buffers, std::int64_t count) = 0;
  // Host values already combined over this rank's replicas: summed over ranks.
  virtual void sum_over_ranks(double* values, std::int64_t count) = 0;
};

// Host devices: replica buffers added in replica order, then MPI across ranks.
std::unique_ptr<Reducer> make_host_reducer(const MpiWorld& world);
// GPU replicas (their DeviceOps, in replica order): NCCL on each replica's stream, one
// communicator per GPU; across ranks the NCCL id is handed out through MPI. Throws ConfigError in
// builds without CUDA.
std::unique_ptr<Reducer> make_nccl_reducer(const MpiWorld& world,
                                           const std::vector<DeviceOps*>& replicas);

}  // namespace stoke::train
