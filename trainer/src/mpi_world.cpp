#include "mpi_world.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "stoke/error.hpp"

namespace stoke::train {
namespace {

void check(int status, const char* what) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw Error(std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

// Reduce to rank 0, then broadcast: MPI_Allreduce may add in a different order on each rank,
// and replicas must stay bit-identical. MPI counts are int, so large arrays go in pieces.
template <class T>
void sum_in_pieces(T* values, std::int64_t count, MPI_Datatype type, int rank) {
  constexpr std::int64_t kPiece = INT_MAX / 2;
  for (std::int64_t at = 0; at < count; at += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, count - at));
    void* send = rank == 0 ? MPI_IN_PLACE : static_cast<void*>(values + at);
    check(MPI_Reduce(send, values + at, n, type, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    check(MPI_Bcast(values + at, n, type, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }
}

}  // namespace

bool MpiWorld::launched_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

int MpiWorld::local_rank() {
  const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  return v != nullptr ? std::atoi(v) : 0;
}

MpiWorld::MpiWorld() {
  if (!launched_by_mpirun()) return;
  check(MPI_Init(nullptr, nullptr), "MPI_Init");
  active_ = true;
  // Errors come back as status codes, which check() turns into exceptions naming the call.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiWorld::~MpiWorld() {
  if (active_) MPI_Finalize();
}

void MpiWorld::sum(float* values, std::int64_t count) const {
  if (active_ && size_ > 1) sum_in_pieces(values, count, MPI_FLOAT, rank_);
}

void MpiWorld::sum(double* values, std::int64_t count) const {
  if (active_ && size_ > 1) sum_in_pieces(values, count, MPI_DOUBLE, rank_);
}

int MpiWorld::max(int value) const {
  if (!active_ || size_ == 1) return value;
  int result = value;
  check(MPI_Allreduce(&value, &result, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return result;
}

void MpiWorld::abort(int code) const {
  if (active_ && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

void MpiWorld::broadcast(void* bytes, std::size_t size, int root) const {
  if (!active_ || size_ == 1) return;
  check(MPI_Bcast(bytes, static_cast<int>(size), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
}

}  // namespace stoke::train
