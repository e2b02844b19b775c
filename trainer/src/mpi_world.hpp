#pragma once
// The ranks of a multi-process run. Thread-safety: call from the training thread only.
//
// A process started by mpirun (OMPI_COMM_WORLD_SIZE in the environment) initializes MPI and
// joins MPI_COMM_WORLD; any other process is a world of one and never touches MPI, so
// stoke-train runs without mpirun and without MPI's start-up cost.

#include <cstddef>
#include <cstdint>

namespace stoke::train {

class MpiWorld {
 public:
  MpiWorld();  // initializes MPI when launched by mpirun
  ~MpiWorld();  // finalizes it
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool active() const { return active_; }

  // In place: every rank ends with the element-wise sum over ranks (identical on every rank).
  void sum(float* values, std::int64_t count) const;
  void sum(double* values, std::int64_t count) const;
  // The largest value over ranks.
  int max(int value) const;
  // Copies root's bytes to every rank.
  void broadcast(void* bytes, std::size_t size, int root) const;
  // Ends every rank of a multi-rank run (MPI_Abort): a rank that stops alone would leave the
  // others waiting in their next collective forever. No-op in a world of one.
  void abort(int code) const;

  // True when the environment says mpirun started this process.
  static bool launched_by_mpirun();
  // This process's index among the ranks on its machine (OMPI_COMM_WORLD_LOCAL_RANK), or 0.
  static int local_rank();

 private:
  bool active_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace stoke::train
