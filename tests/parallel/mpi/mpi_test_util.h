// Shared by the tests that run under mpirun (tests/parallel/tests.cmake): the job's long-lived
// Comm, and per-rank inputs whose sums depend on the order of the additions.
#pragma once

#include <cstddef>
#include <vector>

#include "parallel/comm.h"

namespace strata::parallel::testing_mpi {

// The MPI Comm that mpi_test_main.cc keeps for the whole run (60 s timeout). Its life is the
// life of MPI in the process: comms a test creates come and go while it exists.
Comm& World();

// Rank r's i-th input: values such as 1e8, 1, -1e8 mixed, so that ((x0 + x1) + x2) + ...
// differs from other orders in many elements once there are 3 or more ranks.
template <typename T>
T Contribution(int rank, size_t i) {
  static constexpr double kValues[] = {1e8, 1.0, -1e8, 3.25, -7.5e7, 1e-3, 2.5e7, -1.0, 0.1};
  constexpr size_t kCount = sizeof(kValues) / sizeof(kValues[0]);
  const double scale = (sizeof(T) == sizeof(double)) ? 1e9 : 1.0;  // make doubles lose bits too
  const double v = kValues[(static_cast<size_t>(rank) * 7 + i * 13 + (i * i) % 11) % kCount];
  return static_cast<T>(v == 1e8 || v == -1e8 ? v * scale : v);
}

// The inputs of every rank, rank-major: element i of rank r at r * count + i.
template <typename T>
std::vector<T> AllContributions(int ranks, size_t count) {
  std::vector<T> all(static_cast<size_t>(ranks) * count);
  for (int r = 0; r < ranks; ++r) {
    for (size_t i = 0; i < count; ++i) all[r * count + i] = Contribution<T>(r, i);
  }
  return all;
}

}  // namespace strata::parallel::testing_mpi
